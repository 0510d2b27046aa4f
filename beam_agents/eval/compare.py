"""The summary: each candidate's metrics, and how each differs from the baseline.

Everything here is a pure function of the rows, so two runs over the same
recording summarize to the same bytes.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from beam_agents.eval.stats import bootstrap_mean, paired_delta
from beam_agents.eval.typed_values import read_field
from beam_agents.runtime.errors import ActivationError

__all__ = [
    "candidate_summary",
    "changes_decision",
    "comparison",
    "confusion",
    "differences",
]

_FOLLOW_UP = re.compile(r"follow_ups\[\d+\]\.(.+)")


def differences(base: Mapping[str, Any], row: Mapping[str, Any]) -> list[str]:
    """What two candidates did differently on one event, by name.

    `dead_letter` (a different reason, or one on one side only), `intents`,
    and the output: `output.FIELD` for each field of two JSON objects that
    differs, or `output` when either side is not an object. The follow-ups
    the event started are compared the same way, the i-th with the i-th
    (`follow_ups[i].output.FIELD`), when both ran the same wakes in the
    same order; `follow_ups` when they did not.
    """
    found = []
    if _reason(base) != _reason(row):
        found.append("dead_letter")
    if _canonical(base["intents"]) != _canonical(row["intents"]):
        found.append("intents")
    before, after = _shown(base), _shown(row)
    if isinstance(before, dict) and isinstance(after, dict):
        found.extend(
            f"output.{name}"
            for name in sorted({*before, *after})
            if name not in before
            or name not in after
            or _canonical(before[name]) != _canonical(after[name])
        )
    elif _canonical(before) != _canonical(after):
        found.append("output")
    return found + _follow_up_differences(base, row)


def _follow_up_differences(base: Mapping[str, Any], row: Mapping[str, Any]) -> list[str]:
    ran_before, ran_after = base.get("follow_ups", []), row.get("follow_ups", [])
    if _wakes(ran_before) != _wakes(ran_after) or _canonical(
        base.get("follow_ups_not_run", [])
    ) != _canonical(row.get("follow_ups_not_run", [])):
        return ["follow_ups"]
    return [
        f"follow_ups[{i}].{name}"
        for i, (before, after) in enumerate(zip(ran_before, ran_after, strict=True))
        for name in differences(before, after)
    ]


def _wakes(follow_ups: Sequence[Mapping[str, Any]]) -> list[tuple[str, int]]:
    return [(wake["name"], wake["due_ms"]) for wake in follow_ups]


def changes_decision(differs: Sequence[str], decision_fields: Sequence[str] | None) -> bool:
    """Whether what differs (see `differences`) is a different decision.

    A dead letter, the intents and an output that is not an object always
    count; of an object, only `decision_fields` do, or every field when
    they are None (nothing says which fields decide). A follow-up's
    differences count by the same rule, and different follow-ups always do.
    """
    if decision_fields is None:
        return bool(differs)
    decisive = {
        "dead_letter",
        "intents",
        "output",
        "follow_ups",
        *(f"output.{f}" for f in decision_fields),
    }
    return any(_unprefixed(name) in decisive for name in differs)


def _unprefixed(name: str) -> str:
    """A follow-up's difference as the event's own would be named."""
    match = _FOLLOW_UP.fullmatch(name)
    return match.group(1) if match else name


def _reason(row: Mapping[str, Any]) -> str | None:
    return row["dead_letter"]["reason"] if row["dead_letter"] else None


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def confusion(
    rows: Sequence[Mapping[str, Any]],
    labels: Mapping[str, Mapping[str, Any]],
    typed: Sequence[Any] | None = None,
) -> dict[str, Any] | None:
    """Expected against predicted values of the labels' `class_field`, or None without one.

    `typed` are the rows' typed results (None for bytes): the field is read
    from one by its Python or JSON name, as the field scorers read it.
    """
    field = next(
        (label["class_field"] for label in labels.values() if "class_field" in label), None
    )
    if not isinstance(field, str):
        return None
    pairs: list[tuple[str, str]] = []
    for row, value in zip(rows, typed if typed is not None else [None] * len(rows), strict=True):
        label = labels.get(row["event_id"])
        expected = (label or {}).get("expected", {})
        if label is None or field not in expected:
            continue
        _, got = read_field(value, row["output_json"], field)
        pairs.append((_class(expected[field]), _class(got)))
    names = sorted({name for pair in pairs for name in pair})
    index = {name: i for i, name in enumerate(names)}
    matrix = [[0] * len(names) for _ in names]
    for expected_name, got_name in pairs:
        matrix[index[expected_name]][index[got_name]] += 1
    return {"field": field, "labels": names, "matrix": matrix}


def _class(value: object) -> str:
    if value is None:
        return "(none)"
    return value if isinstance(value, str) else repr(value)


def candidate_summary(
    name: str,
    rows: Sequence[Mapping[str, Any]],
    scorers: Sequence[str],
    labels: Mapping[str, Mapping[str, Any]],
    unattributed: Sequence[ActivationError],
    typed: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """One candidate's block of summary.json; `typed` are its rows' typed results, if any."""
    metrics: dict[str, Any] = {}
    for scorer in scorers:
        values = [row["scores"][scorer] for row in rows if row["scores"][scorer] is not None]
        interval = bootstrap_mean(values, f"{name}/{scorer}")
        metrics[scorer] = {
            "mean": interval.mean,
            "low": interval.low,
            "high": interval.high,
            "n": interval.n,
        }
    runs = list(_activations(rows))
    reasons = Counter(run["dead_letter"]["reason"] for run in runs if run["dead_letter"])
    reasons.update(error.reason for error in unattributed)
    return {
        "name": name,
        "metrics": metrics,
        "tokens": {
            "input": sum(run["tokens"]["input"] for run in runs),
            "output": sum(run["tokens"]["output"] for run in runs),
        },
        "cost_usd": round(sum(run["cost_usd"] for run in runs), 9),
        "model_time_ms": round(sum(run["model_time_ms"] for run in runs), 3),
        "model_calls": sum(run["model_calls"] for run in runs),
        "recorded": sum(run["recorded"] for run in runs),
        "dead_letters": dict(sorted(reasons.items())),
        "confusion": confusion(rows, labels, typed),
    }


def _activations(rows: Sequence[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    """Every activation the rows hold: each event's, then the follow-ups it started."""
    for row in rows:
        yield row
        yield from row.get("follow_ups", [])


def comparison(
    baseline: str,
    candidate: str,
    base_rows: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    scorers: Sequence[str],
    decision_fields: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The change from `baseline` to `candidate` in every metric, and where they disagree.

    Every event they did not do byte for byte alike is a disagreement, with
    what differed; those that differ in the decision (`changes_decision`)
    are counted apart, since a changed wording is not a changed decision.
    """
    deltas: dict[str, Any] = {}
    for scorer in scorers:
        interval = paired_delta(
            [row["scores"][scorer] for row in base_rows],
            [row["scores"][scorer] for row in rows],
            f"{baseline}->{candidate}/{scorer}",
        )
        deltas[scorer] = {"delta": interval.mean, "low": interval.low, "high": interval.high}
    disagreements = []
    for base, row in zip(base_rows, rows, strict=True):
        differs = differences(base, row)
        if not differs:
            continue
        disagreements.append(
            {
                "event_id": row["event_id"],
                "key": row["key"],
                "differs": differs,
                "decision_changed": changes_decision(differs, decision_fields),
                "outputs": {baseline: _shown(base), candidate: _shown(row)},
                "scores": {baseline: base["scores"], candidate: row["scores"]},
                "dead_letters": {baseline: _reason(base), candidate: _reason(row)},
            }
        )
    return {
        "baseline": baseline,
        "candidate": candidate,
        "deltas": deltas,
        "decisions_changed": sum(item["decision_changed"] for item in disagreements),
        "disagreements": disagreements,
    }


def _shown(row: Mapping[str, Any]) -> Any:
    return row["output_json"] if row["output_json"] is not None else row["output"]
