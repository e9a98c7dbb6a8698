"""The C++ reader and the JSON Schemas describe the same catalog format."""
import json
from pathlib import Path

import capplan

SCHEMA = Path(__file__).resolve().parents[2] / "models" / "schema"


def test_hf_config_keys_match_llm_schema():
    schema = json.loads((SCHEMA / "llm.schema.json").read_text())
    props = set(schema["properties"]["config"]["properties"])
    assert props == set(capplan._core.hf_config_known_keys())
    assert set(schema["properties"]["config"]["properties"]["model_type"]["enum"]) == set(
        capplan._core.supported_model_types())


def test_catalog_validates_in_both_readers():
    # The C++ loader already read every file at import; the names it knows are the files on disk.
    root = SCHEMA.parent
    for kind in ("models", "accelerators", "systems", "storage", "links"):
        folder = {"models": "llm"}.get(kind, kind)
        on_disk = sorted(json.loads(p.read_text())["name"] for p in (root / folder).glob("*.json"))
        assert sorted(capplan._core.catalog_names(kind)) == on_disk
