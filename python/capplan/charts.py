"""Inline SVG charts for results (no plotting library needed): stacked bars with labels."""
from __future__ import annotations

import html
from typing import List, Optional, Sequence, Tuple

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"]


def text_width(text: str, size: float = 11) -> float:
    """A text's width in pixels, estimated (0.6 em a character: a sans-serif's average with digits and capitals),
    to lay labels out without overlap."""
    return 0.6 * size * len(text)


def si_tick(v: float) -> str:
    """A log axis's decade as a person reads it: 1, 10, 100, 1k ... 1P, 0.1, 0.01."""
    import math
    e = round(math.log10(v))
    if e >= 3:
        prefix = "kMGTPE"[min(e // 3, 6) - 1]
        return f"{10 ** (e - 3 * (e // 3)):g}{prefix}"
    return f"{10.0 ** e:g}"


def _flow_legend(items: Sequence[Tuple[str, str]], top: float, width: int) -> Tuple[List[str], float]:
    """(colour, text) legend entries flowed left to right, wrapping before one would cross the right edge; the SVG
    parts and the y below the last line."""
    out, x, y = [], 10.0, top
    for color, text in items:
        w = 14 + text_width(text) + 16
        if x > 10 and x + w > width - 10:
            x, y = 10.0, y + 16
        out.append(f'<rect x="{x:.0f}" y="{y:.0f}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{x + 14:.0f}" y="{y + 9:.0f}" font-size="11">{html.escape(text)}</text>')
        x += w
    return out, y + 16


def stacked_bar(title: str, parts: Sequence[Tuple[str, float, str]], limit: Optional[Tuple[str, float]] = None,
                highlight: Optional[str] = None, width: int = 560) -> str:
    """One horizontal stacked bar. ``parts`` are (label, value, value text); ``limit`` draws a marker
    (e.g. usable memory); ``highlight`` outlines the named part (the bottleneck)."""
    total = sum(max(0.0, v) for _, v, _ in parts)
    scale_max = max(total, limit[1] if limit else 0.0) or 1.0
    bar_w = width - 20
    x = 10.0
    rects: List[str] = []
    legend: List[Tuple[str, str]] = []
    for i, (label, value, text) in enumerate(parts):
        w = bar_w * max(0.0, value) / scale_max
        color = PALETTE[i % len(PALETTE)]
        stroke = ' stroke="#000" stroke-width="3"' if label == highlight else ""
        rects.append(f'<rect x="{x:.1f}" y="28" width="{w:.1f}" height="22" fill="{color}"{stroke}>'
                     f'<title>{html.escape(label)}: {html.escape(text)}</title></rect>')
        legend.append((color, f'{label}: {text}{" ◀ bottleneck" if label == highlight else ""}'))
        x += w
    marker = ""
    if limit:
        lx = 10 + bar_w * limit[1] / scale_max
        name = limit[0]  # right-aligned at the marker when it would cross the right edge
        tx = min(lx, width - 10 - text_width(name))
        marker = (f'<line x1="{lx:.1f}" y1="22" x2="{lx:.1f}" y2="56" stroke="#d62728" stroke-width="2"/>'
                  f'<text x="{max(10.0, tx):.1f}" y="18" font-size="11" fill="#d62728">{html.escape(name)}</text>')
    legend, bottom = _flow_legend(legend, 62, width)
    height = int(bottom) + 4
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
            f'aria-label="{html.escape(title)}"><text x="10" y="14" font-size="12" font-weight="bold">'
            f'{html.escape(title)}</text>{"".join(rects)}{marker}{"".join(legend)}</svg>')


def nice_ticks(low: float, high: float, count: int = 5) -> List[float]:
    """About `count` round values (steps of 1, 2 or 5 times a power of ten) from `low` to `high`."""
    import math
    span = high - low
    if not span > 0:
        return [low]
    raw = span / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(k * power for k in (1, 2, 5, 10) if k * power >= raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def line_chart(title: str, x_label: str, y_label: str, series: Sequence[Tuple[str, Sequence[Tuple[float, float]]]],
               width: int = 560, height: int = 300, log_x: bool = False) -> str:
    """A line chart of one or more series of (x, y) points: a legend flowed above the plot, round ticks with grid
    lines on both axes (decades on a log x axis), the axes named."""
    import math
    pts = [p for _, s in series for p in s]
    if not pts:
        return ""
    fx = (lambda v: math.log10(v)) if log_x else (lambda v: v)
    xs, ys = [fx(p[0]) for p in pts], [p[1] for p in pts]
    x0, x1 = min(xs), max(xs)
    y0, y1 = 0.0, max(ys) * 1.05 or 1.0
    legend, legend_bottom = _flow_legend([(PALETTE[i % len(PALETTE)], name) for i, (name, _) in enumerate(series)],
                                         24, width)
    left, right, top, bottom = 60, 20, int(legend_bottom) + 6, 40
    height = max(height, top + 160)
    def px(v):
        return left + (fx(v) - x0) / ((x1 - x0) or 1.0) * (width - left - right)
    def py(v):
        return height - bottom - (v - y0) / ((y1 - y0) or 1.0) * (height - top - bottom)
    lines = []
    for i, (name, s) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s)
        lines.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
    x_ticks = ([10.0 ** e for e in range(math.ceil(x0), math.floor(x1) + 1)] if log_x
               else nice_ticks(x0, x1))
    ticks = [f'<line x1="{px(v):.1f}" y1="{top}" x2="{px(v):.1f}" y2="{height - bottom}" stroke="#ddd"/>'
             f'<text x="{px(v):.1f}" y="{height - bottom + 13}" font-size="10" text-anchor="middle">'
             f'{si_tick(v) if log_x else f"{v:g}"}</text>' for v in x_ticks]
    ticks += [f'<line x1="{left}" y1="{py(v):.1f}" x2="{width - right}" y2="{py(v):.1f}" stroke="#ddd"/>'
              f'<text x="{left - 4}" y="{py(v) + 3:.1f}" font-size="10" text-anchor="end">{v:g}</text>'
              for v in nice_ticks(y0, y1)]
    middle = (top + height - bottom) / 2
    axes = ("".join(ticks) +
            f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="#333"/>'
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#333"/>'
            f'<text x="{(left + width - right) / 2:.0f}" y="{height - 6}" font-size="11" text-anchor="middle">'
            f'{html.escape(x_label)}</text>'
            f'<text x="12" y="{middle:.0f}" font-size="11" text-anchor="middle" transform="rotate(-90 12 {middle:.0f})">'
            f'{html.escape(y_label)}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
            f'aria-label="{html.escape(title)}"><text x="10" y="16" font-size="12" font-weight="bold">'
            f'{html.escape(title)}</text>{axes}{"".join(lines)}{"".join(legend)}</svg>')


def roofline_chart(title: str, peak: float, bandwidth: float, points: Sequence[Tuple[str, str, float, float]],
                   attainable: Optional[Tuple[float, float]] = None, width: int = 560, height: int = 320,
                   labels: Tuple[str, str] = ("FLOP per byte", "FLOP/s")) -> str:
    """A log-log roofline (Williams et al. 2009): the roof min(peak, bandwidth x intensity), the
    roof the model attains (``attainable`` = (flops, bytes per second), dashed) and one dot per
    (group, label, intensity, attained FLOP/s) point; groups get colours (prefill, decode)."""
    import math
    pts = [p for p in points if p[2] > 0 and p[3] > 0]
    if not pts or peak <= 0 or bandwidth <= 0:
        return ""
    ridge = peak / bandwidth
    x0 = math.log10(min(min(p[2] for p in pts), ridge) / 2)
    x1 = math.log10(max(max(p[2] for p in pts), ridge) * 2)
    y1 = math.log10(peak * 2)
    y0 = math.log10(min(min(p[3] for p in pts), bandwidth * 10 ** x0) / 2)
    left, right, top, bottom = 60, 20, 30, 40
    def px(v):
        return left + (math.log10(v) - x0) / (x1 - x0) * (width - left - right)
    def py(v):
        return height - bottom - (math.log10(v) - y0) / (y1 - y0) * (height - top - bottom)
    def roof(flops, bw, style):
        xa, xr, xb = 10 ** x0, flops / bw, 10 ** x1
        return (f'<polyline points="{px(xa):.1f},{py(bw * xa):.1f} {px(xr):.1f},{py(flops):.1f} '
                f'{px(xb):.1f},{py(flops):.1f}" fill="none" stroke="#333" stroke-width="2"{style}/>')
    parts = [roof(peak, bandwidth, "")]
    if attainable:
        parts.append(roof(attainable[0], attainable[1], ' stroke-dasharray="5,4"'))
    groups = list(dict.fromkeys(p[0] for p in pts))
    placed: List[Tuple[float, float, float]] = []  # (x, y, width) of the point names drawn
    for group, label, x, y in pts:
        color = PALETTE[groups.index(group) % len(PALETTE)]
        cx, cy = px(x), py(y)
        parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="{color}">'
                     f'<title>{html.escape(group)} {html.escape(label)}: {x:.3g} FLOP/B, {y:.3g} FLOP/s</title></circle>')
        # Each point named by its operator, beside it, unless the name would cover one already written or leave
        # the plot (its tooltip still names it).
        w = text_width(label, 9)
        tx = cx + 6 if cx + 6 + w <= width - right else cx - 6 - w
        if tx >= left and not any(abs(cy - py_) < 10 and tx < px_ + pw and px_ < tx + w for px_, py_, pw in placed):
            placed.append((tx, cy, w))
            parts.append(f'<text x="{tx:.1f}" y="{cy + 3:.1f}" font-size="9" fill="{color}">{html.escape(label)}</text>')
    legend = "".join(f'<text x="{left + 10 + i * 120}" y="{top + 12}" font-size="11" '
                     f'fill="{PALETTE[i % len(PALETTE)]}">● {html.escape(g)}</text>' for i, g in enumerate(groups))
    # Ticks at every power of ten on both log axes, with light grid lines.
    ticks = []
    for e in range(math.ceil(x0), math.floor(x1) + 1):
        v = px(10.0 ** e)
        ticks.append(f'<line x1="{v:.1f}" y1="{top}" x2="{v:.1f}" y2="{height - bottom}" stroke="#ddd"/>'
                     f'<text x="{v:.1f}" y="{height - bottom + 13}" font-size="10" text-anchor="middle">'
                     f'{si_tick(10.0 ** e)}</text>')
    for e in range(math.ceil(y0), math.floor(y1) + 1):
        v = py(10.0 ** e)
        ticks.append(f'<line x1="{left}" y1="{v:.1f}" x2="{width - right}" y2="{v:.1f}" stroke="#ddd"/>'
                     f'<text x="{left - 4}" y="{v + 3:.1f}" font-size="10" text-anchor="end">{si_tick(10.0 ** e)}</text>')
    axes = ("".join(ticks) +
            f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="#333"/>'
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#333"/>'
            f'<text x="{(left + width - right) / 2:.0f}" y="{height - 6}" font-size="11" text-anchor="middle">'
            f'{html.escape(labels[0])} (log)</text>'
            f'<text x="12" y="{(top + height - bottom) / 2:.0f}" font-size="11" text-anchor="middle" '
            f'transform="rotate(-90 12 {(top + height - bottom) / 2:.0f})">{html.escape(labels[1])} (log)</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
            f'aria-label="{html.escape(title)}"><text x="{left}" y="16" font-size="12" font-weight="bold">'
            f'{html.escape(title)}</text>{axes}{"".join(parts)}{legend}</svg>')


def bar_chart(title: str, items: Sequence[Tuple[str, float, str]], highlight: Optional[str] = None,
              width: int = 560) -> str:
    """One horizontal bar per (label, value, value text), on a common scale; ``highlight`` outlines one."""
    top = max((v for _, v, _ in items), default=0.0) or 1.0
    # The label column as wide as its longest label; the chart as wide as the longest bar with its value.
    bars_x = 20 + max((text_width(label) for label, _, _ in items), default=150.0)
    width = max(width, int(bars_x + 300 + 12 + max((text_width(t + " ◀") for _, _, t in items), default=0.0)))
    rows = []
    for i, (label, value, text) in enumerate(items):
        y = 26 + 24 * i
        w = 300 * max(0.0, value) / top
        stroke = ' stroke="#000" stroke-width="3"' if label == highlight else ""
        rows.append(f'<text x="10" y="{y + 13}" font-size="11">{html.escape(label)}</text>'
                    f'<rect x="{bars_x:.0f}" y="{y}" width="{w:.1f}" height="18" fill="{PALETTE[i % len(PALETTE)]}"{stroke}/>'
                    f'<text x="{bars_x + 6 + w:.1f}" y="{y + 13}" font-size="11">{html.escape(text)}'
                    f'{" ◀" if label == highlight else ""}</text>')
    height = 36 + 24 * len(items)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
            f'aria-label="{html.escape(title)}"><text x="10" y="14" font-size="12" font-weight="bold">'
            f'{html.escape(title)}</text>{"".join(rows)}</svg>')


def pyplot():
    """matplotlib.pyplot, or an ImportError that says how to get it (plot() methods are optional)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError("plot() needs matplotlib: pip install \"capplan[notebook]\"; the HTML view "
                          "(.html(), shown by Jupyter) draws the same charts without it") from e
    return plt


def plot_bars(title: str, items: Sequence[Tuple[str, float]], unit: str, highlight: Optional[str] = None):
    """The matplotlib twin of bar_chart: one horizontal bar per (label, value), ``highlight`` outlined."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.5 + 0.4 * max(1, len(items))))
    labels = [label for label, _ in items][::-1]
    values = [value for _, value in items][::-1]
    bars = ax.barh(labels, values, color=[PALETTE[i % len(PALETTE)] for i in range(len(items))][::-1])
    for bar, label in zip(bars, labels):
        if label == highlight:
            bar.set_edgecolor("black")
            bar.set_linewidth(3)
    ax.set_xlabel(unit)
    ax.set_title(title)
    fig.tight_layout()
    return fig
