"""Every catalog file validates against its JSON Schema in models/schema (checked with the
independent `jsonschema` validator, not capplan's own reader), and the schemas reject unknown keys."""
import copy
import json
from pathlib import Path

import pytest
from schema_support import validator

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
KIND_SCHEMA = {
    "llm": "llm.schema.json",
    "accelerators": "accelerator.schema.json",
    "links": "link.schema.json",
    "systems": "system.schema.json",
    "storage": "storage.schema.json",
    "sites": "site.schema.json",
}


def _validator(kind):
    return validator(KIND_SCHEMA[kind])


def _entries():
    for kind in KIND_SCHEMA:
        for path in sorted((MODELS / kind).glob("*.json")):
            yield pytest.param(kind, path, id=f"{kind}/{path.name}")


@pytest.mark.parametrize("kind,path", list(_entries()))
def test_catalog_file_matches_schema(kind, path):
    entry = json.loads(path.read_text())
    errors = sorted(_validator(kind).iter_errors(entry), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"/{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)


@pytest.mark.parametrize("kind", list(KIND_SCHEMA))
def test_schema_rejects_unknown_key(kind):
    paths = sorted((MODELS / kind).glob("*.json"))
    assert paths, f"catalog folder models/{kind} is empty"
    entry = json.loads(paths[0].read_text())
    bad = copy.deepcopy(entry)
    bad["not_a_field"] = 1
    assert list(_validator(kind).iter_errors(bad)), "an unknown top-level key must be rejected"


def test_file_names_match_entry_names():
    seen = {}
    for kind in KIND_SCHEMA:
        for path in (MODELS / kind).glob("*.json"):
            name = json.loads(path.read_text())["name"]
            assert path.stem == name.lower(), f"{path}: file should be named {name.lower()}.json"
            assert name.lower() not in seen, f"{name} defined twice: {seen.get(name.lower())} and {path}"
            seen[name.lower()] = path


def test_a_shared_efficiency_block_holds_only_the_parts_own_matrix_fractions():
    # Beside "as" only matmul and grouped_matmul may stand (the reader refuses the rest too: a memory fraction there
    # would be silently replaced by the lender's).
    entry = json.loads((MODELS / "accelerators" / "mi355x.json").read_text())
    assert not list(_validator("accelerators").iter_errors(entry))
    bad = copy.deepcopy(entry)
    bad["efficiency"]["memory_bandwidth"] = {"value": 0.8, "source": "a test"}
    assert list(_validator("accelerators").iter_errors(bad))
