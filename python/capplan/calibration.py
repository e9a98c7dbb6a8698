"""Calibration: fit capplan's models to measurements taken on your own hardware."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Optional, Union

from . import _core


def calibrate_collectives(file: Union[str, Path], system: str, op: Optional[str] = None,
                          ranks: Optional[int] = None, in_place: bool = False) -> Dict[str, Any]:
    """Fit latency and bus bandwidth (time = latency + S x busbw factor / bus bandwidth, weighted
    least squares) to an nccl-tests / rccl-tests output (text table or -J JSON), measured on the
    catalog ``system``. Returns a calibration entry with provenance; pass it (or its file) as
    ``capplan.collective(..., calibration=...)``."""
    return json.loads(_core.calibrate_collectives(str(file), system, op or "", int(ranks or 0), bool(in_place)))
