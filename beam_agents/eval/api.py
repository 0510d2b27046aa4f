"""`run_eval`: replay, score, compare, gate, and write the three outputs.

Everything that can be refused (the files, every line of the recording,
the candidates, the scorers' names and what they need, the gates) is
refused before the first pipeline starts, so a CI job with a typo fails in
a second with exit code 2 rather than after a replay.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from beam_agents.eval.candidates import Candidate, call_user
from beam_agents.eval.compare import candidate_summary, comparison
from beam_agents.eval.errors import EvalInputError
from beam_agents.eval.events import EventLog, read_events, read_labels
from beam_agents.eval.gates import check_gates, evaluate_gates
from beam_agents.eval.recording import recording_at, save_recording
from beam_agents.eval.replayed_tools import TOOL_MODES
from beam_agents.eval.running import CandidateRun, Progress, check_output_type, run_candidate
from beam_agents.eval.scorers import FieldMatch, Sample, Scorer
from beam_agents.eval.typed_values import json_names

__all__ = ["EvalResult", "run_eval"]

RESULTS: Final = "results.jsonl"
SUMMARY: Final = "summary.json"
REPORT: Final = "report.html"
DEFAULT_STEP_MS: Final = 60_000
_MAX_DRAIN_MS: Final = 366 * 24 * 3_600_000
"""The replay's event time must stay far from Beam's end of time, and from 9999."""


@dataclass(frozen=True)
class EvalResult:
    """What an evaluation concluded, and where it wrote it."""

    passed: bool
    summary: dict[str, Any]
    results_path: Path
    summary_path: Path
    report_path: Path
    recorded_new: int = 0
    """Answers this run added to the recording (0: every call was recorded already)."""


def _dumps(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _check(
    candidates: Sequence[Candidate],
    scorers: Sequence[Scorer],
    baseline: str | None,
    tools: str,
    times: tuple[int, int],
) -> str:
    _check_times(*times)
    if not candidates:
        raise EvalInputError("at least one candidate is needed")
    names = [c.name for c in candidates]
    if len(set(names)) != len(names):
        raise EvalInputError(f"candidate names must differ, got {names}")
    scorer_names = [s.name for s in scorers]
    if len(set(scorer_names)) != len(scorer_names):
        raise EvalInputError(f"scorer names must differ, got {scorer_names}; pass name=")
    if tools not in TOOL_MODES:
        raise EvalInputError(f"tools must be one of {', '.join(TOOL_MODES)}, got {tools!r}")
    chosen = baseline if baseline is not None else names[0]
    if chosen not in names:
        raise EvalInputError(f"baseline {chosen!r} is not a candidate ({', '.join(names)})")
    for candidate in candidates:
        check_output_type(candidate)
    return chosen


def _check_times(step_ms: int, drain_ms: int) -> None:
    """The replay's step, and its drain: how long its event time runs on after the last event.

    The drain is the longest of a candidate's TTL and approval timeout plus a
    step, or `drain_ms` when that is longer; a follow-up due after it is
    not run (each one is listed with its event, and counted in the summary).
    """
    if type(step_ms) is not int or step_ms <= 0:
        raise EvalInputError(f"step_ms must be an int > 0, got {step_ms!r}")
    if type(drain_ms) is not int or not 0 <= drain_ms <= _MAX_DRAIN_MS:
        raise EvalInputError(
            f"drain_ms must be an int in [0, {_MAX_DRAIN_MS}] (a year), got {drain_ms!r}"
        )


def _decision_fields(
    given: Sequence[str] | None, scorers: Sequence[Scorer], candidates: Sequence[Candidate]
) -> list[str] | None:
    """The output fields that decide: as given, else those scored field by field, else None.

    Rows show a typed result under its JSON names, which is where they are
    compared; a field named by its Python name (`priority` of a model that
    writes it as `class`) is taken as its JSON name.
    """
    if given is None:
        given = [s.field for s in scorers if isinstance(s, FieldMatch)]
        if not given:
            return None
    elif isinstance(given, str) or any(type(f) is not str or not f for f in given):
        raise EvalInputError(f"decision_fields must be non-empty field names, got {given!r:.80}")
    renamed: dict[str, str] = {}
    for candidate in candidates:
        if candidate.result_type is not None:
            renamed.update(json_names(candidate.result_type))
    return sorted({renamed.get(name, name) for name in given})


def _check_scorers(scorers: Sequence[Scorer], recording: str) -> None:
    """Each scorer's own `check(recording)`, where it has one (see `Scorer`)."""
    for scorer in scorers:
        check = getattr(scorer, "check", None)
        if callable(check):
            call_user(functools.partial(check, recording), f"scorer {scorer.name!r}: check")


def _score(
    run: CandidateRun,
    log: EventLog,
    labels: Mapping[str, Mapping[str, Any]],
    scorers: Sequence[Scorer],
    recording: str,
    output_type: type | None,
) -> None:
    samples = [
        Sample(
            event=event,
            output=row["output"],
            output_json=row["output_json"],
            intents=row["intents"],
            tool_calls=row["tool_calls"],
            label=labels.get(event.id),
            dead_letter=row["dead_letter"],
            value=value,
            output_type=output_type,
            follow_ups=row.get("follow_ups", ()),
        )
        for event, row, value in zip(log.events, run.rows, _values(run), strict=True)
    ]
    for scorer in scorers:
        scores = scorer.score_all(samples, recording)
        if len(scores) != len(samples):
            raise EvalInputError(
                f"scorer {scorer.name!r} gave {len(scores)} scores for {len(samples)} events"
            )
        for row, score in zip(run.rows, scores, strict=True):
            row["scores"][scorer.name] = score


def _values(run: CandidateRun) -> list[Any]:
    """Each row's typed result (None where there is none): a run built by hand may hold none."""
    return run.values if run.values else [None] * len(run.rows)


def run_eval(
    events: str | Path,
    candidates: Sequence[Candidate],
    *,
    labels: str | Path | None = None,
    scorers: Sequence[Scorer] = (),
    recording: str | Path,
    tools: str = "record",
    stubs: Mapping[str, bytes] | None = None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    gates: Sequence[str] = (),
    out_dir: str | Path,
    baseline: str | None = None,
    step_ms: int = DEFAULT_STEP_MS,
    progress: Progress | None = None,
    decision_fields: Sequence[str] | None = None,
    drain_ms: int = 0,
) -> EvalResult:
    """Replay `events` through every candidate, score, compare with the baseline, and gate.

    Raises EvalInputError (GateError, RecordingError) for anything that
    cannot be used, before running. `prices` maps a model id to USD per
    million input and output tokens. `step_ms` is the replay's step, and
    `drain_ms` how long its event time runs after the last event, at least
    (`_check_times`). `decision_fields` are the output fields that make a
    decision (default: those the `FieldMatch` scorers compare); a
    comparison counts the events whose decision changed apart from those
    that differ elsewhere. A candidate with an `output_type` runs typed, as
    `RunAgent(..., output_type=...)` runs it; scorers read its results by
    field (`Sample.value`, `Sample.field_value`).
    """
    chosen = _check(candidates, scorers, baseline, tools, (step_ms, drain_ms))
    fields = _decision_fields(decision_fields, scorers, candidates)
    gate_list = check_gates(list(gates), [s.name for s in scorers])
    log = read_events(str(events))
    label_map = read_labels(str(labels), log) if labels is not None else {}
    recording_path = str(recording)
    recording_at(recording_path)  # a bad recording is refused before anything runs
    _check_scorers(scorers, recording_path)
    runs: dict[str, CandidateRun] = {}
    for candidate in candidates:
        runs[candidate.name] = run_candidate(
            candidate,
            log,
            recording=recording_path,
            tools=tools,
            stubs=dict(stubs or {}),
            prices=dict(prices or {}),
            step_ms=step_ms,
            progress=progress,
            drain_ms=drain_ms,
        )
        _score(runs[candidate.name], log, label_map, scorers, recording_path, candidate.result_type)
    added = save_recording(recording_path)
    names = [s.name for s in scorers]
    summary = _summary(len(log.events), chosen, runs, names, label_map, fields)
    summary["gates"] = evaluate_gates(gate_list, summary)
    summary["passed"] = all(gate["passed"] for gate in summary["gates"])
    results = [row for c in candidates for row in runs[c.name].rows]
    return _write(Path(out_dir), summary, results, added)


def _summary(
    events: int,
    baseline: str,
    runs: Mapping[str, CandidateRun],
    scorer_names: list[str],
    label_map: Mapping[str, Mapping[str, Any]],
    decision_fields: list[str] | None,
) -> dict[str, Any]:
    """Each candidate's scores, and each one compared with the baseline: what gates judge."""
    return {
        "events": events,
        "baseline": baseline,
        "decision_fields": decision_fields,
        "candidates": [
            {
                **candidate_summary(
                    name, run.rows, scorer_names, label_map, run.unattributed, _values(run)
                ),
                "follow_ups": run.follow_ups,
            }
            for name, run in runs.items()
        ],
        "comparisons": [
            comparison(baseline, name, runs[baseline].rows, run.rows, scorer_names, decision_fields)
            for name, run in runs.items()
            if name != baseline
        ],
    }


def _write(
    out: Path, summary: dict[str, Any], results: list[dict[str, Any]], added: int
) -> EvalResult:
    from beam_agents.eval.report import render_report

    out.mkdir(parents=True, exist_ok=True)
    results_path, summary_path, report_path = out / RESULTS, out / SUMMARY, out / REPORT
    with results_path.open("w", encoding="utf-8") as handle:
        for row in results:
            handle.write(_dumps(row) + "\n")
    summary_path.write_text(
        json.dumps(summary, sort_keys=True, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    report_path.write_text(render_report(summary, results), encoding="utf-8")
    return EvalResult(summary["passed"], summary, results_path, summary_path, report_path, added)
