"""Two tiny inline-SVG charts for the HTML report: no plotting dependency, no external files,
so the report stays one self-contained file that opens anywhere."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

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


def histogram(values: Sequence[float], title: str, unit: str = "ms", bins: int = 40) -> str:
    """A distribution as vertical bars; values beyond the 99th percentile share the last bin
    so one slow outlier does not flatten the rest."""
    width, height, left, bottom, top = 640, 220, 48, 36, 28
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(title)}">',
        f'<text x="4" y="16" {_FONT} font-weight="bold">{escape(title)}</text>',
    ]
    if not values:
        parts.append(f'<text x="4" y="{top + 14}" {_FONT}>no data</text></svg>')
        return "".join(parts)
    ordered = sorted(values)
    low, high = ordered[0], ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    span = (high - low) or 1.0
    counts = [0] * bins
    for value in ordered:
        counts[min(bins - 1, int((value - low) / span * bins))] += 1
    plot_w, plot_h = width - left - 12, height - top - bottom
    bar_w = plot_w / bins
    tallest = max(counts)
    for i, count in enumerate(counts):
        h = count / tallest * plot_h
        x0 = low + i * span / bins
        parts.append(
            f'<rect x="{left + i * bar_w:.1f}" y="{top + plot_h - h:.1f}" '
            f'width="{max(1.0, bar_w - 1):.1f}" height="{h:.1f}" fill="{_BAR}">'
            f"<title>{x0:.3g}-{x0 + span / bins:.3g} {unit}: {count}</title></rect>"
        )
    median = ordered[len(ordered) // 2]
    axis_y = top + plot_h
    parts.append(f'<line x1="{left}" y1="{axis_y}" x2="{width - 12}" y2="{axis_y}" stroke="#333"/>')
    for value, anchor in ((low, "start"), (median, "middle"), (high, "end")):
        x = left + (value - low) / span * plot_w
        parts.append(
            f'<text x="{x:.1f}" y="{axis_y + 16}" {_FONT} text-anchor="{anchor}">{value:.3g}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 4}" {_FONT} text-anchor="middle">'
        f"{escape(unit)} (min, median, p99; n={len(ordered)}, max {ordered[-1]:.3g})</text>"
    )
    parts.append(f'<text x="4" y="{top + 10}" {_FONT}>{tallest}</text></svg>')
    return "".join(parts)
