"""What a user's `pip install capplan` gives: the wheel's contents, its metadata, and (when the suite
runs against an installed wheel, as scripts/test.sh does) that nothing comes from the source tree."""
import importlib.metadata
import os
import sys
from pathlib import Path

import pytest

import capplan
from capplan import _core

ROOT = Path(__file__).resolve().parents[2]
AGAINST_WHEEL = os.environ.get("CAPPLAN_TESTS_AGAINST_WHEEL") == "1"
PACKAGE = Path(capplan.__file__).resolve().parent


def test_package_ships_its_extension_stubs_and_catalog():
    assert Path(_core.__file__).resolve().parent == PACKAGE
    assert (PACKAGE / "_core.pyi").is_file() and (PACKAGE / "py.typed").is_file()
    assert _core.__version__ == capplan.__version__ == importlib.metadata.version("capplan")


def test_build_records_where_each_cpp_dependency_came_from():
    found = dict(part.split(": ", 1) for part in _core.build_dependencies.split("; "))
    assert set(found) == {"Eigen3", "nlohmann_json", "fmt"}
    assert all(how.startswith(("system (", "fetched (")) for how in found.values())


def test_core_needs_no_third_party_package_and_extras_are_declared():
    meta = importlib.metadata.metadata("capplan")
    requires = meta.get_all("Requires-Dist") or []
    assert requires and all("extra ==" in r for r in requires), requires
    assert {"notebook", "excel", "test", "all"} <= set(meta.get_all("Provides-Extra"))
    by_extra = {}
    for r in requires:
        name, extra = r.split(";")[0].strip(), r.split("extra ==")[1].strip().strip("'\"")
        by_extra.setdefault(extra, set()).add(name.split(">")[0].split("=")[0].split("[")[0].strip().lower())
    assert {"jupyterlab", "ipykernel", "ipywidgets", "matplotlib", "pandas"} <= by_extra["notebook"]
    assert {"openpyxl"} <= by_extra["excel"]
    assert {"pytest", "hypothesis", "jsonschema", "nbclient", "nbformat", "ipykernel", "pandas", "openpyxl"} <= by_extra["test"]


def test_console_script_is_installed():
    assert (Path(sys.executable).parent / "capplan").exists()


@pytest.mark.skipif(not AGAINST_WHEEL, reason="runs when the suite tests an installed wheel (scripts/test.sh)")
def test_the_installed_wheel_is_what_runs_not_the_source_tree():
    assert ROOT not in PACKAGE.parents, f"capplan imported from the source tree: {PACKAGE}"
    assert "site-packages" in PACKAGE.parts
    assert not any(Path(p or ".").resolve() == ROOT / "python" for p in sys.path)
    assert capplan.CATALOG_DIR.resolve() == Path(_core.catalog_dir()).resolve() == PACKAGE / "models"
