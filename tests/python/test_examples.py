"""The example scenarios validate against models/schema/scenario.schema.json and estimate cleanly."""
import json
from pathlib import Path

import jsonschema
import pytest

import capplan

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "models" / "schema"
EXAMPLES = sorted((ROOT / "examples" / "scenarios").glob("*.json"))


def _validator():
    store = {json.loads(p.read_text())["$id"]: json.loads(p.read_text()) for p in SCHEMA_DIR.glob("*.json")}
    schema = store["https://capplan.dev/schema/scenario.schema.json"]
    resolver = jsonschema.RefResolver(base_uri=schema["$id"], referrer=schema, store=store)
    return jsonschema.Draft202012Validator(schema, resolver=resolver)


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
