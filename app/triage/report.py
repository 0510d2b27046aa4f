"""report.html: one self-contained page of charts, drawn as inline SVG from the run's records.

No script, no stylesheet or font from anywhere else: the page opens offline
from a file. Every chart is a `<figure class="chart" id="chart-...">` whose
SVG has a title, labelled axes with units, and a `<title>` element for
screen readers; `CHART_IDS` lists them (the report test checks each).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any, Final

from beam_agents.memory import SOFT_CAP_BYTES

__all__ = ["CHART_IDS", "render_report"]

CHART_IDS = (
    "chart-funnel",
    "chart-outcomes",
    "chart-approvals",
    "chart-follow-ups",
    "chart-deliveries",
    "chart-memory",
    "chart-errors",
    "chart-model",
    "chart-tokens",
    "chart-rows",
    "chart-recall",
)
_W, _H = 900, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 210, 40, 44, 52
_ROW = 40
_PALETTE = ("#2563eb", "#16a34a", "#d97706", "#9333ea", "#dc2626", "#0891b2", "#4b5563")
_MARKERS = {
    "compacted": ("#dc2626", "tier-1 compaction"),
    "summarized": ("#d97706", "tier-2 summary"),
    "ttl_expired": ("#4b5563", "TTL expiry + flush to long-term"),
}
_BUSIEST = 3
_MARK_GAP = 9
"""Pixels below which markers of one kind are drawn as one."""
_PANEL_H = 150
_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto;
       max-width: 960px; color: #111827; background: #fff; }
h1 { font-size: 24px; margin-bottom: 4px; } .lede { color: #4b5563; margin-top: 0; }
.kpis { display: grid; grid-template-columns: repeat(4, 1fr); gap: 8px; margin: 14px 0 26px; }
.kpi { border: 1px solid #e5e7eb; border-radius: 6px; padding: 6px 10px; }
.kpi b { display: block; font-size: 18px; font-variant-numeric: tabular-nums; }
.kpi span { color: #4b5563; font-size: 12px; }
.kpi span.label { color: #111827; font-size: 13px; font-weight: 600; display: block; }
figure.chart { margin: 0 0 26px; } figcaption { color: #4b5563; font-size: 13px; }
svg text { font-family: inherit; fill: #111827; } svg .axis { stroke: #9ca3af; }
svg .grid { stroke: #e5e7eb; } svg .muted { fill: #4b5563; font-size: 12px; }
table { border-collapse: collapse; margin: 0 0 26px; font-size: 13px; }
caption { text-align: left; color: #4b5563; padding-bottom: 6px; }
th, td { border-bottom: 1px solid #e5e7eb; padding: 4px 8px; text-align: left;
         vertical-align: top; }
"""


def _nice_max(value: float) -> float:
    """A round axis maximum at or above `value` (1, 2 or 5 times a power of ten)."""
    if value <= 0:
        return 1.0
    power = 1.0
    while power * 10 <= value:
        power *= 10
    while power > value:
        power /= 10
    for step in (1, 2, 5, 10):
        if step * power >= value:
            return step * power
    return 10 * power


def _tick(value: float) -> str:
    """An axis tick label: thousands separated, a decimal only when it is needed."""
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def _svg_open(chart_id: str, title: str, height: int = _H) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {height}" width="{_W}" '
        f'height="{height}" role="img" aria-labelledby="{chart_id}-title">',
        f'<title id="{chart_id}-title">{escape(title)}</title>',
        f'<text x="{_W / 2}" y="22" text-anchor="middle" font-size="16" font-weight="600">'
        f"{escape(title)}</text>",
    ]


def _figure(chart_id: str, svg: list[str], caption: str) -> str:
    return (
        f'<figure class="chart" id="{chart_id}">{"".join(svg)}</svg>'
        f"<figcaption>{escape(caption)}</figcaption></figure>"
    )


def _bars(
    chart_id: str,
    title: str,
    items: Sequence[tuple[str, int]],
    unit: str,
    caption: str,
    *,
    category: str,
) -> str:
    """A horizontal bar chart: `category` values down the left, `unit` along the bottom."""
    rows = list(items) or [("(none)", 0)]
    height = _TOP + _BOTTOM + _ROW * len(rows)
    svg = _svg_open(chart_id, title, height)
    plot_w = _W - _LEFT - _RIGHT
    plot_h = height - _TOP - _BOTTOM
    top = _nice_max(max(v for _, v in rows))
    for i in range(6):
        x = _LEFT + plot_w * i / 5
        svg.append(
            f'<line class="grid" x1="{x:.1f}" y1="{_TOP}" x2="{x:.1f}" y2="{_TOP + plot_h}"/>'
        )
        svg.append(
            f'<text class="muted" x="{x:.1f}" y="{_TOP + plot_h + 16}" text-anchor="middle">'
            f"{_tick(top * i / 5)}</text>"
        )
    band = plot_h / len(rows)
    for i, (label, value) in enumerate(rows):
        y = _TOP + band * i + band * 0.2
        w = plot_w * value / top
        color = _PALETTE[i % len(_PALETTE)]
        svg.append(
            f'<rect x="{_LEFT}" y="{y:.1f}" width="{w:.1f}" height="{band * 0.6:.1f}" '
            f'fill="{color}"><title>{escape(label)}: {value:,}</title></rect>'
        )
        svg.append(
            f'<text x="{_LEFT - 8}" y="{y + band * 0.3 + 4:.1f}" text-anchor="end">'
            f"{escape(label)}</text>"
        )
        svg.append(
            f'<text class="muted" x="{_LEFT + w + 6:.1f}" y="{y + band * 0.3 + 4:.1f}">'
            f"{value:,}</text>"
        )
    svg.append(
        f'<line class="axis" x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{_TOP + plot_h}"/>'
        f'<line class="axis" x1="{_LEFT}" y1="{_TOP + plot_h}" x2="{_LEFT + plot_w}" '
        f'y2="{_TOP + plot_h}"/>'
    )
    svg.append(
        f'<text x="{_LEFT + plot_w / 2}" y="{height - 12}" text-anchor="middle" '
        f'class="axis-label">{escape(unit)}</text>'
        f'<text x="{_LEFT - 8}" y="{_TOP - 6}" text-anchor="end" class="muted axis-label">'
        f"{escape(category)}</text>"
    )
    return _figure(chart_id, svg, caption)


@dataclass(frozen=True)
class _Band:
    """Where one service's panel sits in the memory chart, and its scales."""

    top: float
    x_max: float
    y_max: float
    left: int = 84
    plot_w: int = _W - 84 - _RIGHT
    plot_h: int = _PANEL_H

    def xy(self, hours: float, kib: float) -> tuple[float, float]:
        """The point of (event hours, KiB) in SVG coordinates."""
        return (
            self.left + self.plot_w * hours / self.x_max,
            self.top + self.plot_h * (1 - kib / self.y_max),
        )


def _panel(
    svg: list[str],
    top: float,
    service: str,
    points: Sequence[tuple[float, float]],
    marks: Sequence[tuple[str, float, float]],
    x_max: float,
    color: str,
) -> None:
    """One service's memory curve in a band of the chart, on its own KiB scale."""
    peak = max((k for _, k in points), default=0.0)
    shows_cap = peak > SOFT_CAP_BYTES / 1024 * 0.5
    y_max = _nice_max(max(peak, SOFT_CAP_BYTES / 1024 if shows_cap else 0.0) * 1.05)
    band = _Band(top=top, x_max=x_max, y_max=y_max)
    _panel_grid(svg, band)
    if shows_cap:
        _panel_soft_cap(svg, band)
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in (band.xy(h, k) for h, k in points))
    svg.append(
        f'<polyline fill="none" stroke="{color}" stroke-width="1.6" points="{line}">'
        f"<title>{escape(service)}</title></polyline>"
    )
    _panel_marks(svg, band, marks)
    _panel_frame(svg, band, service, color)


def _panel_grid(svg: list[str], band: _Band) -> None:
    """Five KiB grid lines with their ticks, and one line every two hours."""
    left, top, plot_w, plot_h = band.left, band.top, band.plot_w, band.plot_h
    for i in range(5):
        _, gy = band.xy(0, band.y_max * i / 4)
        svg.append(
            f'<line class="grid" x1="{left}" y1="{gy:.1f}" x2="{left + plot_w}" y2="{gy:.1f}"/>'
            f'<text class="muted" x="{left - 6}" y="{gy + 4:.1f}" text-anchor="end">'
            f"{_tick(band.y_max * i / 4)}</text>"
        )
    for hour in range(0, int(band.x_max) + 1, 2):
        gx, _ = band.xy(hour, 0)
        svg.append(
            f'<line class="grid" x1="{gx:.1f}" y1="{top}" x2="{gx:.1f}" y2="{top + plot_h}"/>'
            f'<text class="muted" x="{gx:.1f}" y="{top + plot_h + 15}" text-anchor="middle">'
            f"{hour}</text>"
        )


def _panel_soft_cap(svg: list[str], band: _Band) -> None:
    """The soft cap as a dashed red line, for a service that came near it."""
    left, plot_w = band.left, band.plot_w
    _, cap_y = band.xy(0, SOFT_CAP_BYTES / 1024)
    svg.append(
        f'<line x1="{left}" y1="{cap_y:.1f}" x2="{left + plot_w}" y2="{cap_y:.1f}" '
        f'stroke="#dc2626" stroke-dasharray="6 4"/>'
        f'<text x="{left + plot_w - 4}" y="{cap_y - 5:.1f}" text-anchor="end" fill="#dc2626" '
        f'font-size="12">soft cap ({SOFT_CAP_BYTES // 1024} KiB)</text>'
    )


def _panel_marks(svg: list[str], band: _Band, marks: Sequence[tuple[str, float, float]]) -> None:
    """A marker per compaction, summary and expiry, where it happened.

    A busy service summarizes every few minutes: markers of one kind closer
    than `_MARK_GAP` pixels are drawn as one, whose tooltip counts them, so
    they read as separate events instead of one smeared band.
    """
    groups: list[tuple[str, float, float, int, float]] = []  # kind, hours, KiB, count, last h
    for kind, hours, kib in sorted(marks, key=lambda m: (m[0], m[1])):
        if groups and groups[-1][0] == kind:
            first_kind, first_h, first_kib, count, _ = groups[-1]
            gap = band.xy(hours, 0)[0] - band.xy(first_h, 0)[0]
            if gap < _MARK_GAP:
                groups[-1] = (first_kind, first_h, max(first_kib, kib), count + 1, hours)
                continue
        groups.append((kind, hours, kib, 1, hours))
    for kind, hours, kib, count, last in groups:
        marker_color, label = _MARKERS[kind]
        x, y = band.xy(hours, kib)
        if kind == "compacted":
            tag, attrs = "path", f'd="M{x - 5:.1f},{y - 9:.1f} h10 l-5,8 z"'
        elif kind == "summarized":
            tag, attrs = "circle", f'cx="{x:.1f}" cy="{y:.1f}" r="3"'
        else:
            tag, attrs = "rect", f'x="{x - 3.5:.1f}" y="{y - 7:.1f}" width="7" height="7"'
        when = f"at {hours:.2f} h" if count == 1 else f"x{count}, {hours:.2f} to {last:.2f} h"
        svg.append(
            f'<{tag} {attrs} fill="{marker_color}"><title>{escape(label)} {when}</title></{tag}>'
        )


def _panel_frame(svg: list[str], band: _Band, service: str, color: str) -> None:
    """The panel's axes, its service name and its unit."""
    left, top, plot_w, plot_h = band.left, band.top, band.plot_w, band.plot_h
    svg.append(
        f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}"/>'
        f'<line class="axis" x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" '
        f'y2="{top + plot_h}"/>'
        f'<text x="{left + 8}" y="{top + 14}" font-weight="600" fill="{color}">'
        f"{escape(service)}</text>"
        f'<text transform="translate(20 {top + plot_h / 2}) rotate(-90)" text-anchor="middle" '
        f'font-size="12">memory (KiB)</text>'
    )


def _memory_chart(lifecycle: Sequence[dict[str, Any]], start_ms: int) -> str:
    """Working-memory bytes over event time for the busiest services, one panel each."""
    chart_id = "chart-memory"
    title = "Working memory of the busiest services over event time"
    activity = Counter(r["service"] for r in lifecycle if r["kind"] == "activated")
    busiest = [s for s, _ in sorted(activity.items(), key=lambda kv: (-kv[1], kv[0]))][:_BUSIEST]
    series: dict[str, list[tuple[float, float]]] = defaultdict(list)
    marks: dict[str, list[tuple[str, float, float]]] = defaultdict(list)
    # The axis ends at the last alert's hour: expiries after it (the drain) sit on its edge.
    alerts_end = max((r["event_time_ms"] for r in lifecycle if r["kind"] == "activated"), default=0)
    x_max = float(max(-(-(alerts_end - start_ms) // 3_600_000), 1))
    for r in lifecycle:
        if r["service"] not in busiest:
            continue
        hours = min((r["event_time_ms"] - start_ms) / 3_600_000, x_max)
        curve = series[r["service"]]
        if r["kind"] in _MARKERS:
            # An expiry marks the height it wiped; the others the height they left.
            at = curve[-1][1] if r["kind"] == "ttl_expired" and curve else 0.0
            if r["kind"] != "ttl_expired":
                at = r["memory_bytes"] / 1024
            marks[r["service"]].append((r["kind"], hours, at))
        if r["kind"] in ("completed", "ttl_expired"):
            if curve:  # memory holds its size until the next commit: draw steps
                curve.append((hours, curve[-1][1]))
            curve.append((hours, r["memory_bytes"] / 1024))
    panels = max(len(busiest), 1)
    height = _TOP + panels * (_PANEL_H + 34) + 44
    svg = _svg_open(chart_id, title, height)
    for i, service in enumerate(busiest):
        top = _TOP + i * (_PANEL_H + 34)
        _panel(svg, top, service, series[service], marks[service], x_max, _PALETTE[i])
    axis_y = _TOP + panels * (_PANEL_H + 34) + 4
    svg.append(
        f'<text x="{84 + (_W - 84 - _RIGHT) / 2}" y="{axis_y}" text-anchor="middle" '
        f'class="axis-label">event time (hours since the first alert)</text>'
    )
    lx, ly = 84, height - 12
    for kind, (color, label) in _MARKERS.items():
        if kind == "compacted":
            svg.append(f'<path d="M{lx},{ly - 10} h10 l-5,8 z" fill="{color}"/>')
        elif kind == "summarized":
            svg.append(f'<circle cx="{lx + 5}" cy="{ly - 5}" r="4" fill="{color}"/>')
        else:
            svg.append(f'<rect x="{lx + 1}" y="{ly - 9}" width="8" height="8" fill="{color}"/>')
        svg.append(f'<text x="{lx + 16}" y="{ly}" font-size="12">{escape(label)}</text>')
        lx += 40 + 7 * len(label)
    svg.append(
        f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 22}" y2="{ly - 4}" stroke="#dc2626" '
        f'stroke-dasharray="6 4"/><text x="{lx + 28}" y="{ly}" font-size="12">soft cap</text>'
    )
    caption = (
        "One panel per service, each on its own scale: committed working-memory size after "
        "each activation. Triangles: tier-1 compaction evicted the oldest open cases once "
        "memory crossed the soft cap; dots: tier-2 summarization folded the alert ring into "
        "the summary; squares: the 30-minute TTL expired the idle service, flushing its memory "
        "to long-term storage."
    )
    return _figure(chart_id, svg, caption)


_KPIS: Final = (
    ("events", "alerts", "that entered the pipeline"),
    ("services", "services", "one agent (one key) each"),
    ("activations", "activations", "agent runs, resumed approvals included"),
    ("model_calls", "model calls", "asked of the provider"),
    ("cache_hits", "replay-cache hits", "answers reused by a re-run instead of a new call"),
    ("tier1_compactions", "tier-1 compactions", "oldest open cases evicted at the soft cap"),
    ("tier2_summaries", "tier-2 summaries", "alert rings folded into a summary"),
    ("ttl_expiries", "TTL expiries", "idle services flushed to long-term memory and wiped"),
    ("longterm_rows", "long-term rows", "in the store after the run"),
    ("suspensions", "approvals asked", "P1s that waited for a person"),
    ("approved", "approved", "P1s paged after a yes"),
    ("denied", "denied", "P1s a person turned down"),
    ("timed_out", "timed out", "approvals nobody answered in time: escalated"),
    ("buffered", "buffered alerts", "held behind a waiting approval, triaged after it"),
    ("storms_coalesced", "storms coalesced", "alert bursts one activation decided together"),
    ("follow_ups_scheduled", "follow-ups", "pages and tickets scheduled for a recheck"),
    ("escalated_by_follow_up", "escalated by follow-up", "still open when rechecked"),
    ("intents", "intents", "pages, tickets, approvals and escalations emitted"),
    ("deliveries", "deliveries", "webhook requests the receiver got"),
    ("duplicate_deliveries", "delivered twice", "requests whose Idempotency-Key came before"),
    ("tool_retries", "tool calls replayed", "after a failed bundle, from the ledger"),
    ("errors", "dead letters", "records on the errors output, by reason below"),
    ("alerts_with_history", "alerts with history", "recalled similar past incidents"),
    ("decisions_changed_by_recall", "changed by recall", "decisions past incidents changed"),
)
"""The stat cards: summary.json field, label, and what it counts."""


def _kpis(summary: dict[str, Any]) -> str:
    return "".join(
        f'<div class="kpi" title="summary.json: {key}"><b>{summary[key]:,}</b>'
        f'<span class="label">{escape(label)}</span><span>{escape(meaning)}</span></div>'
        for key, label, meaning in _KPIS
        if isinstance(summary.get(key), int)
    )


def render_report(summary: dict[str, Any], lifecycle_lines: Sequence[bytes]) -> str:
    """The whole page, from summary.json's figures and the lifecycle records."""
    lifecycle = [json.loads(line) for line in lifecycle_lines]
    start_ms = min((r["event_time_ms"] for r in lifecycle), default=0)
    charts = [
        *_flow_charts(summary),
        _memory_chart(lifecycle, start_ms),
        *_record_charts(summary),
    ]
    if "decisions_changed_by_recall" in summary:  # not in a summary.json from before recall
        charts.append(_recall_chart(summary) + _recall_examples(summary))
    kpis = _kpis(summary)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Triage run report</title><style>{_CSS}</style></head><body>"
        "<h1>Triage run report</h1>"
        f'<p class="lede">{summary["events"]:,} alerts from {summary["services"]} services, '
        "replayed through the beam-agents runtime. All figures come from the pipeline's own "
        "records and Beam counters (summary.json).</p>"
        f'<div class="kpis">{kpis}</div>{"".join(charts)}</body></html>\n'
    )


def _recall_chart(summary: dict[str, Any]) -> str:
    """What recall did: alerts that recalled something, and the decisions it changed."""
    return _bars(
        "chart-recall",
        "Recall of similar past incidents",
        [
            ("alerts that recalled", summary["alerts_with_history"]),
            ("incidents recalled", summary["recalled_incidents"]),
            ("escalated by recall", summary["escalated_by_recall"]),
            ("downgraded by recall", summary["downgraded_by_recall"]),
        ],
        "alerts or incidents (count)",
        "Before classifying, each alert recalls its service's most similar past incidents "
        "(resolved cases and expired memory) by exact cosine; the model escalates a "
        "recurring outage cause and downgrades a known flap.",
        category="recall",
    )


def _recall_examples(summary: dict[str, Any]) -> str:
    """A few decisions recall changed, with what was recalled."""
    rows = []
    for example in summary.get("recall_examples", []):
        recalled = ", ".join(f"{r['key']} ({r['score']:.3f})" for r in example["recalled"])
        rows.append(
            "<tr>"
            + "".join(
                f"<td>{escape(str(cell))}</td>"
                for cell in (
                    f"{example['service']} {example['alert_id']}",
                    f"{example['history']} to {example['class']} ({example['decision']})",
                    example["reason"],
                    recalled,
                )
            )
            + "</tr>"
        )
    if not rows:
        return '<p id="recall-examples">No decision was changed by recall in this run.</p>'
    head = "".join(
        f"<th>{h}</th>" for h in ("alert", "changed", "the model's reason", "recalled (cosine)")
    )
    return (
        '<table id="recall-examples"><caption>Decisions changed by recall '
        f"({summary['decisions_changed_by_recall']:,} in all; the first "
        f"{len(rows)})</caption><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}"
        "</tbody></table>"
    )


def _flow_charts(summary: dict[str, Any]) -> list[str]:
    """Where the alerts went: the funnel, the classes, the approvals."""
    funnel = [
        ("alerts replayed", summary["events"]),
        ("activations", summary["activations"]),
        ("model calls", summary["model_calls"]),
        ("intents", summary["intents"]),
    ]
    approvals = [
        ("approved → paged", summary["approved"]),
        ("denied → note", summary["denied"]),
        ("timed out → escalated", summary["timed_out"]),
        ("buffered behind a P1", summary["buffered"]),
    ]
    return [
        _bars(
            "chart-funnel", "From alerts to actions", funnel, "items (count)",
            "Every alert is one activation, and a resumed approval one more; each asks the model "
            "once, tier-2 summaries add their own calls; intents are the side effects requested.",
            category="stage",
        ),
        _bars(
            "chart-outcomes", "Outcomes by class", list(summary["outcomes"].items()),
            "alerts (count)", "The model's class for each triaged alert.", category="class",
        ),
        _bars(
            "chart-approvals", "P1 approvals", approvals, "alerts (count)",
            "P1 alerts wait for a human: approved ones page the on-call, denied ones leave a "
            "note, unanswered ones time out and the pipeline escalates them.",
            category="outcome",
        ),
        _follow_up_chart(summary),
        _bars(
            "chart-deliveries", "Deliveries to the pager and tracker",
            [
                ("delivered", summary.get("deliveries", 0)),
                ("delivered twice", summary.get("duplicate_deliveries", 0)),
                ("replayed, not resent", summary.get("tool_retries", 0)),
            ],
            "requests (count)",
            "Pages, tickets and escalations are POSTed with their id as Idempotency-Key; a "
            "bundle that failed after its delivery is retried and gets the recorded answer back.",
            category="delivery",
        ),
    ]  # fmt: skip


def _follow_up_chart(summary: dict[str, Any]) -> str:
    """The follow-ups: rechecks scheduled, cancelled, fired, and the escalations they caused."""
    return _bars(
        "chart-follow-ups",
        "Follow-ups of pages and tickets",
        [
            # A summary.json written before follow-ups has none of these figures.
            ("scheduled", summary.get("follow_ups_scheduled", 0)),
            ("cancelled: a later alert settled it", summary.get("follow_ups_cancelled", 0)),
            ("fired: rechecked when due", summary.get("follow_ups_fired", 0)),
            ("escalated: still open", summary.get("escalated_by_follow_up", 0)),
        ],
        "follow-ups (count)",
        "Each page or ticket schedules a recheck of its case, by default 15 minutes of "
        "event time later (the runtime's wake_scheduled records); the service's next alert "
        "settles the case and cancels it (wake_cancelled); a recheck that fires (wake_fired) "
        "with its case still open escalates it.",
        category="follow-up",
    )


def _record_charts(summary: dict[str, Any]) -> list[str]:
    """What the run left behind: dead letters, model traffic, long-term rows."""
    return [
        _bars(
            "chart-errors", "Dead letters by reason", list(summary["errors_by_reason"].items()),
            "records (count)",
            "Dead letters are signals: suspension_timeout records become escalate intents.",
            category="reason",
        ),
        _bars(
            "chart-model", "Model calls and replay-cache hits",
            [("provider calls", summary["model_calls"]), ("cache hits", summary["cache_hits"])],
            "requests (count)",
            "A resumed activation re-runs at the same seq and is served from the replay cache.",
            category="answered by",
        ),
        _bars(
            "chart-tokens", "Tokens spent",
            # A summary.json written before tokens were counted has neither figure.
            [("input", summary.get("input_tokens", 0)),
             ("output", summary.get("output_tokens", 0))],
            "tokens (count)",
            "Tokens of the calls the provider answered; a replay-cache hit spends none.",
            category="direction",
        ),
        _bars(
            "chart-rows", "Long-term rows by prefix",
            list(summary["longterm_rows_by_prefix"].items()), "rows (count)",
            "case/ holds every decision, profile the service's totals, history/ what recall "
            "reads: resolved incidents and what the TTL flushed (working_memory without recall).",
            category="key prefix",
        ),
    ]  # fmt: skip
