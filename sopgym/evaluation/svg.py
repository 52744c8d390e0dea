"""Two tiny inline-SVG charts for the HTML report: no plotting dependency, no external files,
so the report stays one self-contained file that opens anywhere."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

from sopgym.evaluation.stats import quantile

_FONT = 'font-family="system-ui,sans-serif" font-size="12"'
_BAR = "#4c78a8"


def bar_chart(
    items: Sequence[tuple[str, float]],
    title: str,
    fmt: Callable[[float], str] = lambda v: f"{v:.0%}",
    maximum: float | None = None,
    width: int = 640,
) -> str:
    """Horizontal bars, one per (label, value); ``maximum`` fixes the scale (e.g. 1.0)."""
    row, label_w, top = 22, 200, 28
    height = top + row * max(1, len(items)) + 8
    top_value = maximum or max((v for _, v in items), default=0.0) or 1.0
    plot_w = width - label_w - 70
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(title)}">',
        f'<text x="4" y="16" {_FONT} font-weight="bold">{escape(title)}</text>',
    ]
    if not items:
        parts.append(f'<text x="4" y="{top + 14}" {_FONT}>no data</text>')
    for i, (label, value) in enumerate(items):
        y = top + i * row
        length = max(0.0, min(1.0, value / top_value)) * plot_w
        parts += [
            f'<text x="{label_w - 6}" y="{y + 14}" {_FONT} text-anchor="end">'
            f"{escape(label)}</text>",
            f'<rect x="{label_w}" y="{y + 3}" width="{length:.1f}" height="{row - 6}" '
            f'fill="{_BAR}"><title>{escape(label)}: {escape(fmt(value))}</title></rect>',
            f'<text x="{label_w + length + 4:.1f}" y="{y + 14}" {_FONT}>'
            f"{escape(fmt(value))}</text>",
        ]
    parts.append("</svg>")
    return "".join(parts)


PERCENTILES = (0.5, 0.75, 0.9, 0.95, 0.99)


def percentile_chart(values: Sequence[float], title: str, unit: str = "ms") -> str:
    """A distribution as its percentiles (p50 ... p99 and the maximum), one bar each on a
    log axis: tails that are orders of magnitude apart stay readable and no label overlaps."""
    if not values:
        return bar_chart([], title)
    ordered = sorted(values)
    points = [(f"p{q * 100:g}", float(quantile(ordered, q) or 0.0)) for q in PERCENTILES]
    points.append(("max", ordered[-1]))
    floor = min(v for v in ordered if v > 0) / 2 if any(v > 0 for v in ordered) else 1.0
    top = math.log10(max(ordered[-1], floor) / floor) or 1.0
    return bar_chart(
        [(label, math.log10(max(value, floor) / floor)) for label, value in points],
        f"{title} (n={len(ordered)}; log axis)",
        fmt=_unlog(floor, unit),
        maximum=top,
    )


def _unlog(floor: float, unit: str) -> Callable[[float], str]:
    """The label of a bar drawn at log10(value / floor): the value itself."""
    return lambda length: f"{floor * 10**length:.3g} {unit}"
