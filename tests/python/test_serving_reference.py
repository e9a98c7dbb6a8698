"""The serving simulation gives the numbers it gave before its speed work (issue #23 item 2: "same numbers as today,
tests compare against saved results"). tests/data/serving_sim_reference.json holds every number of the `inference`
section for the shipped example scenarios that simulate, and for the built-in default scenario, as the tree computed
them before the speed work (2026-12-02, commit f7133ca). It is a regression guard, not a validation: the published
measurements are in tests/data/published_*.json. Regenerate only for a deliberate change of the model:
`python tests/python/test_serving_reference.py --write` (and say why in the commit)."""
import json
import math
import sys
from pathlib import Path

import pytest

import capplan

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "tests" / "data" / "serving_sim_reference.json"
SIMULATED = ("assistant-50-users", "assistant-speculative-prefix-cache", "cold-start-object-store",
             "disaggregated-prefill-decode", "inline-hf-config", "moe-pytorch-engine")


def numbers(section, prefix=""):
    """The section's numbers by dotted key (lists by index): what the reference keeps."""
    out = {}
    items = section.items() if isinstance(section, dict) else enumerate(section)
    for key, value in items:
        name = f"{prefix}{key}"
        if isinstance(value, bool) or value is None or isinstance(value, str):
            continue
        if isinstance(value, (int, float)):
            out[name] = value
        elif isinstance(value, (dict, list)):
            out.update(numbers(value, name + "."))
    return out


def computed():
    scenarios = {name: ROOT / "examples" / "scenarios" / f"{name}.json" for name in SIMULATED}
    result = {name: numbers(capplan.estimate(path).to_dict()["inference"]) for name, path in scenarios.items()}
    result["default"] = numbers(capplan.estimate(capplan.default_scenario()).to_dict()["inference"])
    return result


def test_the_simulation_gives_the_saved_numbers():
    saved = json.loads(REFERENCE.read_text())["cases"]
    now = computed()
    assert set(now) == set(saved)
    for case, keys in saved.items():
        assert set(now[case]) == set(keys), case
        for key, value in keys.items():
            assert now[case][key] == pytest.approx(value, rel=1e-9, abs=1e-15), f"{case}: {key}"


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    REFERENCE.write_text(json.dumps({"_meta": {"what": __doc__.split("\n\n")[0], "written_by":
                                               "python tests/python/test_serving_reference.py --write"},
                                     "cases": computed()}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {REFERENCE}")
    assert all(math.isfinite(v) for case in computed().values() for v in case.values())
