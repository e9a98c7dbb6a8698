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
    for kind in ("models", "accelerators", "systems", "storage", "links", "sites"):
        folder = {"models": "llm"}.get(kind, kind)
        on_disk = sorted(json.loads(p.read_text())["name"] for p in (root / folder).glob("*.json"))
        assert sorted(capplan._core.catalog_names(kind)) == on_disk


def test_unit_patterns_accept_exactly_what_the_parser_accepts():
    import re
    defs = json.loads((SCHEMA / "common.schema.json").read_text())["$defs"]
    for key, dims in (("bytes", (1, 0, 0, 0)), ("byte_rate", (1, 0, -1, 0)), ("flop_rate", (0, 1, -1, 0)),
                      ("time", (0, 0, 1, 0)), ("power", (0, 0, 0, 1))):
        pattern = re.compile(defs[key]["pattern"])
        for unit in capplan._core.allowed_units(dims).split(", "):
            text = f"1,979.5 {unit}"
            assert pattern.match(text), (key, text)
            capplan.Quantity(text)  # the parser agrees
    for ambiguous in ("4 KB", "4 Kb/s"):
        assert not re.match(defs["bytes"]["pattern"], ambiguous)
        assert not re.match(defs["byte_rate"]["pattern"], ambiguous)
