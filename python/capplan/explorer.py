"""An interactive estimate for Jupyter: model, accelerator, count, tp, context and concurrency as
controls; the estimate's table and charts update as they change. Needs ipywidgets
(``pip install "capplan[notebook]"``); the rest of capplan does not."""
from __future__ import annotations

from typing import Any, Dict, Optional

from .api import estimate
from .catalog import accelerator as find_accelerator, list_accelerators, list_models, model as find_model
from .errors import ConfigError, Error

TP_CHOICES = (1, 2, 4, 8, 16, 32, 64)
WEIGHT_FORMATS = ("bf16", "fp8", "int8", "int4")
# The controls' ranges: a starting value outside them is an error, not silently clamped.
RANGES = {"count": (1, 100_000), "context": (128, 131_072), "concurrency": (1, 512)}


def _check_start(count: int, tp: int, context: int, concurrency: int, weights: str) -> None:
    for field, value in (("count", count), ("context", context), ("concurrency", concurrency)):
        lo, hi = RANGES[field]
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ConfigError(f"/{field}: {value!r} is outside the explorer's control; allowed: an integer in [{lo}, {hi}]")
    if tp not in TP_CHOICES:
        raise ConfigError(f"/tp: {tp!r} is not one of the explorer's choices; allowed: {', '.join(map(str, TP_CHOICES))}")
    if weights not in WEIGHT_FORMATS:
        raise ConfigError(f"/weights: {weights!r} is not one of the explorer's formats; allowed: {', '.join(WEIGHT_FORMATS)}")


def scenario_of(model: str, accelerator: str, count: int, tp: int, context: int, concurrency: int,
                output_tokens: int, weights: str) -> Dict[str, Any]:
    """The scenario the controls describe: `context` prompt tokens and `output_tokens` answer tokens
    per request, `concurrency` users at once, tensor parallelism `tp` over `count` accelerators."""
    return {"model": model, "system": {"accelerator": accelerator, "count": count},
            "precision": {"weights": weights}, "parallelism": {"tp": tp},
            "inference": {"input_tokens": context, "output_tokens": output_tokens, "concurrency": concurrency}}


class Explorer:
    """The controls and the live estimate. In Jupyter it shows as the widgets; where no widget
    can be drawn (a notebook run headless, GitHub's viewer) it shows the current estimate's table
    and charts as static HTML. ``.result`` is the current estimate (None after bad input)."""

    def __init__(self, model: str, accelerator: str, count: int, tp: int, context: int, concurrency: int,
                 output_tokens: int, weights: str):
        import ipywidgets as w
        _check_start(count, tp, context, concurrency, weights)
        self.output_tokens = output_tokens
        # The dropdowns list catalog names; an alias (H100, llama-3.1-70b) selects its entry.
        model, accelerator = find_model(model).name, find_accelerator(accelerator).name
        self.controls = {
            "model": w.Dropdown(options=list_models(), value=model, description="model"),
            "accelerator": w.Dropdown(options=list_accelerators(), value=accelerator, description="accelerator"),
            "weights": w.Dropdown(options=WEIGHT_FORMATS, value=weights, description="weights"),
            "count": w.BoundedIntText(value=count, min=RANGES["count"][0], max=RANGES["count"][1], description="count"),
            "tp": w.Dropdown(options=TP_CHOICES, value=tp, description="tp"),
            "context": w.IntSlider(value=context, min=RANGES["context"][0], max=RANGES["context"][1], description="context",
                                   continuous_update=False),
            "concurrency": w.IntSlider(value=concurrency, min=RANGES["concurrency"][0], max=RANGES["concurrency"][1],
                                       description="users",
                                       continuous_update=False),
        }
        self.output = w.Output()
        self.widget = w.VBox([w.HBox([self.controls[k] for k in ("model", "accelerator", "weights")]),
                              w.HBox([self.controls[k] for k in ("count", "tp")]),
                              self.controls["context"], self.controls["concurrency"], self.output])
        self.result = None
        self.error: Optional[str] = None
        for control in self.controls.values():
            control.observe(lambda _change: self.update(), names="value")
        self.update()

    def scenario(self) -> Dict[str, Any]:
        values = {k: c.value for k, c in self.controls.items()}
        return scenario_of(output_tokens=self.output_tokens, **values)

    def update(self) -> None:
        """Re-estimates with the controls' values; bad combinations (tp above count...) show capplan's
        one-line error instead of a result."""
        from IPython.display import display
        try:
            self.result, self.error = estimate(self.scenario()), None
        except Error as e:
            self.result, self.error = None, str(e)
        with self.output:
            self.output.clear_output(wait=True)
            if self.result is not None:
                display(self.result)
            else:
                print(self.error)

    def _static_html(self) -> str:
        if self.result is not None:
            return self.result.html()
        import html
        return f"<pre>{html.escape(self.error or '')}</pre>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude) or {}
        bundle["text/html"] = self._static_html()
        return bundle


def explorer(model: str = "Llama-3.1-70B", accelerator: str = "H200", count: int = 8, tp: int = 8,
             context: int = 8000, concurrency: int = 50, output_tokens: int = 1000,
             weights: str = "fp8") -> Explorer:
    """An interactive estimate starting from these values (the README's assistant by default)."""
    try:
        import ipywidgets  # noqa: F401
    except ImportError as e:
        raise ImportError('capplan.explorer needs ipywidgets: pip install "capplan[notebook]"') from e
    return Explorer(model, accelerator, count, tp, context, concurrency, output_tokens, weights)
