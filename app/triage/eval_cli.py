"""`labels` and `changes`: the triage app's two commands around `beam-agents eval`.

`python -m app.triage labels --hours N [--first-services K] --out DIR`
writes the labelled set (`app.triage.labelled`); `python -m app.triage
changes DIR` reads an evaluation's `summary.json` and says, one line per
alert, which decisions a candidate changed against the baseline and why:
each side's class, decision and the model's reason, or the dead letter that
stood in for a decision. `make eval` runs the three in turn.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO

from app.triage.data import SERVICES
from app.triage.labelled import write_labelled

__all__ = ["EVAL_COMMANDS", "add_eval_commands", "describe_changes", "run_eval_command"]

EVAL_COMMANDS = ("labels", "changes")


def _hours(text: str) -> float:
    value = float(text)
    if not 0 < value <= 12:
        raise argparse.ArgumentTypeError(f"must be in (0, 12], got {text}")
    return value


def _services(text: str) -> int:
    value = int(text)
    if not 0 < value <= SERVICES:
        raise argparse.ArgumentTypeError(f"must be in 1..{SERVICES}, got {text}")
    return value


def add_eval_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `labels` and `changes` to the app's command line."""
    labels = commands.add_parser(
        "labels", help="write a labelled alert set for beam-agents eval (deterministic)"
    )
    labels.add_argument("--hours", type=_hours, required=True, help="the first HOURS of alerts")
    labels.add_argument(
        "--first-services",
        type=_services,
        default=SERVICES,
        metavar="K",
        help=f"only svc-000 .. svc-(K-1) (default all {SERVICES})",
    )
    labels.add_argument("--out", type=Path, required=True, help="where to write the two files")
    changes = commands.add_parser(
        "changes", help="which decisions an evaluation's candidates changed, and why"
    )
    changes.add_argument("out", type=Path, help="the evaluation's --out directory")


_DECISION_FIELDS = ("class", "decision")
"""What a triage decision is; the rest of an output (the recalled keys, say) may differ freely."""


def _decision(output: object, dead_letter: object) -> tuple[object, ...]:
    if dead_letter:
        return ("dead letter", dead_letter)
    if isinstance(output, dict):
        return tuple(output.get(f) for f in _DECISION_FIELDS)
    return ("output", output)


def _side(output: object, dead_letter: object, result: dict[str, Any] | None) -> str:
    if dead_letter:
        detail = str(((result or {}).get("dead_letter") or {}).get("detail", ""))
        detail = f"{detail[:97]}..." if len(detail) > 100 else detail
        return f"dead letter {dead_letter}" + (f": {detail}" if detail else "")
    if isinstance(output, dict):
        shown = " ".join(str(output.get(f, "?")) for f in _DECISION_FIELDS)
        reason = str(output.get("reason", ""))
        return f"{shown} ({reason})" if reason else shown
    return "no output" if output is None else str(output)[:120]


def _interval(metric: dict[str, Any] | None, signed: bool = False) -> str:
    if not metric:
        return "-"
    value = metric.get("delta", metric.get("mean"))
    shown = f"{value:+.3f}" if signed else f"{value:.3f}"
    return f"{shown} [{metric['low']:.3f}, {metric['high']:.3f}]"


def _table(summary: dict[str, Any]) -> list[str]:
    """Each candidate's class accuracy with its 95% interval, dead letters and model calls."""
    candidates = summary.get("candidates", [])
    width = max([len(c["name"]) for c in candidates] + [len("candidate")])
    lines = [
        f"{'candidate':<{width}}  {'class [95% interval]':<24}  {'n':>5}  "
        f"{'dead letters':>12}  {'model calls (recorded)':>22}"
    ]
    for c in candidates:
        metric = c.get("metrics", {}).get("class")
        calls = f"{c.get('model_calls', 0)} ({c.get('recorded', 0)})"
        lines.append(
            f"{c['name']:<{width}}  {_interval(metric):<24}  {(metric or {}).get('n', 0):>5}  "
            f"{sum(c.get('dead_letters', {}).values()):>12}  {calls:>22}"
        )
    return lines


def describe_changes(
    summary: dict[str, Any], results: list[dict[str, Any]] | None = None
) -> list[str]:
    """The candidates' table, each comparison's class delta, and every decision that changed.

    A disagreement only in what was recalled is not a changed decision: a
    change is a different class or decision, or a dead letter on one side.
    """
    rows = {(r["candidate"], r["event_id"]): r for r in results or []}
    lines = _table(summary)
    for comparison in summary.get("comparisons", []):
        baseline, candidate = comparison["baseline"], comparison["candidate"]
        changed = []
        for item in comparison.get("disagreements", []):
            outputs, dead = item.get("outputs", {}), item.get("dead_letters", {})
            before = _decision(outputs.get(baseline), dead.get(baseline))
            after = _decision(outputs.get(candidate), dead.get(candidate))
            if before != after:
                changed.append(item)
        delta = _interval(comparison.get("deltas", {}).get("class"), signed=True)
        lines.append(f"{candidate} vs {baseline}: class {delta}; {len(changed)} decisions changed")
        for item in changed:
            outputs, dead = item.get("outputs", {}), item.get("dead_letters", {})
            scores = item.get("scores", {})
            marks = []
            for name in (baseline, candidate):
                score = (scores.get(name) or {}).get("class")
                if score is not None:
                    marks.append(f"{name} {'right' if score == 1.0 else 'wrong'}")
            event = item["event_id"]
            lines.append(
                f"  {event} ({item.get('key', '')})" + (f": {', '.join(marks)}" if marks else "")
            )
            for name in (baseline, candidate):
                side = _side(outputs.get(name), dead.get(name), rows.get((name, event)))
                lines.append(f"    {name}: {side}")
    return lines


def run_eval_command(args: argparse.Namespace, out: TextIO) -> int:
    """Run `labels` or `changes`; returns the exit code."""
    if args.command == "labels":
        events, labels = write_labelled(args.out, args.hours, args.first_services)
        print(f"wrote {events} and {labels}", file=out)
        return 0
    summary_path = args.out / "summary.json"
    if not summary_path.is_file():
        raise FileNotFoundError(f"{summary_path}: no summary (run beam-agents eval first)")
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    results_path = args.out / "results.jsonl"
    results = [
        json.loads(line)
        for line in (
            results_path.read_text(encoding="utf-8").splitlines() if results_path.is_file() else []
        )
        if line.strip()
    ]
    for line in describe_changes(summary, results):
        print(line, file=out)
    return 0
