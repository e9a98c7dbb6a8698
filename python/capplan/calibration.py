"""Calibration: fit capplan's models to measurements taken on your own hardware."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _core


def calibrate_collectives(file: Union[str, Path], system: str, op: Optional[str] = None,
                          ranks: Optional[int] = None, in_place: bool = False) -> Dict[str, Any]:
    """Fit latency and bus bandwidth (time = latency + S x busbw factor / bus bandwidth, weighted
    least squares) to an nccl-tests / rccl-tests output (text table or -J JSON), measured on the
    catalog ``system``. Returns a calibration entry with provenance; pass it (or its file) as
    ``capplan.collective(..., calibration=...)``."""
    return json.loads(_core.calibrate_collectives(str(file), system, op or "", int(ranks or 0), bool(in_place)))


def model_gemm_shapes(model, tokens=(1, 16, 128), tp: int = 1) -> List[Tuple[int, int, int]]:
    """The (m, n, k) GEMMs a model's transformer layer runs on one tensor-parallel rank, for each
    token count m: QKV projection (hidden -> (heads + 2 kv_heads) x head_dim / tp), attention output
    (heads x head_dim / tp -> hidden), MLP up (+gate) and down. Derived from the model, not a fixed grid."""
    from .catalog import Model, model as lookup
    d = (model if isinstance(model, Model) else lookup(model))._data
    h, hd = d["hidden_size"], d["head_dim"]
    q, kv = d["num_attention_heads"] * hd // tp, 2 * d["num_key_value_heads"] * hd // tp
    inter = d["intermediate_size"] // tp
    up = (2 if d["gated_mlp"] else 1) * inter
    shapes = []
    for m in tokens:
        shapes += [(m, q + kv, h), (m, h, q), (m, up, h), (m, h, inter)]
    return list(dict.fromkeys(shapes))


def measure_cpu(model=None, shapes: Optional[Sequence[Tuple[int, int, int]]] = None, formats=("fp32",),
                array="256 MiB", max_time="2 s", tokens=(1, 16, 128)) -> Dict[str, Any]:
    """Measure this CPU (issue 8.2): GEMMs through Eigen for ``shapes`` (or those of ``model``'s
    layer at ``tokens``; default a 256..2048 square sweep) in each format, and STREAM copy/triad on
    arrays of ``array`` each (0 to skip). Returns {"provenance", "measurements"} with SI numbers."""
    from .units import SIZE, TIME, quantity
    if shapes is None:
        shapes = model_gemm_shapes(model, tokens) if model is not None else [(n, n, n) for n in (256, 512, 1024, 2048)]
    array_bytes = quantity(array, SIZE, "/array").si if array else 0.0
    budget = quantity(max_time, TIME, "/max_time").si
    return json.loads(_core.measure_cpu_json([tuple(int(x) for x in s) for s in shapes], list(formats),
                                             array_bytes, budget))
