"""Chart geometry for the templates: numbers only, so the SVG needs no script and no style.

The templates draw what these return; every label they show passes
through the templates' escaping like any other agent-provided text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from beam_agents._instants import representable_ms, utc_text

__all__ = ["bar_chart", "memory_chart", "span", "when"]

_BAR_WIDTH = 420
_ROW = 24
_PLOT_W, _PLOT_H = 560, 160
_LEFT, _BOTTOM, _TOP, _RIGHT = 72, 36, 12, 24
"""Room around the plot for the axes' labels."""
_TICKS = 4


def when(ms: object, *, seconds: bool = True) -> str:
    """Epoch milliseconds as a UTC date and time a person reads ('' for anything else).

    A time outside a `datetime`'s years (`beam.Create` stamps one) reads as
    the nearest date that is, as everywhere else (`beam_agents._instants`).
    """
    if not isinstance(ms, int) or isinstance(ms, bool):
        return ""
    return utc_text(ms, sep=" ", timespec="seconds" if seconds else "minutes") + " UTC"


def span(seconds: object) -> str:
    """A duration in seconds as '1 h 5 min', '3 min 20 s' or '12 s'."""
    if not isinstance(seconds, int | float):
        return ""
    total = round(abs(float(seconds)))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


def _bytes(value: float) -> str:
    if value >= 1024 * 1024:
        return f"{value / (1024 * 1024):.1f} MiB"
    if value >= 1024:
        return f"{value / 1024:.0f} KiB"
    return f"{value:.0f} B"


def bar_chart(title: str, counts: Mapping[str, int]) -> dict[str, Any]:
    """One horizontal bar per label, longest first, scaled to the largest count."""
    top = max(counts.values(), default=0) or 1
    bars = [
        {"label": label, "value": value, "width": round(_BAR_WIDTH * value / top), "y": i * _ROW}
        for i, (label, value) in enumerate(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    ]
    return {"title": title, "bars": bars, "height": max(len(bars), 1) * _ROW}


def memory_chart(lifecycle: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Working-memory bytes over event time, with its axes; None without two samples.

    Records arrive in the order the pipeline emitted them, which is not
    event-time order (an alert buffered behind an approval is triaged after
    later ones): the samples are sorted by event time, or the line would run
    backwards.
    """
    samples = sorted(
        (representable_ms(r["event_time_ms"]), int(r["memory_bytes"]))
        for r in lifecycle
        if isinstance(r.get("event_time_ms"), int) and isinstance(r.get("memory_bytes"), int)
    )
    if len(samples) < 2:
        return None
    start, end = samples[0][0], samples[-1][0]
    duration = max(end - start, 1)
    peak = max(b for _, b in samples) or 1

    def x(t: float) -> float:
        return _LEFT + _PLOT_W * (t - start) / duration

    def y(b: float) -> float:
        return _TOP + _PLOT_H - _PLOT_H * b / peak

    points = " ".join(f"{x(t):.1f},{y(b):.1f}" for t, b in samples)
    x_ticks = [
        {
            "x": round(x(start + duration * i / _TICKS), 1),
            "label": when(start + duration * i // _TICKS, seconds=False)[11:16],
        }
        for i in range(_TICKS + 1)
    ]
    y_ticks = [
        {"y": round(y(peak * i / _TICKS), 1), "label": _bytes(peak * i / _TICKS)}
        for i in range(_TICKS + 1)
    ]
    return {
        "points": points,
        "peak_bytes": peak,
        "minutes": round(duration / 60_000, 1),
        "start": when(start),
        "end": when(end),
        "x_ticks": x_ticks,
        "y_ticks": y_ticks,
        "left": _LEFT,
        "right": _LEFT + _PLOT_W,
        "top": _TOP,
        "bottom": _TOP + _PLOT_H,
        "width": _LEFT + _PLOT_W + _RIGHT,
        "height": _TOP + _PLOT_H + _BOTTOM,
    }
