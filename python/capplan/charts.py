"""Inline SVG charts for results (no plotting library needed): stacked bars with labels."""
from __future__ import annotations

import html
from typing import List, Optional, Sequence, Tuple

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"]


def stacked_bar(title: str, parts: Sequence[Tuple[str, float, str]], limit: Optional[Tuple[str, float]] = None,
                highlight: Optional[str] = None, width: int = 560) -> str:
    """One horizontal stacked bar. ``parts`` are (label, value, value text); ``limit`` draws a marker
    (e.g. usable memory); ``highlight`` outlines the named part (the bottleneck)."""
    total = sum(max(0.0, v) for _, v, _ in parts)
    scale_max = max(total, limit[1] if limit else 0.0) or 1.0
    bar_w = width - 20
    x = 10.0
    rects: List[str] = []
    legend: List[str] = []
    for i, (label, value, text) in enumerate(parts):
        w = bar_w * max(0.0, value) / scale_max
        color = PALETTE[i % len(PALETTE)]
        stroke = ' stroke="#000" stroke-width="3"' if label == highlight else ""
        rects.append(f'<rect x="{x:.1f}" y="28" width="{w:.1f}" height="22" fill="{color}"{stroke}>'
                     f'<title>{html.escape(label)}: {html.escape(text)}</title></rect>')
        legend.append(f'<rect x="{10 + (i % 3) * 180}" y="{62 + (i // 3) * 16}" width="10" height="10" fill="{color}"/>'
                      f'<text x="{24 + (i % 3) * 180}" y="{71 + (i // 3) * 16}" font-size="11">'
                      f'{html.escape(label)}: {html.escape(text)}{" ◀ bottleneck" if label == highlight else ""}</text>')
        x += w
    marker = ""
    if limit:
        lx = 10 + bar_w * limit[1] / scale_max
        marker = (f'<line x1="{lx:.1f}" y1="22" x2="{lx:.1f}" y2="56" stroke="#d62728" stroke-width="2"/>'
                  f'<text x="{min(lx, width - 120):.1f}" y="18" font-size="11" fill="#d62728">{html.escape(limit[0])}</text>')
    height = 70 + 16 * ((len(parts) + 2) // 3)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
            f'aria-label="{html.escape(title)}"><text x="10" y="14" font-size="12" font-weight="bold">'
            f'{html.escape(title)}</text>{"".join(rects)}{marker}{"".join(legend)}</svg>')


def line_chart(title: str, x_label: str, y_label: str, series: Sequence[Tuple[str, Sequence[Tuple[float, float]]]],
               width: int = 560, height: int = 300, log_x: bool = False) -> str:
    """A line chart of one or more series of (x, y) points, axes labelled, min/max ticks."""
    import math
    pts = [p for _, s in series for p in s]
    if not pts:
        return ""
    fx = (lambda v: math.log10(v)) if log_x else (lambda v: v)
    xs, ys = [fx(p[0]) for p in pts], [p[1] for p in pts]
    x0, x1 = min(xs), max(xs)
    y0, y1 = 0.0, max(ys) * 1.05 or 1.0
    left, right, top, bottom = 60, 20, 30, 40
    def px(v):
        return left + (fx(v) - x0) / ((x1 - x0) or 1.0) * (width - left - right)
    def py(v):
        return height - bottom - (v - y0) / ((y1 - y0) or 1.0) * (height - top - bottom)
    lines, legend = [], []
    for i, (name, s) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s)
        lines.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        legend.append(f'<text x="{left + 10 + i * 160}" y="{top + 12}" font-size="11" fill="{color}">'
                      f'{html.escape(name)}</text>')
    axes = (f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="#333"/>'
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#333"/>'
            f'<text x="{left}" y="{height - bottom + 14}" font-size="10">{min(p[0] for p in pts):g}</text>'
            f'<text x="{width - right - 40}" y="{height - bottom + 14}" font-size="10">{max(p[0] for p in pts):g}</text>'
            f'<text x="4" y="{top + 4}" font-size="10">{y1:.3g}</text>'
            f'<text x="{width / 2 - 40:.0f}" y="{height - 6}" font-size="11">{html.escape(x_label)}</text>'
            f'<text x="4" y="{height / 2:.0f}" font-size="11">{html.escape(y_label)}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
            f'aria-label="{html.escape(title)}"><text x="{left}" y="16" font-size="12" font-weight="bold">'
            f'{html.escape(title)}</text>{axes}{"".join(lines)}{"".join(legend)}</svg>')
