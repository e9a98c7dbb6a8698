"""capplan's exceptions. Every message names the field (a JSON pointer such as /system/accelerator),
the bad value and what is allowed; the exception also carries them as attributes
(``field``, ``value``, ``problem``, ``allowed``, and ``suggestions`` for unknown names).

- ``Error``: base of all.
- ``ConfigError(Error, ValueError)``: bad input.
- ``UnitError(ConfigError)``: a quantity string that does not parse or has the wrong dimension.
- ``JsonError(ConfigError)``: malformed JSON.
- ``UnknownNameError(ConfigError, KeyError)``: a catalog name that does not exist.
- ``DeviceError(Error, RuntimeError)``: the hardware a request needs is missing or cannot do it
  (no GPU or driver, the CUDA backend not built, a format the device does not support).
"""
from ._core import ConfigError, DeviceError, Error, JsonError, UnitError, UnknownNameError

__all__ = ["Error", "ConfigError", "UnitError", "JsonError", "UnknownNameError", "DeviceError"]
