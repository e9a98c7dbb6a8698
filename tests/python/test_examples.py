"""The example scenarios validate against models/schema/scenario.schema.json and estimate cleanly."""
import json
from pathlib import Path

import pytest
from schema_support import validator

import capplan

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "scenarios").glob("*.json"))


def _validator():
    return validator("scenario.schema.json")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_is_valid_and_estimates(path):
    errors = list(_validator().iter_errors(json.loads(path.read_text())))
    assert not errors, [e.message for e in errors]
    r = capplan.estimate(path)
    assert r.model.parameters > 0


def test_default_scenario_is_the_shipped_example():
    shipped = json.loads((ROOT / "examples" / "scenarios" / "assistant-50-users.json").read_text())
    assert shipped == capplan.default_scenario()
    assert not list(_validator().iter_errors(shipped))


def test_schema_rejects_what_the_reader_rejects():
    bad = {"model": "Llama-3.1-8B", "system": {"accelerator": "H100"}, "inferense": {}}
    assert list(_validator().iter_errors(bad))
    with pytest.raises(capplan.ConfigError):
        capplan.estimate(bad)
