"""capplan's exceptions. Every message names the field (a JSON pointer such as /system/accelerator),
the bad value and what is allowed; the exception also carries them as attributes
(``field``, ``value``, ``problem``, ``allowed``, and ``suggestions`` for unknown names).

- ``Error``: base of all.
- ``ConfigError(Error, ValueError)``: bad input.
- ``UnitError(ConfigError)``: a quantity string that does not parse or has the wrong dimension.
- ``JsonError(ConfigError)``: malformed JSON.
- ``UnknownNameError(ConfigError, KeyError)``: a catalog name that does not exist.
"""
from ._core import ConfigError, Error, JsonError, UnitError, UnknownNameError

__all__ = ["Error", "ConfigError", "UnitError", "JsonError", "UnknownNameError"]
