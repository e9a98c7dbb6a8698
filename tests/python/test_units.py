"""capplan.Quantity: parsing, auto-scaled printing, .to(), arithmetic and typed errors."""
import pytest

import capplan
from capplan import Quantity, UnitError


def test_parse_and_print_the_issue_strings():
    assert Quantity("80 GB").si == 80e9
    assert Quantity("141 GiB").si == 141 * 2**30
    assert Quantity("3.35 TB/s").si == pytest.approx(3.35e12)
    assert Quantity("400 Gb/s").to("GB/s").magnitude == pytest.approx(50.0)  # bits / 8
    assert Quantity("989 TFLOP/s").si == pytest.approx(989e12)
    assert Quantity("25 us").si == pytest.approx(25e-6)
    assert str(Quantity("80 GB")) == "80 GB"
    assert str(Quantity("80 GB").to("GiB")) == "74.51 GiB"  # 80e9 / 2^30 = 74.506
    assert str(Quantity(1979, "TFLOP/s")) == "1979 TFLOP/s"
    assert str(Quantity.from_si(1979e12, (0, 1, -1, 0))) == "1.979 PFLOP/s"
    assert repr(Quantity("3.35 TB/s")) == "Quantity('3.35 TB/s')"
    assert f"{Quantity('80 GB').to('GiB'):.1f}" == "74.5 GiB"


def test_gb_is_not_gib_and_gbps_is_not_gbyteps():
    assert Quantity("1 GiB") > Quantity("1 GB")
    assert Quantity("8 Gb/s") == Quantity("1 GB/s")
    assert Quantity("1 GB").in_("GiB") == pytest.approx(1e9 / 2**30)


def test_arithmetic_keeps_dimensions():
    t = Quantity("80 GB") / Quantity("63 GB/s")  # PCIe Gen5 x16 per direction
    assert t.dimension == "time"
    assert t.si == pytest.approx(80 / 63)
    assert (Quantity("80 GB") / Quantity("40 GB")) == 2.0
    assert (2 * Quantity("1 s")).si == 2.0
    with pytest.raises(UnitError):
        Quantity("80 GB") + Quantity("1 GB/s")


def test_errors_are_typed_and_clear():
    with pytest.raises(UnitError) as e:
        Quantity("80 GX")
    assert isinstance(e.value, ValueError)
    assert "unknown unit 'GX'" in str(e.value) and "GB" in str(e.value)
    with pytest.raises(UnitError):
        Quantity("80 GB").to("GB/s")
    with pytest.raises(UnitError):
        Quantity(80)  # a bare number has no unit
    with pytest.raises(UnitError):
        capplan.quantity("3 TB/s", expected=(1, 0, 0, 0), field="/memory")


def test_scenario_accepts_quantities_and_strings():
    accel = {"name": "future-x", "vendor": "generic",
             "memory": {"capacity": Quantity("256 GiB"), "bandwidth": "10 TB/s"},
             "peak_dense_flops": {"bf16": Quantity(3, "PFLOP/s")}}
    r = capplan.estimate({"model": "Llama-3.2-1B", "system": {"accelerator": accel}})
    assert r.memory.capacity_bytes.in_("GiB") == pytest.approx(256.0)


def test_format_count_never_reads_like_bytes():
    from capplan.units import format_count
    assert format_count(70_553_706_496) == "70.55 billion"
    assert format_count(124_439_808) == "124.4 million"
    assert format_count(512) == "512"
