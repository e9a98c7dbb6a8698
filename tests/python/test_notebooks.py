"""Every notebook in notebooks/ runs headless with a kernel on this interpreter (which sees capplan)."""
import json
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    spec = tmp_path / "jupyter" / "kernels" / "capplan-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "capplan test", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    return "capplan-test"


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, kernel):
    nb = nbformat.read(path, as_version=4)
    # 120 s a cell: the slowest takes about 10 s here; a hung kernel fails the run in two minutes, not five.
    NotebookClient(nb, kernel_name=kernel, timeout=120, resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert outputs, "a notebook that prints nothing answers nothing"
    # Each answers its question backed by a plot: an SVG chart (inline, or in a result's HTML view).
    svg = [o for o in outputs if "image/svg+xml" in o.get("data", {}) or "<svg" in o.get("data", {}).get("text/html", "")]
    assert svg, "no chart in " + path.name
