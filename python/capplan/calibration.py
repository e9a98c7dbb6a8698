"""Calibration: fit capplan's models to measurements taken on your own hardware."""
from __future__ import annotations

import json
from pathlib import Path
from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _args, _core
from ._progress import run_watched, warn_stopped

_TOKENS = 1 << 24  # probe sizes: the scenario reader's token limit


def calibrate_collectives(file: Union[str, Path], system: str, op: Optional[str] = None,
                          ranks: Optional[int] = None, in_place: bool = False) -> Dict[str, Any]:
    """Fit latency and bus bandwidth (time = latency + S x busbw factor / bus bandwidth, weighted
    least squares) to an nccl-tests / rccl-tests output (text table or -J JSON), measured on the
    catalog ``system``. Returns a calibration entry with provenance; pass it (or its file) as
    ``capplan.collective(..., calibration=...)``."""
    file = _args.path_or_dict(file, "/file", "an nccl-tests output file")
    if isinstance(file, Mapping):
        raise _args.config_error("/file", file, "a dict is not a file", "an nccl-tests output file")
    return json.loads(_core.calibrate_collectives(
        str(file), _args.text(system, "/system", "a catalog system name"),
        _args.optional_text(op, "/op", "all_reduce, all_gather, reduce_scatter, all_to_all..."),
        _args.optional_integer(ranks, "/ranks", 1, _args.MAX_COUNT) or 0, _args.boolean(in_place, "/in_place")))


def model_gemm_shapes(model, tokens=(1, 16, 128), tp: int = 1) -> List[Tuple[int, int, int]]:
    """The (m, n, k) GEMMs a model's transformer layer runs on one tensor-parallel rank, for each
    token count m: QKV projection (hidden -> (heads + 2 kv_heads) x head_dim / tp), attention output
    (heads x head_dim / tp -> hidden), MLP up (+gate) and down. Derived from the model, not a fixed grid."""
    from .catalog import Model, model as lookup
    d = (model if isinstance(model, Model) else lookup(model))._data
    tp = _args.integer(tp, "/tp", 1, _args.MAX_COUNT)
    tokens = _token_list(tokens, "/tokens")
    h, hd = d["hidden_size"], d["head_dim"]
    q, kv = d["num_attention_heads"] * hd // tp, 2 * d["num_key_value_heads"] * hd // tp
    inter = d["intermediate_size"] // tp
    up = (2 if d["gated_mlp"] else 1) * inter
    shapes = []
    for m in tokens:
        shapes += [(m, q + kv, h), (m, h, q), (m, up, h), (m, h, inter)]
    return list(dict.fromkeys(shapes))


def measure_cpu(model=None, shapes: Optional[Sequence[Tuple[int, int, int]]] = None, formats=("fp32",),
                array="256 MiB", max_time="2 s", tokens=(1, 16, 128), threads: Optional[int] = None,
                progress: bool = True) -> Dict[str, Any]:
    """Measure this CPU (issue 8.2): GEMMs through Eigen for ``shapes`` (or those of ``model``'s
    layer at ``tokens``; default a 256..2048 square sweep) in each format, and STREAM copy/triad on
    arrays of ``array`` each (0 to skip), each probe on ``threads`` threads (1..1024; default or 0: every
    hardware thread). Returns {"provenance", "measurements"} with SI numbers; the provenance names
    the instruction set the probes ran (``isa``) and the CPU's peak for it (``cpu_peak``). ``progress`` shows a bar by
    probe (tqdm) on a terminal; Ctrl-C stops and returns the probes measured so far, ``stopped`` True, with a warning."""
    from .units import SIZE, TIME, quantity
    if shapes is None:
        shapes = model_gemm_shapes(model, tokens) if model is not None else [(n, n, n) for n in (256, 512, 1024, 2048)]
    array_bytes = quantity(array, SIZE, "/array").si if array else 0.0
    budget = quantity(max_time, TIME, "/max_time").si
    probes = (_shapes(shapes), _formats(formats), array_bytes, budget, _threads(threads))
    text, _ = run_watched(lambda watch: _core.measure_cpu_json(*probes, watch=watch), "probe", "measuring",
                          _args.boolean(progress, "/progress"))
    result = json.loads(text)
    asked = len(probes[0]) * len(probes[1]) + (2 if array_bytes > 0 else 0)
    result["stopped"] = stopped = len(result["measurements"]) < asked
    if stopped:
        warn_stopped("capplan.calibration.measure_cpu", f"{len(result['measurements'])} probes measured; they are returned")
    return result


def _token_list(values, field: str) -> List[int]:
    return [_args.integer(t, f"{field}/{i}", 1, _TOKENS)
            for i, t in enumerate(_args.items(values, field, "a list of token counts"))]


def _shapes(shapes) -> List[Tuple[int, int, int]]:
    """GEMM shapes checked: each an (m, n, k) of positive integers."""
    out = []
    for i, shape in enumerate(_args.items(shapes, "/shapes", "a list of (m, n, k) GEMM shapes")):
        dims = _args.items(shape, f"/shapes/{i}", "an (m, n, k) triple")
        if len(dims) != 3:
            raise _args.config_error(f"/shapes/{i}", shape, f"{len(dims)} numbers, not 3", "an (m, n, k) triple")
        out.append(tuple(_args.integer(x, f"/shapes/{i}/{j}", 1, _TOKENS) for j, x in enumerate(dims)))
    return out


def _formats(formats) -> List[str]:
    return [_args.text(f, f"/formats/{i}", "a number format name")
            for i, f in enumerate(_args.items(formats, "/formats", "a list of number formats, e.g. ['fp32']"))]


def _threads(threads) -> int:
    return _args.optional_integer(threads, "/threads", 0, 1024) or 0


def _model_ref(model) -> Tuple[str, bool]:
    """A catalog name as it is, a Model (from a config) as its reference; anything else a ConfigError."""
    from .catalog import Model
    if isinstance(model, Model):
        return model._ref()
    return _args.text(model, "/model", "a catalog model name or a capplan.Model"), False


def cpu_peak_line(run: Dict[str, Any]) -> str:
    """The best fp32 GEMM of a CPU calibration or measurement beside the CPU's peak in its provenance:
    "measured fp32 GEMM X GFLOP/s on N threads = Y% of the CPU's peak Z GFLOP/s (ISA, C cores x
    F GHz x P FLOP/cycle)"; "" where either is missing (a GPU run, a CPU whose clock is unreadable)."""
    prov = run.get("provenance", {})
    peak = prov.get("cpu_peak")
    rates = [m["achieved_flops_per_s"] for m in run.get("measurements", [])
             if m.get("kind") == "gemm" and m.get("format") == "fp32"]
    if not peak or not rates:
        return ""
    from .units import FLOP_RATE, FREQUENCY, Quantity
    best, top = max(rates), peak["fp32_flops_per_s"]
    plural = lambda n, word: f"{n} {word}" + ("" if n == 1 else "s")  # noqa: E731
    rate = lambda si: Quantity.from_si(si, FLOP_RATE).to("GFLOP/s")  # noqa: E731
    clock = Quantity.from_si(peak["clock_hz"], FREQUENCY).to("GHz")
    line = (f"measured fp32 GEMM {rate(best):.1f} on {plural(prov['threads'], 'thread')} = "
            f"{100 * best / top:.0f}% of the CPU's peak {rate(top):.1f} ({prov['isa']}, "
            f"{plural(peak['cores'], 'core')} x {clock:.2f} x {peak['flops_per_cycle']['fp32']} FLOP/cycle)")
    # Above 100%: the cores ran faster than the clock read (a VM's cpu MHz is often the base clock).
    return line + (f"; above the peak: the cores ran faster than the clock from {peak['clock_source']}" if best > top else "")


def _name(model) -> str:
    """The name a model given by config carries into the calibration (catalog names pass as they are)."""
    from .catalog import Model
    return model._data.get("name", "custom") if isinstance(model, Model) else str(model)


class CalibrationResult(dict):
    """A calibration file as a dict (``curves``, ``peaks``, ``report``, ``provenance``, raw
    ``measurements``...) that shows its layer check: a table of each operator measured and predicted
    before and after calibration, and in Jupyter a chart of the same; for a CPU, its best fp32 GEMM
    as a share of the CPU's peak (cpu_peak_line)."""

    _HEAD = ("operator", "measured", "before", "error", "after", "error")

    def _rows(self):
        ms = lambda s: f"{1e3 * s:.3f} ms"  # noqa: E731
        return [(o["op"], ms(o["measured_s"]), ms(o["predicted_before_s"]), f"{100 * o['error_before']:+.1f}%",
                 ms(o["predicted_after_s"]), f"{100 * o['error_after']:+.1f}%") for o in self.get("report", {}).get("ops", [])]

    def _title(self) -> str:
        rep = self.get("report", {})
        return (f"{self['name']}: one layer of {rep.get('model')} at a {rep.get('layer_tokens')}-token prompt, "
                "predicted (before / after calibration) vs measured")

    def __repr__(self) -> str:
        from .sizing import _text_table
        peak = cpu_peak_line(self)
        return f"capplan calibration {self._title()}\n" + (peak + "\n" if peak else "") + _text_table(self._HEAD, self._rows())

    def charts_svg(self):
        from .charts import bar_chart
        items = []
        for o in self.get("report", {}).get("ops", []):
            for label, key in (("measured", "measured_s"), ("before", "predicted_before_s"), ("after", "predicted_after_s")):
                items.append((f"{o['op']}: {label}", o[key], f"{1e3 * o[key]:.3f} ms"))
        return [bar_chart("operator times: measured, predicted before and after calibration", items)] if items else []

    def _repr_html_(self) -> str:
        import html
        from .sizing import _table_html
        charts = "".join(f"<div>{svg}</div>" for svg in self.charts_svg())
        peak = cpu_peak_line(self)
        return (f"<div class='capplan-calibration'><p>{html.escape(self._title())}</p>"
                + (f"<p>{html.escape(peak)}</p>" if peak else "") +
                f"{_table_html(self._HEAD, self._rows())}{charts}</div>")


def calibrate_cpu(model, layer_tokens: int = 128, gemm_tokens=(1, 16, 128), formats=("fp32",), rounds: int = 3,
                  max_time="0.5 s", triad_arrays: Optional[Sequence[str]] = None, command: str = "",
                  output: Optional[Union[str, Path]] = None, threads: Optional[int] = None,
                  progress: bool = True) -> CalibrationResult:
    """Calibrate this CPU for ``model`` (issue 8.4/8.5): measure the GEMMs of its layer at
    ``gemm_tokens`` (and ``layer_tokens``), its attention core and STREAM triad over array sizes, in
    ``rounds`` interleaved passes; fit efficiency-by-size curves; run one layer for real at a prompt
    of ``layer_tokens`` and compare each operator with the prediction before and after calibration.
    Every probe and the layer run on ``threads`` threads (1..1024; default or 0: every hardware thread).

    Returns the calibration file as a dict (``curves``, ``peaks``, ``host_accelerator``, ``report``,
    ``provenance``, raw ``measurements``); written to ``output`` when given. Use it with
    ``capplan.estimate(scenario, calibration=...)`` on ``host_accelerator``.

    ``progress`` shows a bar by probe (tqdm) on a terminal. Ctrl-C stops the calibration: the rounds finished are
    fitted (its ``source`` ends "stopped after N of M rounds", with a warning), or, before the first round finished,
    KeyboardInterrupt."""
    from .units import SIZE, TIME, quantity
    ref, is_config = _model_ref(model)
    arrays = [quantity(a, SIZE, f"/triad_arrays/{i}").si
              for i, a in enumerate(_args.items(triad_arrays or [], "/triad_arrays", "a list of sizes, e.g. ['64 MiB']"))]
    arguments = (ref, is_config, _name(model), _args.integer(layer_tokens, "/layer_tokens", 1, _TOKENS),
                 _token_list(gemm_tokens, "/gemm_tokens"), _formats(formats),
                 arrays, _args.integer(rounds, "/rounds", 1, 100), quantity(max_time, TIME, "/max_time").si,
                 _args.optional_text(command, "/command") or
                 f"capplan.calibration.calibrate_cpu({ref if not is_config else 'config'!r})",
                 _threads(threads))
    text, _ = run_watched(lambda watch: _core.calibrate_cpu_json(*arguments, watch=watch), "probe", "calibration",
                          _args.boolean(progress, "/progress"))
    stopped = json.loads(text)["source"].partition("; stopped after ")[2]  # the core's: rounds finished of those asked
    if stopped:
        warn_stopped("capplan.calibration.calibrate_cpu", f"fitted from {stopped} finished")
    if output is not None:
        Path(output).write_text(text + "\n")
    return CalibrationResult(json.loads(text))


def host_scenario(calibration: Union[str, Path, Dict[str, Any]], model, input_tokens: int = 128,
                  output_tokens: int = 16) -> Dict[str, Any]:
    """A scenario that runs ``model`` on the CPU a calibration measured (its ``host_accelerator``),
    in fp32, with the calibration applied: ``capplan.estimate(host_scenario(cal, model))``."""
    cal = _calibration_file(calibration)
    return {"model": model, "system": {"accelerator": cal["host_accelerator"], "count": 1},
            "precision": {"weights": "fp32", "activations": "fp32", "kv_cache": "fp32", "compute": "fp32"},
            "inference": {"input_tokens": _args.integer(input_tokens, "/input_tokens", 1, _TOKENS),
                          "output_tokens": _args.integer(output_tokens, "/output_tokens", 1, _TOKENS), "batch": 1},
            "calibration": cal if isinstance(calibration, Mapping) else str(Path(calibration).resolve())}


def calibrate_cuda(model, accelerator: Optional[str] = None, layer_tokens: int = 2048,
                   gemm_tokens=(1, 16, 128, 512, 2048), formats: Sequence[str] = (), max_time="0.5 s", device: int = 0,
                   command: str = "", output: Optional[Union[str, Path]] = None) -> CalibrationResult:
    """Calibrate a CUDA GPU for ``model`` (issue 8.3/8.4): cuBLASLt GEMMs of its layer at
    ``gemm_tokens`` in each format (default: all the device runs), device copies with the L2 flushed,
    host copies pinned and pageable, decode attention, kernel launch latency; curves fitted as
    fractions of the catalog ``accelerator``'s peaks (default: the catalog entry named like the
    device). Returns the calibration file as a dict, written to ``output`` when given. Raises
    DeviceError where there is no GPU or the CUDA backend was not built, and where the fit fails
    (the raw measurements are then in ``output`` + ".measurements.json")."""
    from .units import TIME, quantity
    ref, is_config = _model_ref(model)
    device = _args.integer(device, "/device", 0, 1023)
    if not _core.cuda_backend_built():
        raise _core.DeviceError("the CUDA calibration backend was not built (nvcc was not found when capplan was "
                                "compiled); allowed: backend cpu, or rebuild with the CUDA Toolkit on PATH")
    if accelerator is None:
        accelerator = _catalog_accelerator_for_device(device)
    text = _core.calibrate_cuda_json(ref, is_config, _name(model), _args.text(accelerator, "/accelerator", "a catalog accelerator name"),
                                     _args.integer(layer_tokens, "/layer_tokens", 1, _TOKENS), _token_list(gemm_tokens, "/gemm_tokens"),
                                     _formats(formats), quantity(max_time, TIME, "/max_time").si, device,
                                     _args.optional_text(command, "/command") or
                                     f"capplan.calibration.calibrate_cuda({ref if not is_config else 'config'!r})",
                                     "" if output is None else str(output) + ".measurements.json")
    if output is not None:
        Path(output).write_text(text + "\n")
    return CalibrationResult(json.loads(text))


def _calibration_file(calibration) -> Dict[str, Any]:
    """A calibration given as its dict or its file, read and checked for the key a host scenario needs."""
    calibration = _args.path_or_dict(calibration, "/calibration", "a file from capplan calibrate, or its dict")
    if isinstance(calibration, Mapping):
        cal = dict(calibration)
    else:
        try:
            cal = json.loads(Path(calibration).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise _args.config_error("/calibration", str(calibration), f"not a readable calibration file ({e.__class__.__name__})",
                                     "a file from capplan calibrate") from None
    if not isinstance(cal, Mapping) or not isinstance(cal.get("host_accelerator"), (str, Mapping)):
        raise _args.config_error("/calibration/host_accelerator", calibration, "missing",
                                 "a CPU calibration (capplan calibrate --backend cpu), which names its host_accelerator")
    return dict(cal)


def _catalog_accelerator_for_device(device: int) -> str:
    """The catalog accelerator whose name or alias matches the GPU's name ("NVIDIA H200" -> H200)."""
    from . import devices
    from .catalog import accelerator as lookup
    found = devices()
    gpus = found.get("devices", []) if isinstance(found, dict) else found
    if not gpus or device >= len(gpus):
        reason = found.get("reason", "") if isinstance(found, dict) else ""
        raise _core.DeviceError(f"no usable CUDA device {device}" + (f": {reason}" if reason else ""))
    name = gpus[device]["name"]
    words = name.replace("NVIDIA", "").split()
    for candidate in [name, " ".join(words), *(" ".join(words[:i]) for i in range(len(words), 0, -1)),
                      "-".join(words)]:
        try:
            return lookup(candidate).name
        except Exception:
            continue
    raise _core.ConfigError(f"/accelerator: no catalog accelerator matches the device '{name}'; "
                            "allowed: a name from `capplan list accelerators` (give accelerator=...)")
