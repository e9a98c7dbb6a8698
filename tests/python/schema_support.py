"""One JSON Schema validator for the tests: the independent `jsonschema` package checking against
models/schema, with the schemas' cross-references ($ref between files, by $id) resolved through a
`referencing` registry (jsonschema >= 4.18; its RefResolver is deprecated and no longer resolves)."""
import json
from pathlib import Path

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "models" / "schema"


def schemas():
    """Every schema in models/schema by its $id."""
    loaded = (json.loads(p.read_text()) for p in sorted(SCHEMA_DIR.glob("*.json")))
    return {s["$id"]: s for s in loaded}


def validator(file_name: str) -> jsonschema.Draft202012Validator:
    """A validator for models/schema/<file_name>, the schema itself checked first."""
    by_id = schemas()
    schema = json.loads((SCHEMA_DIR / file_name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    registry = Registry().with_resources(
        (sid, Resource.from_contents(s, default_specification=DRAFT202012)) for sid, s in by_id.items())
    return jsonschema.Draft202012Validator(schema, registry=registry)
