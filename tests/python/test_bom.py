"""capplan.bom and `capplan bom` (issue #22 item 3): the lines, their spreadsheet, and bad input. The counts themselves
are checked against NVIDIA's DGX SuperPOD table in tests/cpp/test_bom.cpp."""
import json

import pytest

import capplan


def test_bom_lines_by_hand():
    b = capplan.bom("DGX-H100", 64, rack_power="40 kW")  # 8 nodes of 8 NICs: one 64-port switch
    rows = {r["item"]: r for r in b.rows()}
    assert rows["systems"]["count"] == 8 and rows["NICs"]["count"] == 64
    assert rows["leaf switches"]["count"] == 1 and "spine switches" not in rows
    assert rows["NICs"]["power_total_w"] is None  # inside the systems' 10.2 kW
    # ... and their price: shown ($1,599-2,188, the middle), not totalled (the CSV and JSON lines say so too).
    assert rows["NICs"]["usd_each"] == pytest.approx((1599 + 2188) / 2) and rows["NICs"]["usd_total"] is None
    assert rows["leaf switches"]["usd_total"] == pytest.approx((36000 + 50000) / 2)
    assert b["racks"] == 3  # 3 x 10.2 kW a 40 kW rack
    # The systems, 32 + 32 twin-port optics at 15 W and the QM9700 at 747 W (typical, passive: models/links/ib-ndr.json);
    # one scalable unit's storage and management networks (models/systems/dgx-h100.json): 4 storage QM9700, 2 SN4600C
    # at 466 W, 2 SN2201 at 98 W, a UFM appliance at 689 W (the management server has no figure).
    networks = 4 * 747 + 2 * 466 + 2 * 98 + 689
    assert b["known_power_w"] == pytest.approx(8 * 10200 + (32 + 32) * 15 + 747 + networks)
    assert rows["storage fabric switches"]["count"] == 4 and rows["in-band cables (nodes)"]["count"] == 16
    assert any(n.startswith("power: the catalog has no figure for the management servers") for n in b["notes"])
    # No storage unless a storage system is named.
    assert "storage systems" not in rows
    assert "capplan bom: 64 accelerators as 8 x DGX-H100; 3 racks" in repr(b) and "10.2 kW" in repr(b)


def test_cli_bom_table_csv_xlsx_and_bad_input(run_cli, tmp_path):
    code, out, err = run_cli("bom", "--system", "HGX-B200", "--count", "256")
    assert code == 0, err
    assert "leaf switches       8" in out and "spine switches      4" in out
    code, out, _ = run_cli("bom", "--system", "HGX-B200", "--count", "256", "--format", "json")
    assert json.loads(out)["fabric"]["spine"] == 4
    openpyxl = pytest.importorskip("openpyxl")
    xlsx = tmp_path / "bom.xlsx"
    code, out, err = run_cli("bom", "--system", "HGX-B200", "--count", "256", "-o", str(xlsx))
    assert code == 0, err
    sheet = openpyxl.load_workbook(xlsx).active
    header = [c.value for c in sheet[1]]
    counts = {row[0]: row[header.index("count")] for row in sheet.iter_rows(min_row=2, values_only=True)}
    assert counts["optics at switches"] == 384 and isinstance(counts["systems"], int)
    # JSON out is the whole BOM, as --format json prints it: its known totals and notes (the unpriced cables) too.
    doc = tmp_path / "bom.json"
    code, out, err = run_cli("bom", "--system", "HGX-B200", "--count", "256", "-o", str(doc))
    assert code == 0, err
    written = json.loads(doc.read_text())
    assert written == json.loads(run_cli("bom", "--system", "HGX-B200", "--count", "256", "--format", "json")[1])
    assert written["known_usd_range"][0] > 0 and any(n.startswith("price: the catalog has no figure for the cables")
                                                     for n in written["notes"])
    for args, field in ((["--rack-power", "40 GB"], "/rack_power"), (["-o", str(tmp_path / "b.pdf")], ".pdf"),
                        (["--system", "DGX-H999"], "DGX-H999")):  # a later --system replaces the first
        code, out, err = run_cli("bom", "--system", "HGX-B200", "--count", "256", *args)
        assert code == 2 and field in err and len(err.strip().splitlines()) == 1, err


def test_bom_oversubscribed_fabric(run_cli):
    # 2:1 at the leaves of one HGX B200 scalable unit (tests/cpp/test_bom.cpp by hand): 42 ports down and 21 up a leaf,
    # 16 uplinks from each rail's leaf of 32 NICs, 2 spines; the 2 spines and 128 optics fewer than non-blocking are
    # priced out of the known total.
    flat, over = capplan.bom("HGX-B200", 256), capplan.bom("HGX-B200", 256, oversubscription=2)
    assert flat["fabric"]["oversubscription"] == 1 and flat["fabric"]["leaf_up_ports"] == 32
    assert (over["fabric"]["leaf_down_ports"], over["fabric"]["leaf_up_ports"]) == (42, 21)
    assert (over["fabric"]["spine"], over["fabric"]["leaf_spine_links"]) == (2, 128)
    saved = flat["known_usd_range"][0] - over["known_usd_range"][0]
    assert saved == pytest.approx(2 * 36000 + 128 * 879)
    assert any("oversubscribed at the leaves, 42 ports down and 21 up a leaf (2:1 asked" in n for n in over["notes"])
    code, out, err = run_cli("bom", "--system", "HGX-B200", "--count", "256", "--oversubscription", "2", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["fabric"] == over["fabric"]
    code, out, err = run_cli("bom", "--system", "HGX-B200", "--count", "256", "--oversubscription", "0.5")
    assert code == 2 and "--oversubscription" in err and len(err.strip().splitlines()) == 1, err
    # Above ports - 1 (64-port QM9700s: 63) the core refuses it: one line naming the field, exit 2.
    code, out, err = run_cli("bom", "--system", "HGX-B200", "--count", "256", "--oversubscription", "1e12")
    assert code == 2 and "/oversubscription" in err and len(err.strip().splitlines()) == 1, err


def test_bom_pods(run_cli):
    # 3:1 above pods of 64 DGX H100 nodes, 256 nodes (tests/cpp/test_bom.cpp by hand): 4 pods of 16 leaves and 16
    # spines (32 ports down, ceil(32 / 3) = 11 up), 704 spine-core links, 11 cores; the CLI gives the same fabric.
    b = capplan.bom("DGX-H100", 2048, oversubscription=3, pod_nodes=64)
    f = b["fabric"]
    assert (f["pods"], f["pod_nodes"], f["spine_down_ports"], f["spine_up_ports"]) == (4, 64, 32, 11)
    assert (f["tiers"], f["leaf"], f["spine"], f["core"], f["spine_core_links"]) == (3, 64, 64, 11, 704)
    code, out, err = run_cli("bom", "--system", "DGX-H100", "--count", "2048", "--oversubscription", "3",
                             "--pod-nodes", "64", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["fabric"] == f
    # No pods by default (the preset has none) and with 0; a pod beyond two tiers is one line naming the field.
    assert "pods" not in capplan.bom("DGX-H100", 2048)["fabric"]
    assert "pods" not in capplan.bom("DGX-H100", 2048, pod_nodes=0)["fabric"]
    code, out, err = run_cli("bom", "--system", "DGX-H100", "--count", "2048", "--pod-nodes", "129")
    assert code == 2 and "/pod_nodes" in err and len(err.strip().splitlines()) == 1, err
    with pytest.raises(capplan.ConfigError, match="/pod_nodes"):
        capplan.bom("DGX-H100", 2048, pod_nodes=-1)


def test_bom_storage_systems(run_cli):
    # One DGX H100 scalable unit at its RA's 'best' guideline (125 GB/s read, 62 GB/s write a unit) on NetApp BeeGFS
    # building blocks of 62 GiB/s read and 21 GiB/s write: ceil(125 / 66.57) = 2, ceil(62 / 22.55) = 3 -> 3
    # (tests/cpp/test_bom.cpp by hand); rates and a capacity as asked: 2 PB of 460.6 TB -> 5.
    best = capplan.bom("DGX-H100", 256, storage="NetApp-BeeGFS-BB", storage_level="best")
    assert {r["item"]: r["count"] for r in best.rows()}["storage systems"] == 3
    sized = capplan.bom("DGX-H100", 256, storage="beegfs-ef600", storage_read="100 GB/s", storage_capacity="2 PB")
    assert {r["item"]: r["count"] for r in sized.rows()}["storage systems"] == 5
    assert any(n.startswith("storage: 5 x NetApp-BeeGFS-BB, the most of read 100 GB/s") for n in sized["notes"])
    code, out, err = run_cli("bom", "--system", "DGX-H100", "--count", "256", "--storage", "NetApp-BeeGFS-BB",
                             "--storage-level", "best", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["lines"] == best["lines"]
    # Each mistake is one line naming its field: a level without a system, a per-client tier, a rate of 0, a level
    # the preset's reference architecture does not give, a level beside rates, nothing to size for.
    for args, field in ((["--storage-level", "best"], "/storage_level"),
                        (["--storage", "ParallelFS", "--storage-read", "10GB/s"], "/storage"),
                        (["--storage", "NetApp-BeeGFS-BB", "--storage-read", "0GB/s"], "/storage_read"),
                        (["--storage", "NetApp-BeeGFS-BB", "--storage-write", "3 GB"], "/storage_write"),
                        (["--storage", "NetApp-BeeGFS-BB", "--storage-level", "best", "--storage-read", "1GB/s"],
                         "/storage_level"),
                        (["--storage", "NetApp-BeeGFS-BB"], "/storage_level")):
        code, out, err = run_cli("bom", "--system", "DGX-H100", "--count", "256", *args)
        assert code == 2 and field in err and len(err.strip().splitlines()) == 1, (args, err)
    code, out, err = run_cli("bom", "--system", "MI300X-Platform", "--count", "64", "--storage", "NetApp-BeeGFS-BB",
                             "--storage-level", "good")
    assert code == 2 and "/storage_level" in err and "read and write rates instead" in err, err


def test_bom_part_prices_a_buyer_was_quoted(run_cli):
    # A quote of $40,000 a spine (the catalog's QM9700: $36,000-50,000) and [$120, $180] a leaf-spine cable (none in
    # the catalog) for one HGX B200 unit's 4 spines and 256 cables (tests/cpp/test_bom.cpp by hand).
    base = capplan.bom("HGX-B200", 256)
    quoted = capplan.bom("HGX-B200", 256, part_prices={"spine switches": 40000, "cables leaf-spine": [120, 180]})
    assert quoted["known_usd_range"][0] - base["known_usd_range"][0] == pytest.approx(4 * 4000 + 256 * 120)
    assert quoted["known_usd_range"][1] - base["known_usd_range"][1] == pytest.approx(4 * -10000 + 256 * 180)
    code, out, err = run_cli("bom", "--system", "HGX-B200", "--count", "256", "--part-price", "spine switches=40000",
                             "--part-price", "cables leaf-spine=150", "--format", "json")
    assert code == 0, err
    lines = {line["item"]: line for line in json.loads(out)["lines"]}
    assert lines["spine switches"]["usd"] == 40000 and lines["cables leaf-spine"]["usd"] == 150
    assert lines["spine switches"]["quoted"] and not lines["leaf switches"]["quoted"]
    for args, field in ((["--part-price", "core switches=5"], "/part_prices/core switches"),
                        (["--part-price", "spine switches"], "--part-price"),
                        (["--part-price", "spine switches=40,000"], "not a number of US dollars"),
                        (["--part-price", "spine switches=1", "--part-price", "spine switches=2"], "quoted twice"),
                        (["--part-price", "spine switches=-1"], "/part_prices/spine switches")):
        code, out, err = run_cli("bom", "--system", "HGX-B200", "--count", "256", *args)
        assert code == 2 and field in err and len(err.strip().splitlines()) == 1, (args, err)
    for bad in ([1], {"spine switches": [1, 2, 3]}, {"spine switches": "cheap"}, {"spine switches": 0},
                {"NICs": 1500}):  # the NICs' price is inside the systems': a quote there would change nothing
        with pytest.raises(capplan.ConfigError, match="/part_prices"):
            capplan.bom("HGX-B200", 256, part_prices=bad)
    # A quote for the systems is their price in the owning cost as well as in the bill's total.
    systems = capplan.bom("HGX-B200", 256, part_prices={"systems": 400000})
    assert systems["known_usd"] - base["known_usd"] == pytest.approx(32 * (400000 - base["lines"][0]["usd"]))
    assert systems["cost"]["own"]["capex_usd"] - base["cost"]["own"]["capex_usd"] == pytest.approx(
        32 * (400000 - base["lines"][0]["usd"]))


def test_bom_arguments_are_checked():
    with pytest.raises(capplan.ConfigError, match="/system"):
        capplan.bom(5, 8)
    with pytest.raises(capplan.ConfigError, match="/count"):
        capplan.bom("DGX-H100", 2**21)
    with pytest.raises(capplan.UnitError, match="/rack_power"):
        capplan.bom("DGX-H100", 8, rack_power="40 GB")
    with pytest.raises(capplan.ConfigError, match="/rack_power"):
        capplan.bom("DGX-H100", 8, rack_power="-40 kW")
    with pytest.raises(capplan.ConfigError, match="/rack_power"):
        capplan.bom("DGX-H100", 8, rack_power="1e300 kW")
    for bad in (0.5, float("nan"), "2", True, 64, 1e12):  # 64-port QM9700s: at most 63 down to 1 up
        with pytest.raises(capplan.ConfigError, match="/oversubscription"):
            capplan.bom("DGX-H100", 256, oversubscription=bad)


def test_bom_site_is_checked(run_cli):
    # The owning cost's site names a catalog entry; a wrong one is one line naming it, exit 2.
    code, out, err = run_cli("bom", "--system", "DGX-H100", "--count", "8", "--site", "Nowhere")
    assert code == 2 and "Nowhere" in err and len(err.strip().splitlines()) == 1, err
    with pytest.raises(capplan.ConfigError, match="/site"):
        capplan.bom("DGX-H100", 8, site=5)


@pytest.mark.parametrize("part,needle", [
    ({"item": "x", "per_scalable_unit": 1, "switch_of": "IB-XYZ"}, "/support_networks/parts/0/switch_of"),
    ({"item": "x", "per_scalable_unit": 1, "switch_of": "PCIe-Gen5"}, "the link has no fabric parts"),
    ({"item": "x", "per_scalable_unit": 1, "per_node": 1, "model": "m"}, "/support_networks/parts/0/per_scalable_unit"),
    ({"item": "x", "per_node": 1}, "/support_networks/parts/0/model"),
    ({"item": "x", "per_node": 0, "model": "m"}, "/support_networks/parts/0/per_node"),
])
def test_bad_support_networks_in_the_catalog_name_file_and_pointer(tmp_path, part, needle):
    p = _capplan_with_edited_catalog(tmp_path, lambda e: e["support_networks"].update(parts=[part]), "list", "systems")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "dgx-h100.json" in p.stderr and needle in p.stderr, p.stderr


@pytest.mark.parametrize("levels,needle", [
    ({"ok": {"read": "1 GB/s", "write": "1 GB/s"}}, "/support_networks/storage_levels/ok"),
    ({"good": {"read": "0 GB/s", "write": "1 GB/s"}}, "/support_networks/storage_levels/good/read"),
    ({"good": {"read": "1 GB/s"}}, "/support_networks/storage_levels/good/write"),
    ({"good": {"read": "1 GB", "write": "1 GB/s"}}, "/support_networks/storage_levels/good/read"),
])
def test_bad_storage_levels_in_the_catalog_name_file_and_pointer(tmp_path, levels, needle):
    p = _capplan_with_edited_catalog(tmp_path, lambda e: e["support_networks"].update(storage_levels=levels),
                                     "list", "systems")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "dgx-h100.json" in p.stderr and needle in p.stderr, p.stderr


_LINKS = {"links": 2, "bandwidth_per_direction": "200 Gb/s", "source": "s"}


@pytest.mark.parametrize("net,needle", [
    ({**_LINKS, "links": 0}, "/storage_network/links"),
    ({k: v for k, v in _LINKS.items() if k != "source"}, "/storage_network/source"),
    ({**_LINKS, "bandwidth_per_direction": "0 Gb/s"}, "/storage_network/bandwidth_per_direction"),
    ({**_LINKS, "bandwidth_per_direction": "200 Gb"}, "/storage_network/bandwidth_per_direction"),
    ({**_LINKS, "speed": "fast"}, "/storage_network/speed"),
    ({**_LINKS, "source": ""}, "/storage_network/source"),
    ({**_LINKS, "confidence": "whatever"}, "/storage_network/confidence"),
    ({k: v for k, v in _LINKS.items() if k != "bandwidth_per_direction"}, "/storage_network/bandwidth_per_direction"),
    ({**_LINKS, "aggregate": "0 Gb/s"}, "/storage_network/aggregate"),
    ({**_LINKS, "aggregate": "480 Gb"}, "/storage_network/aggregate"),
    ({**_LINKS, "aggregate": {"value": "480 Gb/s"}}, "/storage_network/aggregate/source"),
    ({**_LINKS, "aggregate": {"value": "240 Gb/s", "source": ""}}, "/storage_network/aggregate/source"),
    ({**_LINKS, "aggregate": {"value": "240 Gb/s", "source": "s", "confidence": "whatever"}},
     "/storage_network/aggregate/confidence"),
    ({**_LINKS, "aggregate": None}, "/storage_network/aggregate"),
    ({**_LINKS, "aggregate": {"value": None, "source": "s"}}, "/storage_network/aggregate"),
    ({**_LINKS, "aggregate": "400 Gb/s"}, "/storage_network/aggregate"),  # not below 2 x 200 Gb/s: limits nothing
])
def test_bad_storage_network_in_the_catalog_names_file_and_pointer(tmp_path, net, needle):
    p = _capplan_with_edited_catalog(tmp_path, lambda e: e.update(storage_network=net), "list", "systems")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "dgx-h100.json" in p.stderr and needle in p.stderr, p.stderr


def _capplan_with_edited_catalog(tmp_path, edit, *args, storage_edit=None):
    """`capplan args` over a copy of the shipped catalog whose DGX-H100 preset `edit` changed (and NetApp-BeeGFS-BB
    `storage_edit`)."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path
    models = tmp_path / "models"
    shutil.copytree(Path(__file__).resolve().parents[2] / "models", models)
    for path, change in ((models / "systems" / "dgx-h100.json", edit),
                         (models / "storage" / "netapp-beegfs-bb.json", storage_edit)):
        if change:
            entry = json.loads(path.read_text())
            change(entry)
            path.write_text(json.dumps(entry))
    exe = os.path.join(os.path.dirname(sys.executable), "capplan")
    return subprocess.run([exe, *args], capture_output=True, text=True, env={**os.environ, "CAPPLAN_CATALOG": str(models)})


def test_a_link_alias_names_the_switch_and_a_zero_capacity_entry_gives_none(tmp_path):
    # "ib-ndr" is IB-NDR's alias: the storage fabric's switches are its QM9700 (a crash before: exit 139).
    def alias(e):
        e["support_networks"]["parts"][0]["switch_of"] = "ib-ndr"
    p = _capplan_with_edited_catalog(tmp_path, alias, "bom", "--system", "DGX-H100", "--count", "256", "--format", "json")
    assert p.returncode == 0, p.stderr
    lines = {line["item"]: line for line in json.loads(p.stdout)["lines"]}
    assert lines["storage fabric switches"]["count"] == 4 and "QM9700" in lines["storage fabric switches"]["model"]
    # A storage entry whose capacity is 0 has no capacity to size by: one line naming the field.
    def no_capacity(e):
        e["capacity"] = "0 TB"
    p = _capplan_with_edited_catalog(tmp_path / "z", None, "bom", "--system", "DGX-H100", "--count", "256", "--storage",
                                     "NetApp-BeeGFS-BB", "--storage-capacity", "1PB", storage_edit=no_capacity)
    assert p.returncode == 2 and "/storage" in p.stderr and "gives no capacity" in p.stderr, p.stderr
