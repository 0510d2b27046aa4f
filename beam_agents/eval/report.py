"""report.html: an evaluation's summary and its disagreements as one self-contained page.

The page is read by a person deciding whether a change may ship, often from
a CI artifact opened offline, so it carries its own CSS and its one small
script inline and fetches nothing. Everything is in the HTML itself: with
JavaScript off the tables and every disagreement still show; the script only
adds the filter over the disagreements.

Colour never carries meaning alone: a delta whose interval excludes 0 is
green or red *and* says "better" or "worse"; a gate says "pass" or "FAIL".
Every number a reader may look up has a `data-*` address (candidate, metric)
so tests and scripts can find it without scraping the layout.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any, Final

__all__ = ["render_report"]

_CSS: Final = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto;
       max-width: 1200px; padding: 0 16px; color: #111827; background: #fff; }
h1 { font-size: 24px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 32px; }
h3 { font-size: 15px; margin-bottom: 6px; }
.lede { color: #4b5563; margin-top: 0; }
table { border-collapse: collapse; margin: 8px 0 16px; }
th, td { border: 1px solid #e5e7eb; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f9fafb; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.ci { color: #4b5563; font-size: 12px; }
.better { background: #dcfce7; color: #14532d; } .worse { background: #fee2e2; color: #7f1d1d; }
.pass { color: #14532d; font-weight: 600; } .fail { color: #b91c1c; font-weight: 600; }
.verdict { display: inline-block; padding: 2px 10px; border-radius: 4px; font-weight: 700; }
.verdict.pass { background: #dcfce7; } .verdict.fail { background: #fee2e2; }
.diag { background: #eff6ff; font-weight: 600; }
pre { margin: 0; white-space: pre-wrap; word-break: break-word; font-size: 12px; }
.field-diff { background: #fef9c3; }
.dead { color: #b91c1c; font-weight: 600; }
.filter { margin: 8px 0; } .filter input[type=search] { width: 360px; padding: 4px 6px; }
caption { text-align: left; }
.muted { color: #6b7280; }
"""

# The filter: rows whose text contains every word typed stay visible. Runs only with JS;
# the filter box is `hidden` in the HTML, so a reader without JS never sees a dead control.
_JS: Final = """
(function () {
  var box = document.getElementById("filter");
  var wrap = document.getElementById("filter-wrap");
  if (!box || !wrap) { return; }
  wrap.hidden = false;
  var rows = Array.prototype.slice.call(document.querySelectorAll("tr.disagreement"));
  var count = document.getElementById("filter-count");
  var scored = document.getElementById("filter-scored");
  var decided = document.getElementById("filter-decisions");
  function apply() {
    var words = box.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var shown = 0;
    rows.forEach(function (row) {
      var text = row.textContent.toLowerCase();
      var keep = words.every(function (w) { return text.indexOf(w) !== -1; }) &&
        (!scored.checked || row.getAttribute("data-scores-differ") === "yes") &&
        (!decided.checked || row.getAttribute("data-decision-changed") === "yes");
      row.hidden = !keep;
      if (keep) { shown += 1; }
    });
    count.textContent = shown + " of " + rows.length + " shown";
  }
  box.addEventListener("input", apply);
  scored.addEventListener("change", apply);
  decided.addEventListener("change", apply);
  apply();
})();
"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _num(value: object, digits: int = 3) -> str:
    """A number as the page shows it; `-` for a missing one."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return _e(value)


def _signed(value: object) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:+.3f}"
    return "-"


def _interval(low: object, high: object) -> str:
    if low is None or high is None:
        return ""
    return f'<span class="ci">[{_num(low)}, {_num(high)}]</span>'


def _metric_names(candidates: Sequence[Mapping[str, Any]]) -> list[str]:
    names: list[str] = []
    for candidate in candidates:
        for name in candidate.get("metrics", {}):
            if name not in names:
                names.append(name)
    return names


def _verdict(passed: object) -> str:
    if passed:
        return '<span class="verdict pass">pass</span>'
    return '<span class="verdict fail">FAIL</span>'


def _gates(gates: Sequence[Mapping[str, Any]]) -> str:
    if not gates:
        return '<p class="muted">No gates were set.</p>'
    rows = "".join(
        f'<tr data-gate="{_e(g.get("expr", ""))}"><td><code>{_e(g.get("expr", ""))}</code></td>'
        f'<td class="num">{_num(g.get("value"))}</td>'
        f'<td class="{"pass" if g.get("passed") else "fail"}">'
        f"{'pass' if g.get('passed') else 'FAIL'}</td></tr>"
        for g in gates
    )
    return (
        '<table id="gates"><thead><tr><th>gate</th><th>value</th><th>result</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


def _metrics(candidates: Sequence[Mapping[str, Any]], baseline: str) -> str:
    names = _metric_names(candidates)
    if not names:
        return '<p class="muted">No scorers.</p>'
    head = "".join(f"<th>{_e(n)}</th>" for n in names)
    rows = []
    for candidate in candidates:
        name = str(candidate.get("name", ""))
        cells = []
        for metric in names:
            m = candidate.get("metrics", {}).get(metric) or {}
            cells.append(
                f'<td class="num" data-candidate="{_e(name)}" data-metric="{_e(metric)}">'
                f'<span class="mean">{_num(m.get("mean"))}</span> '
                f"{_interval(m.get('low'), m.get('high'))}"
                f' <span class="ci">n={_num(m.get("n"))}</span></td>'
            )
        tag = ' <span class="muted">(baseline)</span>' if name == baseline else ""
        rows.append(f"<tr><th>{_e(name)}{tag}</th>{''.join(cells)}</tr>")
    return (
        '<table id="metrics"><caption class="muted">mean [95% interval], n scored events'
        f"</caption><thead><tr><th>candidate</th>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _delta_cell(metric: str, candidate: str, delta: Mapping[str, Any]) -> str:
    low, high = delta.get("low"), delta.get("high")
    verdict, css = "", ""
    if isinstance(low, int | float) and isinstance(high, int | float):
        if low > 0:
            verdict, css = " better", "better"
        elif high < 0:
            verdict, css = " worse", "worse"
    cls = f"num {css}".strip()
    return (
        f'<td class="{cls}" data-candidate="{_e(candidate)}" data-delta="{_e(metric)}">'
        f"{_signed(delta.get('delta'))} {_interval(low, high)}"
        f"{f'<b>{verdict}</b>' if verdict else ''}</td>"
    )


def _comparisons(comparisons: Sequence[Mapping[str, Any]]) -> str:
    if not comparisons:
        return '<p class="muted">One candidate: nothing to compare.</p>'
    names: list[str] = []
    for comparison in comparisons:
        for name in comparison.get("deltas", {}):
            if name not in names:
                names.append(name)
    head = "".join(f"<th>&Delta; {_e(n)}</th>" for n in names)
    rows = []
    for comparison in comparisons:
        candidate = str(comparison.get("candidate", ""))
        deltas = comparison.get("deltas", {})
        cells = "".join(
            _delta_cell(n, candidate, deltas[n]) if n in deltas else "<td>-</td>" for n in names
        )
        decided = _decisions_changed(comparison)
        differing = len(comparison.get("disagreements", []))
        rows.append(
            f"<tr><th>{_e(candidate)} <span class='muted'>vs {_e(comparison.get('baseline', ''))}"
            f"</span></th>{cells}<td class='num' data-candidate=\"{_e(candidate)}\" "
            f'data-count="decisions_changed">{decided:,}</td>'
            f"<td class='num' data-candidate=\"{_e(candidate)}\" "
            f'data-count="answered_differently">{differing:,}</td></tr>'
        )
    return (
        '<table id="comparison"><caption class="muted">candidate minus baseline, paired over '
        "the same events [95% interval]; green/red where the interval excludes 0</caption>"
        f"<thead><tr><th>candidate</th>{head}<th>decisions changed</th>"
        "<th>events answered differently</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _usage(candidates: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for candidate in candidates:
        name = _e(candidate.get("name", ""))
        tokens = candidate.get("tokens") or {}
        values = (
            ("input_tokens", tokens.get("input")),
            ("output_tokens", tokens.get("output")),
            ("cost_usd", candidate.get("cost_usd")),
            ("model_time_ms", candidate.get("model_time_ms")),
            ("model_calls", candidate.get("model_calls")),
            ("recorded", candidate.get("recorded")),
        )
        cells = "".join(
            f'<td class="num" data-candidate="{name}" data-usage="{k}">'
            f"{_num(v, 4 if k == 'cost_usd' else 1)}</td>"
            for k, v in values
        )
        rows.append(f"<tr><th>{name}</th>{cells}</tr>")
    return (
        '<table id="usage"><thead><tr><th>candidate</th><th>input tokens</th>'
        "<th>output tokens</th><th>cost (USD)</th><th>model time (ms)</th><th>model calls</th>"
        f"<th>answered from the recording</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _dead_letters(candidates: Sequence[Mapping[str, Any]]) -> str:
    reasons = sorted({r for c in candidates for r in (c.get("dead_letters") or {})})
    if not reasons:
        return '<p id="dead-letters" class="muted">No dead letters.</p>'
    head = "".join(f"<th>{_e(r)}</th>" for r in reasons)
    rows = []
    for candidate in candidates:
        name = _e(candidate.get("name", ""))
        counts = candidate.get("dead_letters") or {}
        cells = "".join(
            f'<td class="num" data-candidate="{name}" data-reason="{_e(r)}">'
            f"{_num(counts.get(r, 0))}</td>"
            for r in reasons
        )
        rows.append(f"<tr><th>{name}</th>{cells}</tr>")
    return (
        f'<table id="dead-letters"><thead><tr><th>candidate</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _confusion(candidates: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for candidate in candidates:
        confusion = candidate.get("confusion")
        if not confusion:
            continue
        name = _e(candidate.get("name", ""))
        labels = [str(x) for x in confusion.get("labels", [])]
        matrix = confusion.get("matrix", [])
        head = "".join(f"<th>{_e(x)}</th>" for x in labels)
        rows = []
        for i, expected in enumerate(labels):
            counts = matrix[i] if i < len(matrix) else []
            cells = "".join(
                f'<td class="num{" diag" if i == j else ""}">'
                f"{_num(counts[j] if j < len(counts) else 0)}</td>"
                for j in range(len(labels))
            )
            rows.append(f"<tr><th>{_e(expected)}</th>{cells}</tr>")
        parts.append(
            f'<h3>{name}</h3><table class="confusion" data-candidate="{name}">'
            f"<caption class='muted'>rows: expected {_e(confusion.get('field', ''))}; "
            f"columns: what {name} answered</caption>"
            f"<thead><tr><th></th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
    return "".join(parts) or '<p class="muted">No class field: no confusion matrix.</p>'


def _changed_fields(outputs: Iterable[object]) -> set[str]:
    """The fields of JSON-object outputs that are not equal across candidates."""
    objects = [o for o in outputs if isinstance(o, dict)]
    keys = {k for o in objects for k in o}
    return {k for k in keys if len({json.dumps(o.get(k), sort_keys=True) for o in objects}) > 1}


def _output(value: object, changed: set[str]) -> str:
    if isinstance(value, dict):
        rows = "".join(
            f"<tr{' class=field-diff' if k in changed else ''}><th>{_e(k)}</th>"
            f"<td><pre>{_e(v if isinstance(v, str) else json.dumps(v, sort_keys=True))}"
            "</pre></td></tr>"
            for k, v in sorted(value.items(), key=lambda kv: (kv[0] not in changed, kv[0]))
        )
        return f'<table class="output">{rows}</table>'
    if value is None:
        return '<span class="muted">no output</span>'
    return f"<pre>{_e(value)}</pre>"


def _intents(result: Mapping[str, Any] | None) -> str:
    if not result:
        return ""
    intents = result.get("intents") or []
    if not intents:
        return ""
    names = ", ".join(str(i.get("tool", "")) for i in intents if isinstance(i, dict))
    return f'<div class="muted">intents: {_e(names)}</div>'


def _changed_decision(item: Mapping[str, Any]) -> bool:
    """Whether a disagreement changed the decision (a summary without the field: assume so)."""
    return item.get("decision_changed", True) is not False


def _decisions_changed(comparison: Mapping[str, Any]) -> int:
    count = comparison.get("decisions_changed")
    if isinstance(count, int):
        return count
    return sum(_changed_decision(item) for item in comparison.get("disagreements", []))


def _difference_names(differs: Iterable[object]) -> list[str]:
    """What differs as a reader says it: an output field by its name."""
    names = {"dead_letter": "dead letter", "intents": "intents", "output": "output"}
    return [names.get(str(d), str(d).removeprefix("output.")) for d in differs]


def _disagreement_row(
    item: Mapping[str, Any],
    baseline: str,
    candidate: str,
    by_event: Mapping[tuple[str, str], Mapping[str, Any]],
) -> tuple[tuple[bool, bool], str]:
    """One disagreement's row, and its sort key: scores that differ, then changed decisions."""
    event_id = str(item.get("event_id", ""))
    outputs = item.get("outputs") or {}
    scores = item.get("scores") or {}
    dead = item.get("dead_letters") or {}
    changed = _changed_fields(outputs.values())
    differ = "yes" if scores.get(baseline) != scores.get(candidate) else "no"
    decided = "yes" if _changed_decision(item) else "no"
    cells = []
    for name in (baseline, candidate):
        reason = dead.get(name)
        score = scores.get(name) or {}
        score_text = ", ".join(f"{k} {_num(v, 2)}" for k, v in sorted(score.items()))
        cells.append(
            f'<td data-candidate="{_e(name)}">'
            + (f'<div class="dead">dead letter: {_e(reason)}</div>' if reason else "")
            + _output(outputs.get(name), changed)
            + _intents(by_event.get((name, event_id)))
            + (f'<div class="muted">{_e(score_text)}</div>' if score_text else "")
            + "</td>"
        )
    differs = ", ".join(_difference_names(item.get("differs") or []))
    verdict = "decision changed" if decided == "yes" else "same decision"
    row = (
        f'<tr class="disagreement" data-event="{_e(event_id)}" '
        f'data-scores-differ="{differ}" data-decision-changed="{decided}">'
        f"<td><code>{_e(event_id)}</code><div class='muted'>{_e(item.get('key', ''))}"
        f"</div><div class='muted'>{_e(candidate)} vs {_e(baseline)}</div>"
        f'<div class="differs"><b>{verdict}</b>'
        + (f": {_e(differs)} differ" if differs else "")
        + f"</div></td>{''.join(cells)}</tr>"
    )
    return (differ == "no", decided == "no"), row


def _disagreements(
    comparisons: Sequence[Mapping[str, Any]], by_event: Mapping[tuple[str, str], Mapping[str, Any]]
) -> str:
    rows: list[tuple[tuple[bool, bool], str]] = []
    for comparison in comparisons:
        baseline = str(comparison.get("baseline", ""))
        candidate = str(comparison.get("candidate", ""))
        for item in comparison.get("disagreements", []):
            rows.append(_disagreement_row(item, baseline, candidate, by_event))
    if not rows:
        return '<p id="disagreements" class="muted">Every candidate answered alike.</p>'
    filt = (
        '<div id="filter-wrap" class="filter" hidden><label>Filter: <input id="filter" '
        'type="search" placeholder="event id, key, class, reason..."></label> '
        '<label><input id="filter-scored" type="checkbox"> only where the scores differ</label> '
        '<label><input id="filter-decisions" type="checkbox"> only changed decisions</label> '
        '<span id="filter-count" class="muted"></span></div>'
    )
    rows.sort(key=lambda row: row[0])  # stable: event order within each group
    return (
        f'{filt}<table id="disagreements"><caption class="muted">every event the candidates '
        "did not answer alike: those whose scores differ first, then changed decisions, then "
        "the rest, each in event order; the fields that differ are highlighted</caption>"
        "<thead><tr><th>event</th><th>baseline's output</th>"
        f"<th>candidate's output</th></tr></thead><tbody>{''.join(r for _, r in rows)}</tbody>"
        "</table>"
    )


def _changes(summary: Mapping[str, Any], comparisons: Sequence[Mapping[str, Any]]) -> str:
    """The header's count of changed decisions, what decides, and what else differs."""
    if not comparisons:
        return "one candidate, nothing to compare."
    decided = sum(_decisions_changed(c) for c in comparisons)
    items = [item for c in comparisons for item in c.get("disagreements", [])]
    fields = summary.get("decision_fields")
    if isinstance(fields, list) and fields:
        by = f"a different {', '.join(str(f) for f in fields)}, intents or dead letter"
    else:
        by = "any difference in the output, intents or dead letter"
    noun = "decision changed" if decided == 1 else "decisions changed"
    text = f'<span id="decisions-changed">{decided:,}</span> {noun} ({_e(by)})'
    rest = [item for item in items if not _changed_decision(item)]
    if rest:
        names = sorted({n for item in rest for n in _difference_names(item.get("differs") or [])})
        only = f" only in {_e(', '.join(names))}" if names else ""
        verb = "other event differs" if len(rest) == 1 else "other events differ"
        text += f'; <span id="answered-differently">{len(rest):,}</span> {verb}{only}'
    return text + "."


def render_report(summary: Mapping[str, Any], results: Sequence[Mapping[str, Any]]) -> str:
    """The report page for `summary` (summary.json) and `results` (results.jsonl's rows)."""
    candidates: list[Mapping[str, Any]] = list(summary.get("candidates", []))
    comparisons: list[Mapping[str, Any]] = list(summary.get("comparisons", []))
    baseline = str(summary.get("baseline", ""))
    by_event = {(str(r.get("candidate")), str(r.get("event_id"))): r for r in results}
    names = ", ".join(str(c.get("name", "")) for c in candidates)
    body = f"""
<h1>Evaluation {_verdict(summary.get("passed"))}</h1>
<p class="lede"><span id="events">{_num(summary.get("events"))}</span> events,
candidates {_e(names)}; baseline <b>{_e(baseline)}</b>; {_changes(summary, comparisons)}</p>
<h2>Gates</h2>{_gates(summary.get("gates", []))}
<h2>Metrics</h2>{_metrics(candidates, baseline)}
<h2>Comparison</h2>{_comparisons(comparisons)}
<h2>Confusion matrix</h2>{_confusion(candidates)}
<h2>Tokens, cost and model time</h2>{_usage(candidates)}
<h2>Dead letters by reason</h2>{_dead_letters(candidates)}
<h2>Disagreements</h2>{_disagreements(comparisons, by_event)}
"""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>beam-agents eval report</title>"
        f"<style>{_CSS}</style></head><body>{body}<script>{_JS}</script></body></html>\n"
    )
