"""capplan: plan AI compute capacity before buying or renting it.

>>> import capplan
>>> r = capplan.estimate(capplan.default_scenario())
>>> r.model.parameters
70553706496
"""
from . import _core
from ._catalog_dir import load as _load_catalog
from .api import Scenario, default_scenario, estimate
from .collectives import CollectiveResult, collective, collective_sweep
from .batch import sweep, sweep_inference
from .costing import BomResult, CostResult, bom, cost
from .sizing import search_training, size_inference, training_limits
from .catalog import (Accelerator, Model, System, accelerator, catalog_version, entry, list_accelerators,
                      list_links, list_models, list_storage, list_systems, model, system)
from .explorer import explorer
from ._progress import StoppedWarning
from .errors import ConfigError, DeviceError, Error, JsonError, UnitError, UnknownNameError
from .result import Result
from .units import Quantity, quantity

__version__ = _core.__version__
CATALOG_DIR = _load_catalog()


def devices() -> dict:
    """GPUs this process can see (CUDA builds), with the reason when there are none."""
    return _core.query_devices()


__all__ = [
    "estimate", "Scenario", "default_scenario", "Result", "Quantity", "quantity",
    "collective", "collective_sweep", "CollectiveResult", "size_inference", "search_training", "training_limits", "sweep", "sweep_inference", "cost", "CostResult", "bom", "BomResult",
    "model", "accelerator", "system", "entry", "Model", "Accelerator", "System",
    "list_models", "list_accelerators", "list_systems", "list_storage", "list_links", "catalog_version",
    "explorer", "Error", "ConfigError", "UnitError", "JsonError", "UnknownNameError", "DeviceError", "StoppedWarning", "devices", "CATALOG_DIR",
]
