"""capplan.explorer: the notebook's interactive estimate. Its controls give the same numbers as
capplan.estimate on the scenario they describe, bad combinations show capplan's one-line error, and it
renders as static HTML (table and charts) where no widget can be drawn."""
import subprocess
import sys

import pytest

import capplan
from capplan.explorer import scenario_of

pytest.importorskip("ipywidgets")


def test_controls_estimate_the_scenario_they_describe():
    e = capplan.explorer(model="Llama-3.1-8B", accelerator="H100", count=2, tp=2, context=4096, concurrency=16,
                         output_tokens=256, weights="bf16")
    direct = capplan.estimate(scenario_of("Llama-3.1-8B", "H100", 2, 2, 4096, 16, 256, "bf16"))
    assert e.result.to_dict() == direct.to_dict()  # "H100" is an alias of the catalog's H100-SXM
    e.controls["concurrency"].value = 64
    assert e.scenario()["inference"]["concurrency"] == 64 and e.result.inference.batch == 64
    assert e.result.memory.kv_cache_bytes > direct.memory.kv_cache_bytes


def test_bad_combination_shows_the_error_naming_the_field():
    e = capplan.explorer(count=8, tp=8)
    e.controls["tp"].value = 16
    assert e.result is None and e.error.startswith("/parallelism")
    e.controls["tp"].value = 8
    assert e.result is not None and e.error is None


@pytest.mark.parametrize("start,field", [({"context": 200_000}, "/context"), ({"concurrency": 1000}, "/concurrency"),
                                         ({"tp": 3}, "/tp"), ({"weights": "fp16"}, "/weights"), ({"count": 0}, "/count")])
def test_a_start_outside_the_controls_is_a_capplan_error_not_a_clamp(start, field):
    with pytest.raises(capplan.ConfigError, match=field):
        capplan.explorer(**start)


def test_renders_as_widget_and_as_static_html():
    bundle = capplan.explorer()._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "<svg" in bundle["text/html"] and "fits" in bundle["text/html"]


def test_capplan_imports_and_estimates_without_ipywidgets():
    code = ("import sys; sys.modules['ipywidgets'] = None\n"
            "import capplan\n"
            "assert capplan.estimate(capplan.default_scenario()).memory.fits\n"
            "try:\n    capplan.explorer()\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert 'pip install "capplan[notebook]"' in out
