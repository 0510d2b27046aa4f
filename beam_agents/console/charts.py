"""Chart geometry for the templates: numbers only, so the SVG needs no script and no style.

The templates draw what these return; every label they show passes
through the templates' escaping like any other agent-provided text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["bar_chart", "memory_chart"]

_BAR_WIDTH = 420
_ROW = 24
_PLOT_W, _PLOT_H = 640, 160


def bar_chart(title: str, counts: Mapping[str, int]) -> dict[str, Any]:
    """One horizontal bar per label, longest first, scaled to the largest count."""
    top = max(counts.values(), default=0) or 1
    bars = [
        {"label": label, "value": value, "width": round(_BAR_WIDTH * value / top), "y": i * _ROW}
        for i, (label, value) in enumerate(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    ]
    return {"title": title, "bars": bars, "height": max(len(bars), 1) * _ROW}


def memory_chart(lifecycle: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Working-memory bytes over event time, as polyline points; None without two samples."""
    samples = [
        (int(r["event_time_ms"]), int(r["memory_bytes"]))
        for r in lifecycle
        if isinstance(r.get("event_time_ms"), int) and isinstance(r.get("memory_bytes"), int)
    ]
    if len(samples) < 2:
        return None
    start, end = samples[0][0], max(t for t, _ in samples)
    span = max(end - start, 1)
    peak = max(b for _, b in samples) or 1
    points = " ".join(
        f"{_PLOT_W * (t - start) / span:.1f},{_PLOT_H - _PLOT_H * b / peak:.1f}" for t, b in samples
    )
    return {
        "points": points,
        "peak_bytes": peak,
        "minutes": round(span / 60_000, 1),
        "width": _PLOT_W,
        "height": _PLOT_H,
    }
