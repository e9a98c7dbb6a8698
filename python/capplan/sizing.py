"""Sizing to a latency target: the cheapest hardware and layout that serves N users."""
from __future__ import annotations

import json
from typing import Any, Dict, Iterable, Optional, Union

from . import _core
from .catalog import Model
from .units import TIME, quantity


def size_inference(model: Union[str, Model], concurrency: int, input_tokens: int, output_tokens: int,
                   ttft_p99="2 s", tpot_p99="50 ms", accelerators: Optional[Iterable[str]] = None,
                   prices: Optional[Dict[str, float]] = None) -> Dict[str, Any]:
    """For each accelerator (default: every one with a system preset), the smallest count and layout
    (tp, replicas, weight and KV formats) whose simulated p99 TTFT and TPOT meet the targets for
    ``concurrency`` users sending ``input_tokens``-token prompts for ``output_tokens``-token answers.
    Returns {"options": [...ranked, by cost per hour when ``prices`` (per accelerator-hour) are given],
    "rejected": [{"accelerator", "reason"}]}."""
    if isinstance(model, Model):
        ref, is_config = model._ref()
    else:
        ref, is_config = model, False
    ttft = quantity(ttft_p99, TIME, "/ttft_p99").si
    tpot = quantity(tpot_p99, TIME, "/tpot_p99").si
    return json.loads(_core.size_inference_json(ref, is_config, int(concurrency), int(input_tokens), int(output_tokens),
                                                ttft, tpot, list(accelerators or []), dict(prices or {})))


def search_training(scenario, top_k: int = 10, threads: int = 0) -> Dict[str, Any]:
    """The fastest training layouts (tp, pp, dp, cp, ep, vpp, micro-batch, recompute, ZeRO stage) that
    fit memory for the scenario's model, system and training workload, with their step-time
    breakdowns: {"best": [...], "enumerated", "fit", "evaluated"}. The scenario's own parallelism is
    ignored; its training.seq_len and global_batch are kept."""
    from .api import scenario_text
    text, base = scenario_text(scenario)
    return json.loads(_core.search_training_json(text, str(base), int(top_k), int(threads)))
