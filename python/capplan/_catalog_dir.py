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
    return here / "models"  # missing: the first lookup reports it as a ConfigError


def load() -> Path:
    """Points the core at the catalog; the files are read on first use, so a broken catalog is
    reported by the call that needs it (the CLI turns that into one line and exit code 2)."""
    path = locate()
    _core.set_catalog_dir(str(path))
    return path
