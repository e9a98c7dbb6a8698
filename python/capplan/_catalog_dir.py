"""Where the catalog lives: $CAPPLAN_CATALOG, the copy inside an installed wheel, or the source tree."""
from __future__ import annotations

import os
from pathlib import Path

from . import _core


def locate() -> Path:
    env = os.environ.get("CAPPLAN_CATALOG")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    for candidate in (here / "models", here.parents[1] / "models"):
        if (candidate / "llm").is_dir():
            return candidate
    raise _core.ConfigError(
        f"/: capplan's catalog folder was not found next to the package ({here / 'models'}) or in the "
        "source tree; set CAPPLAN_CATALOG to a models/ folder")


def load() -> Path:
    path = locate()
    _core.set_catalog_dir(str(path))
    return path
