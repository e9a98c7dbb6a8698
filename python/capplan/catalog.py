"""The catalog: models, accelerators, systems, links and storage tiers, by name or alias."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Union

from . import _args, _core
from .units import BYTE_RATE, FLOP_RATE, POWER, SIZE, Quantity, format_count


def list_models() -> List[str]:
    """Catalog model names (LLM architectures)."""
    return _core.catalog_names("models")


def list_accelerators() -> List[str]:
    return _core.catalog_names("accelerators")


def list_systems() -> List[str]:
    """Node presets (DGX/HGX, NVL72, MI300X platform, TPU slice, PCIe server)."""
    return _core.catalog_names("systems")


def list_storage() -> List[str]:
    return _core.catalog_names("storage")


def list_links() -> List[str]:
    return _core.catalog_names("links")


def entry(name: str) -> Dict[str, Any]:
    """The catalog entry for any name or alias, as stored (unit strings, sources)."""
    return json.loads(_core.catalog_entry_json(_args.text(name, "/name", "a catalog name")))


def catalog_version() -> str:
    return _core.catalog_version()


def _fmt(q) -> str:
    return "unknown" if q is None else str(q)


class _Record:
    """Attribute access over a dict; the dict stays available as ``to_dict()``."""

    def __init__(self, data: Dict[str, Any]):
        self._data = data

    def __getattr__(self, key):
        try:
            return self._data[key]
        except KeyError:
            raise AttributeError(key) from None

    def to_dict(self) -> Dict[str, Any]:
        return json.loads(json.dumps(self._data))

    def _html_rows(self):  # (label, value) lines of the HTML table; each record type lists its own
        return []

    def _repr_html_(self) -> str:
        import html
        rows = "".join(f"<tr><th style='text-align:left'>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                       for k, v in self._html_rows())
        source = self._data.get("source")
        cite = f"<p style='font-size:smaller'>source: {html.escape(source)}</p>" if source else ""
        return f"<div class='capplan-{type(self).__name__.lower()}'><b>{html.escape(repr(self))}</b>" \
               f"<table>{rows}</table>{cite}</div>"


class Model(_Record):
    """A model architecture with its parameter counts (exact, from the config)."""

    def __init__(self, data: Dict[str, Any], config_text: str = None):
        super().__init__(data)
        self._config_text = config_text  # None: a catalog model, looked up by name

    def _ref(self):
        return (self._config_text, True) if self._config_text else (self._data["name"], False)

    def weights_bytes(self, fmt: str = "bf16", experts: str = None) -> Quantity:
        """All weights in a number format (block matrices in ``fmt``; embeddings/norms 16-bit when quantized);
        the routed experts in ``experts``, by default the release's own format where it quantises only them
        (gpt-oss: mxfp4), else ``fmt``."""
        return Quantity.from_si(_core.model_weight_bytes(*self._ref(), fmt, experts or ""), SIZE)

    def kv_cache_bytes(self, contexts, tp: int = 1, kv_cache: str = "bf16", block_tokens: int = 1) -> Quantity:
        """KV-cache bytes on one tensor-parallel rank for requests with the given context lengths
        (an int or a list); sliding windows cap, MLA stores its latent, blocks round up."""
        contexts = [contexts] if isinstance(contexts, int) else list(contexts)
        return Quantity.from_si(_core.model_kv_cache_bytes(*self._ref(), contexts, tp, kv_cache, block_tokens), SIZE)

    @classmethod
    def from_hf_config(cls, config: Union[str, Path, Dict[str, Any]], name: str = None) -> "Model":
        """From a Hugging Face config.json: a path (file or folder holding config.json) or a dict."""
        if isinstance(config, dict):
            text = json.dumps(config)
            name = name or config.get("name") or config.get("_name_or_path") or "custom"
        else:
            path = Path(config)
            if path.is_dir():
                path = path / "config.json"
            if not path.is_file():
                raise _core.ConfigError(f"/model: config.json file not found (got '{config}')")
            text = path.read_text()
            # Named after its folder (a checkpoint's config.json), or after the file when it is named for the model.
            name = name or (path.resolve().parent.name if path.name == "config.json" else path.stem)
        return cls(json.loads(_core.model_from_hf_config_json(text, str(name))), config_text=text)

    def __repr__(self) -> str:
        d = self._data
        moe = d.get("moe")
        active = f", {format_count(d['active_parameters'])} active" if moe else ""
        return (f"Model({d['name']}: {d['model_type']}, {format_count(d['parameters'])} parameters{active}, "
                f"{d['num_hidden_layers']} layers, hidden {d['hidden_size']}, {d['attention']} "
                f"{d['num_attention_heads']}/{d['num_key_value_heads']} heads)")

    def _html_rows(self):
        d = self._data
        rows = [("parameters", format_count(d["parameters"])), ("active per token", format_count(d["active_parameters"])),
                ("layers", d["num_hidden_layers"]), ("hidden size", d["hidden_size"]),
                ("attention", f"{d['attention']}: {d['num_attention_heads']} heads, {d['num_key_value_heads']} KV heads "
                              f"of {d['head_dim']}"),
                ("MLP width", d["intermediate_size"]), ("vocabulary", d["vocab_size"]),
                ("context", d["max_position_embeddings"]),
                ("weights (bf16)", self.weights_bytes("bf16")), ("KV cache per token (bf16)", self.kv_cache_bytes(1))]
        return rows


def model(name: str) -> Model:
    return Model(json.loads(_core.model_json(_args.text(name, "/model", "a catalog model name"))))


class Accelerator(_Record):
    """One accelerator: memory, bandwidth, dense peaks per number format, links, TDP."""

    @property
    def memory(self):
        v = self._data["memory_bytes"]
        return None if v is None else Quantity.from_si(v, SIZE)

    @property
    def memory_bandwidth(self):
        v = self._data["memory_bandwidth_bytes_per_s"]
        return None if v is None else Quantity.from_si(v, BYTE_RATE)

    @property
    def tdp(self):
        v = self._data["tdp_w"]
        return None if v is None else Quantity.from_si(v, POWER)

    def peak(self, fmt: str = "bf16"):
        """Dense peak for a format key (bf16, fp8, fp4, int8, ...): a Quantity, None if unknown,
        or the string 'unsupported'."""
        peaks = self._data["peak_dense_flops_per_s"]
        v = peaks.get(fmt)
        if isinstance(v, (int, float)):
            return Quantity.from_si(v, FLOP_RATE)
        return v

    def __repr__(self) -> str:
        return (f"Accelerator({self.name}: {_fmt(self.memory)}, {_fmt(self.memory_bandwidth)}, "
                f"BF16 {_fmt(self.peak('bf16'))} dense, FP8 {_fmt(self.peak('fp8'))})")

    def _html_rows(self):
        rows = [("memory", _fmt(self.memory)), ("memory bandwidth", _fmt(self.memory_bandwidth)), ("TDP", _fmt(self.tdp))]
        bw = self._data["memory_bandwidth_bytes_per_s"]
        for fmt, v in self._data["peak_dense_flops_per_s"].items():
            if isinstance(v, (int, float)):
                ridge = f"; ridge {v / bw:.0f} FLOP/byte" if bw else ""  # roofline: compute-bound above this
                rows.append((f"{fmt} dense peak", f"{Quantity.from_si(v, FLOP_RATE)}{ridge}"))
            else:
                rows.append((f"{fmt} dense peak", v if v is not None else "unknown"))
        rows += [("scale-up link", self._data.get("scale_up_link") or "none"), ("host link", self._data.get("host_link"))]
        return rows


def accelerator(name: str) -> Accelerator:
    return Accelerator(json.loads(_core.accelerator_json(_args.text(name, "/accelerator", "a catalog accelerator name"))))


class System(_Record):
    """A node preset resolved: accelerator, count, scale-up and scale-out links, storage."""

    @property
    def accelerator(self) -> Accelerator:
        return Accelerator(self._data["accelerator"])

    def __repr__(self) -> str:
        d = self._data
        up = d["scale_up"]["name"] if d.get("scale_up") else "none"
        out = d["scale_out"]["link"]["name"] if d.get("scale_out") else "none"
        return (f"System({d['preset']}: {d['count']}x {d['accelerator']['name']} in {d['nodes']} node(s) of "
                f"{d['per_node']}, scale-up {up} ({d['scale_up_topology']}), scale-out {out})")

    def _html_rows(self):
        d = self._data
        up = d.get("scale_up")
        out = d.get("scale_out")
        return [("accelerator", d["accelerator"]["name"]), ("count", f"{d['count']} in {d['nodes']} node(s) of {d['per_node']}"),
                ("scale-up", f"{up['name']} ({d['scale_up_topology']}, domain {d['scale_up_domain']})" if up else "none"),
                ("scale-out", out["link"]["name"] if out else "none"),
                ("storage", (d.get("storage") or {}).get("name", "none") if isinstance(d.get("storage"), dict)
                 else d.get("storage") or "none")]


def system(name: str) -> System:
    return System(json.loads(_core.system_json(_args.text(name, "/system", "a catalog system name"))))
