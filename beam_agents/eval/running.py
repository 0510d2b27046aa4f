"""Running one candidate over the log: production's `RunAgent` on the local runner.

The log becomes a `stepped_script` (answers included), the candidate runs
under `RunAgent` on the streaming DirectRunner exactly as `run_agent` runs
it, with TTL and approval timers, and each event gets one row: the output
its last activation produced, its intents and tool calls, its dead letter
if it has one, and what its model calls cost. A typed candidate runs under
`RunAgent(..., output_type=...)` as in production; its row shows each
result as JSON, and the typed value itself goes beside the rows for the
scorers.

A dead letter names its entity key, time and payload, not an event id, so
it is matched back: by the id the runtime gives that (key, time, payload);
else (a suspension that timed out, dated by its deadline) the latest event
of the key with that payload before it; else (a failed resume, whose
payload is the answer) the event the answer answers. One that matches
none (an orphaned answer, say) counts against the candidate only.

A follow-up (a wake the agent scheduled) runs in the replay's event time:
the watermark passes its due time as it would live, so it fires among the
events at the step it falls in. Its run is shown in the row of the event
that started it (`beam_agents.eval.follow_ups`), with its own output,
calls and dead letter; a wake due after the replay's event time ends (the
last event's step, then `drain_ms`) is not run and is listed as such.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from beam_agents.eval.candidates import Candidate, eval_config
from beam_agents.eval.errors import EvalInputError
from beam_agents.eval.events import Event, EventLog
from beam_agents.eval.follow_ups import FollowUps, not_run_unlogged, trace_follow_ups
from beam_agents.eval.observe import Note, Observed, StepClock, notes_of
from beam_agents.eval.recording import misses_flow_token, recording_at
from beam_agents.eval.typed_values import value_json
from beam_agents.runtime.errors import ORPHANED_ANSWER, ActivationError
from beam_agents.runtime.intents import event_id_for
from beam_agents.runtime.results import Complete

__all__ = [
    "CandidateRun",
    "check_output_type",
    "replay_end_ms",
    "replay_script",
    "run_candidate",
]

Progress = Callable[[str, int, int], None]
"""`progress(candidate, events_entered, events_total)`."""

_COST_DIGITS: Final = 9


@dataclass(frozen=True)
class CandidateRun:
    """One candidate's rows (in event order) and the dead letters no event owns."""

    rows: list[dict[str, Any]]
    unattributed: list[ActivationError]
    values: list[Any] = field(default_factory=list)
    """Per row, a typed candidate's result (an instance of its output type), else None."""
    follow_ups: dict[str, int] = field(default_factory=dict)
    """How many follow-ups ran and did not, and where the replay's event time ended."""


async def _never_run(ctx: Any) -> Complete:
    """The agent of the transform `check_output_type` builds and never runs."""
    raise AssertionError("check_output_type's transform is never applied")


def check_output_type(candidate: Candidate) -> None:
    """Refuse, before any replay, an output type `RunAgent` cannot make rows of.

    The transform checks its output type when it is built, so one is built
    here (and never applied): a field Beam has no schema type for fails
    the command at once, naming the candidate, not after a first replay.
    """
    from beam_agents.errors import ConfigurationError
    from beam_agents.runtime.transform import RunAgent

    if candidate.result_type is None:
        return
    try:
        RunAgent(_never_run, candidate.config, output_type=candidate.result_type)
    except ConfigurationError as exc:
        raise EvalInputError(f"candidate {candidate.name}: {exc}") from None


def replay_script(log: EventLog, step_ms: int, drain_ms: int) -> Any:
    """The log as a `TestStream` script whose clocks also tick through quiet stretches.

    `stepped_script` moves both clocks only where records are, so across a
    long gap the watermark jumps first and every TTL timer in the gap fires
    before any approval deadline in it. Ticks every `step_ms` through a gap
    (at most `_MAX_TICKS` per gap, spread evenly) fire them in about the
    order a live deployment would. The last tick is `replay_end_ms`: every
    timer due by then (a TTL, a deadline, a wake) fires in the replay's
    time, before the stream ends by moving the watermark to infinity.
    """
    from beam_agents.local import Script

    steps: dict[int, tuple[list[Any], list[Any]]] = {}
    for e in log.events:
        steps.setdefault(e.time_ms // step_ms * step_ms, ([], []))[0].append(
            (e.key, e.payload, e.time_ms)
        )
    for a in log.answers:
        steps.setdefault(a.time_ms // step_ms * step_ms, ([], []))[1].append(
            (a.key, a.intent_id, a.payload, a.time_ms)
        )
    starts = sorted(steps)
    ends = [*starts[1:], starts[-1] + step_ms + drain_ms]
    script = Script()
    clock = 0  # TestStream's processing-time clock starts at 0
    for start, end in zip(starts, ends, strict=True):
        last = [end] if start == starts[-1] else []
        for tick in [start, *_ticks(start + step_ms, end, step_ms), *last]:
            script.watermark(tick)
            if tick > clock:  # TestStream refuses a zero advance
                script.processing_time(tick - clock)
                clock = tick
            if tick == start:
                step_events, step_answers = steps[start]
                if step_answers:
                    script.answers(*step_answers)
                if step_events:
                    script.events(*step_events)
    return script


_MAX_TICKS: Final = 64


def replay_end_ms(log: EventLog, step_ms: int, drain_ms: int) -> int:
    """The last event time `replay_script` reaches: the last event's step, then `drain_ms`."""
    last = max([e.time_ms for e in log.events] + [a.time_ms for a in log.answers])
    return last // step_ms * step_ms + step_ms + drain_ms


def _ticks(first: int, end: int, step_ms: int) -> list[int]:
    if first >= end:
        return []
    count = (end - first + step_ms - 1) // step_ms
    if count <= _MAX_TICKS:
        return [first + i * step_ms for i in range(count)]
    stride = (end - first) / _MAX_TICKS
    return sorted({first + int(i * stride) for i in range(_MAX_TICKS)})


def run_candidate(
    candidate: Candidate,
    log: EventLog,
    *,
    recording: str,
    tools: str,
    stubs: Mapping[str, bytes],
    prices: Mapping[str, tuple[float, float]],
    step_ms: int,
    progress: Progress | None = None,
    drain_ms: int = 0,
) -> CandidateRun:
    """Replay `log` through `candidate` and gather one row per event.

    After the last event the replay's event time runs on for the longest
    of the candidate's TTL and approval timeout, plus a step, or `drain_ms`
    when that is longer: what is due by then fires, follow-ups included.
    """
    import apache_beam as beam  # noqa: F401  (the runner; imported here, never by the CLI)

    from beam_agents.local import run_locally
    from beam_agents.model.flow import forget_flow_control
    from beam_agents.runtime.transform import RunAgent

    token = uuid.uuid4().hex
    config = eval_config(
        candidate.config, token=token, recording=recording, tools=tools, stubs=stubs
    )
    price_table = tuple(sorted((m, float(p[0]), float(p[1])) for m, p in prices.items()))
    drain_ms = max(config.ttl_ms + step_ms, config.hitl_timeout_ms + step_ms, drain_ms)
    end_ms = replay_end_ms(log, step_ms, drain_ms)
    agent = Observed(
        candidate.function, token, recording, price_table, candidate.result_type, end_ms
    )
    clock = StepClock(token, step_ms)

    def build(events: Any, answers: Any) -> Mapping[str, Any]:
        result = events | "RunAgent" >> RunAgent(
            agent.run, config, answers=answers, clock_ms=clock, output_type=candidate.result_type
        )
        return {"outputs": result.outputs, "errors": result.errors}

    total = len(log.events)
    on_progress = None
    if progress is not None:

        def on_progress(entered: int) -> None:
            progress(candidate.name, entered, total)

    try:
        with not_run_unlogged():
            run = run_locally(replay_script(log, step_ms, drain_ms), build, on_progress=on_progress)
    finally:
        notes = notes_of(token)
        recording_at(recording).forget_run(token)
        forget_flow_control(misses_flow_token(token))
    done = _rows(candidate.name, log, notes, run.outputs["errors"])
    done.follow_ups.update(replay_end_ms=end_ms, drain_ms=drain_ms)
    return done


def _attribute(
    log: EventLog, errors: Sequence[ActivationError]
) -> tuple[dict[str, ActivationError], list[ActivationError]]:
    by_runtime = log.by_runtime_id()
    answers = {(a.key.encode("utf-8"), a.payload): a.answer_to for a in log.answers}
    ids = {e.id for e in log.events}
    owned: dict[str, ActivationError] = {}
    unattributed: list[ActivationError] = []
    for error in errors:
        event = by_runtime.get(event_id_for(error.entity_key, error.event_time_ms, error.payload))
        owner = event.id if event is not None else None
        if owner is None:
            earlier = [
                e
                for e in log.events
                if e.key.encode("utf-8") == error.entity_key
                and e.payload == error.payload
                and e.time_ms <= error.event_time_ms
            ]
            if earlier:
                owner = max(earlier, key=lambda e: e.time_ms).id
        if owner is None and error.reason != ORPHANED_ANSWER:
            # A failed resume belongs to the event it answers. An orphaned answer
            # does not: nothing was waiting, and the event's own outcome stands.
            answered = answers.get((error.entity_key, error.payload))
            owner = answered if answered in ids else None
        if owner is None:
            unattributed.append(error)
        else:
            owned[owner] = error
    return owned, unattributed


def _output_json(output: str | None) -> Any:
    if output is None:
        return None
    try:
        return json.loads(output)
    except (json.JSONDecodeError, RecursionError):
        return None


def _result(note: Note, error: ActivationError | None) -> tuple[str | None, Any]:
    """`(text, typed value)` of what the event's activation completed with."""
    if error is not None or note.output is None:
        return None, None
    if isinstance(note.output, bytes):
        return note.output.decode("utf-8", "replace"), None
    return value_json(note.output), note.output


def _activity(note: Note, error: ActivationError | None, output: str | None) -> dict[str, Any]:
    """What one activation did and cost: an event's, or a follow-up's."""
    return {
        "output": output,
        "output_json": _output_json(output),
        "intents": [] if error is not None else note.intents,
        "tool_calls": note.tool_calls,
        "dead_letter": None if error is None else {"reason": error.reason, "detail": error.detail},
        "tokens": {"input": note.input_tokens, "output": note.output_tokens},
        "model_calls": note.model_calls,
        "recorded": note.recorded,
        "model_time_ms": round(note.model_time_ms, 3),
        "cost_usd": round(note.cost_usd, _COST_DIGITS),
    }


def _follow_ups(event: Event, notes: Mapping[str, Note], traced: FollowUps) -> dict[str, Any]:
    """The follow-ups `event` started: each run (as its activity) and each not run."""
    ran = []
    for note_id, wake in traced.ran.get(event.runtime_id, []):
        note, error = notes[note_id], traced.errors.get(note_id)
        text, _ = _result(note, error)
        ran.append({"name": wake.name, "due_ms": wake.due_ms, **_activity(note, error, text)})
    return {"follow_ups": ran, "follow_ups_not_run": traced.not_run.get(event.runtime_id, [])}


def _row(
    candidate: str, event: Event, note: Note, error: ActivationError | None, output: str | None
) -> dict[str, Any]:
    return {
        "candidate": candidate,
        "event_id": event.id,
        "key": event.key,
        "time_ms": event.time_ms,
        "scores": {},
        **_activity(note, error, output),
    }


def _rows(
    candidate: str, log: EventLog, notes: Mapping[str, Note], errors: Sequence[ActivationError]
) -> CandidateRun:
    traced, errors = trace_follow_ups(notes, log, errors)
    owned, unattributed = _attribute(log, errors)
    rows, values = [], []
    for event in log.events:
        note, error = notes.get(event.runtime_id) or Note(), owned.get(event.id)
        text, value = _result(note, error)
        rows.append(
            {**_row(candidate, event, note, error, text), **_follow_ups(event, notes, traced)}
        )
        values.append(value)
    ordered = sorted(unattributed, key=lambda e: (e.entity_key, e.event_time_ms))
    return CandidateRun(rows, ordered, values, traced.count())
