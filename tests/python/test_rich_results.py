"""Every result type shows itself: a readable repr, and a _repr_html_ that is well-formed HTML with
inline SVG charts (issue 7.1), labelled in Chinese with lang="zh" (issue 7.5)."""
from html.parser import HTMLParser

import pytest

import capplan

VOID = {"rect", "line", "br", "polyline", "circle"}


class _Checker(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.svgs, self.outlined = [], 0, 0

    def handle_starttag(self, tag, attrs):
        self.svgs += tag == "svg"
        self.outlined += dict(attrs).get("stroke-width") == "3"
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.svgs += tag == "svg"
        self.outlined += dict(attrs).get("stroke-width") == "3"

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-3:])
        self.stack.pop()


def _check(html_text):
    c = _Checker()
    c.feed(html_text)
    c.close()
    assert c.stack == [], c.stack
    return c


def test_collective_result_html_has_the_tier_chart_with_the_slowest_outlined():
    r = capplan.collective("all_reduce", "1GiB", system={"preset": "DGX-H100", "count": 16})
    c = _check(r._repr_html_())
    assert c.svgs == 1 and c.outlined == 1
    # Two nodes: NVLink within, InfiniBand across; the model's time is latency + the slowest tier.
    tiers = r._data["tiers"]
    assert r.time.si == pytest.approx(max(t["time_s"] for t in tiers) + r._data["latency_s"])
    assert "IB-NDR" in r._repr_html_() and "延迟" in r.html("zh")
    assert repr(r).startswith("CollectiveResult(all_reduce of 1.074 GB on 16 GPUs")  # 1 GiB, shown in GB


def test_sizing_result_is_a_dict_with_a_table_and_a_cost_chart():
    r = capplan.size_inference("Llama-3.1-8B", 20, 1000, 200, accelerators=["H100-SXM", "L40S"],
                               prices={"H100-SXM": 3.0, "L40S": 1.0})
    assert isinstance(r, dict) and r["options"]  # the dict interface scripts rely on is kept
    costs = [o["cost_per_hour"] for o in r["options"]]
    assert costs == sorted(costs)
    c = _check(r._repr_html_())
    assert c.svgs == 1 and c.outlined == 1   # the cheapest option outlined
    assert repr(r).splitlines()[1].split()[:2] == ["accelerator", "count"]
    assert "每小时成本" in r.html("zh")


def test_training_search_result_shows_the_fastest_layouts_and_their_step():
    r = capplan.search_training({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 16},
                                 "training": {"seq_len": 4096, "global_batch": 256}}, top_k=3)
    assert len(r["best"]) == 3
    steps = [b["step_time_s"] for b in r["best"]]
    assert steps == sorted(steps)
    c = _check(r._repr_html_())
    assert c.svgs == 1 and c.outlined == 1   # the largest exposed term outlined
    assert repr(r).count("\n") == 4 and "fit memory" in repr(r)
    assert "最快布局" in r.html("zh")


def test_estimate_result_html_for_training_has_memory_and_chain():
    r = capplan.estimate({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
                          "parallelism": {"dp": 8}, "training": {"seq_len": 4096, "global_batch": 64}})
    c = _check(r._repr_html_())
    assert c.svgs == 3 and c.outlined == 2   # memory per device; the step's chain and the weights' load, bottlenecks outlined
    assert "one step through the chain" in r.html() and "roofline" not in r.to_dict()  # the roofline is for inference
    assert "training step" in repr(r)


def test_every_summary_row_label_has_a_chinese_label():
    from capplan.result import _ZH_LABELS
    scenarios = [capplan.default_scenario(),
                 {"model": "Llama-3.1-70B", "system": {"preset": "DGX-H100", "count": 64},
                  "parallelism": {"tp": 8, "pp": 2, "dp": 4}, "training": {"seq_len": 4096, "global_batch": 256,
                                                                          "tokens": 1e12, "zero": 1}}]
    for sc in scenarios:
        r = capplan.estimate(sc)
        labels = {row[0] for row in r.rows()}
        assert labels <= set(_ZH_LABELS), labels - set(_ZH_LABELS)
        zh = r.html("zh")
        assert all(f">{_ZH_LABELS[a]}<" in zh for a in labels)


def test_plot_methods_draw_with_matplotlib_and_outline_the_slowest_or_cheapest():
    matplotlib = pytest.importorskip("matplotlib")  # capplan[notebook]
    matplotlib.use("Agg")
    c = capplan.collective("all_reduce", "1GiB", system={"preset": "DGX-H100", "count": 16})
    ax = c.plot().axes[0]
    slowest = max(t["time_s"] for t in c._data["tiers"]) * 1e6
    outlined = [p.get_width() for p in ax.patches if p.get_linewidth() == 3]
    assert outlined == [pytest.approx(slowest)]  # the slowest tier, in µs, outlined
    s = capplan.size_inference("Llama-3.1-8B", 20, 1000, 200, accelerators=["H100-SXM", "L40S"],
                               prices={"H100-SXM": 3.0, "L40S": 1.0})
    assert len(s.plot().axes[0].patches) == len(s["options"])
    t = capplan.search_training({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 16},
                                 "training": {"seq_len": 4096, "global_batch": 256}}, top_k=3)
    assert sorted(p.get_width() for p in t.plot().axes[0].patches) == sorted(b["step_time_s"] for b in t["best"])


def test_plot_without_matplotlib_says_how_to_get_it(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"capplan\[notebook\]"):
        capplan.estimate(capplan.default_scenario()).plot()


def test_catalog_records_show_a_table_with_their_source():
    h200 = capplan.accelerator("H200")._repr_html_()
    _check(h200)
    # Ridge point of the roofline = peak / bandwidth: 989.5 TFLOP/s dense BF16 / 4.8 TB/s = 206 FLOP/byte.
    assert "ridge 206 FLOP/byte" in h200 and "source:" in h200
    llama = capplan.model("Llama-3.1-8B")._repr_html_()
    _check(llama)
    # KV per token: 2 (K, V) x 32 layers x 8 KV heads x 128 dims x 2 bytes = 131,072 B.
    assert "131.1 kB" in llama
    dgx = capplan.system("DGX-H100")._repr_html_()
    _check(dgx)
    assert "NVLink-4 (nvswitch, domain 8)" in dgx


def _texts(svg):
    """(x, y, font size, anchor, text) of every <text> in an SVG."""
    import re
    out = []
    for attrs, text in re.findall(r"<text ([^>]*)>([^<]*)</text>", svg):
        a = dict(re.findall(r'([\w-]+)="([^"]*)"', attrs))
        out.append((float(a["x"]), float(a["y"]), float(a.get("font-size", 11)), a.get("text-anchor", "start"), text))
    return out


def test_charts_name_the_roofline_points_tick_every_decade_and_keep_labels_apart_and_inside():
    import html as html_module
    from capplan.charts import bar_chart, stacked_bar, text_width
    r = capplan.estimate(capplan.default_scenario())
    roof = next(svg for svg in r.charts_svg() if "roofline" in svg)
    texts = [html_module.unescape(t[4]) for t in _texts(roof)]
    ops = {o["op"] for o in r.to_dict()["roofline"]["ops"]}
    assert len(ops & set(texts)) >= 2  # points named by their operator
    # Decade ticks read as numbers with SI prefixes: an H100's 989.5 TFLOP/s roof lies between 100T and 1P.
    assert "100T" in texts and "1P" in texts and "10" in texts
    # Labels at one height do not overlap, and every left-anchored label ends inside the chart.
    width = 560
    for svg in [roof, *r.charts_svg()]:
        spans = sorted((x, x + text_width(t, size), y) for x, y, size, anchor, t in _texts(svg) if anchor == "start")
        assert all(end <= width + 1 for _, end, _ in spans), svg[:80]
    legend = stacked_bar("memory", [(f"part number {i} with a long name", 1.0, "12.34 GB") for i in range(7)],
                         ("usable 76.5 GB", 7.5))
    spans = sorted((y, x, x + text_width(t, size)) for x, y, size, anchor, t in _texts(legend) if y > 60)
    for (y1, a1, b1), (y2, a2, b2) in zip(spans, spans[1:]):
        assert y1 != y2 or b1 <= a2, (spans,)
    assert all(b <= width - 10 for _, _, b in spans)
    # A line chart's legend flows above its plot, and its axes tick at round values (here 0, 20, 40, 60 ms).
    from capplan.charts import line_chart, nice_ticks
    assert nice_ticks(0, 69.6) == [0, 20, 40, 60] and nice_ticks(1, 40) == [10, 20, 30, 40]
    names = ["A100-80GB-SXM with a long name", "H100-SXM with a long name", "H200 with a long name", "L40S, last"]
    lines = line_chart("p99 TPOT by users", "users", "p99 TPOT (ms)",
                       [(n, [(u, 10 + k * u) for u in range(1, 41)]) for k, n in enumerate(names)])
    entries = sorted((y, x, x + text_width(t, size)) for x, y, size, anchor, t in _texts(lines) if t in names)
    assert len(entries) == 4 and all(b <= width - 10 for _, _, b in entries)
    for (y1, a1, b1), (y2, a2, b2) in zip(entries, entries[1:]):
        assert y1 != y2 or b1 <= a2
    assert {"0", "20", "40"} <= {t for *_, t in _texts(lines)}
    # A bar chart's labels end before its bars start, however long.
    bars = bar_chart("options", [("8x H100-SXM tp=2 with a long explanation", 3.0, "$3/h"), ("1x B200", 1.0, "$1/h")])
    starts = [float(x) for x in __import__("re").findall(r'<rect x="([\d.]+)"', bars)]
    assert min(starts) >= 10 + text_width("8x H100-SXM tp=2 with a long explanation")


def test_plot_shows_memory_in_the_unit_of_the_tables():
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    fig = capplan.estimate(capplan.default_scenario()).plot()
    assert fig.axes[0].get_xlabel() == "GB"  # the tables and the HTML view print GB (10^9 B), not GiB
    names = {t.get_text() for t in fig.axes[-1].texts}
    assert {o["op"] for o in capplan.estimate(capplan.default_scenario()).to_dict()["roofline"]["ops"]} & names
