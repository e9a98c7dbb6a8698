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
