"""Parameter counts computed from each catalog config match the published counts within 2%.

Expected values and their citations are in tests/data/published_parameters.json (papers, model
cards, safetensors totals); none of them was produced by capplan.
"""
import json
from pathlib import Path

import pytest

import capplan

PUBLISHED = json.loads((Path(__file__).resolve().parents[1] / "data" / "published_parameters.json").read_text())


def test_every_catalog_model_has_a_published_count():
    assert sorted(PUBLISHED) == sorted(capplan.list_models())


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_total_and_active_within_2_percent(name):
    ref = PUBLISHED[name]
    assert ref["source"], "every expected value needs its citation"
    m = capplan.model(name)
    assert m.parameters == pytest.approx(ref["total"], rel=0.02), ref["source"]
    active = ref["active"] if ref["active"] is not None else ref["total"]
    assert m.active_parameters == pytest.approx(active, rel=0.02), ref["source"]
