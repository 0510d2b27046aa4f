"""Replay alerts through the triage pipeline on the streaming DirectRunner.

The alerts play in one-minute steps of event time (`beam_agents.local`'s
stepped script): before each step the watermark and the processing-time
clock both move to the step's start, so event-time TTL timers (idle
services) and processing-time approval deadlines fire in the order they
would have in a live deployment, twelve hours compressed into the time the
runner needs. Results come back as JSON lines in a deterministic order, with
the Beam counters of the run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apache_beam.pvalue import PCollection

from app.triage.alerts import Alert, Answer
from app.triage.pipeline import DEFAULT_EMBEDDER, triage
from app.triage.records import error_json, intent_json, lifecycle_json, output_json, sort_key
from beam_agents.local import LocalRun, Script, run_locally, stepped_script

__all__ = ["STEP_MS", "ReplayResult", "replay", "result_of"]

STEP_MS = 60_000
"""Event time of one TestStream step (the bundled data has at most one alert per service in one)."""
_DRAIN_MS = 2 * 3_600_000
"""Long enough for every pending approval deadline to pass before the final TTL expiries."""
_ENCODERS: dict[str, Callable[[Any], bytes]] = {
    "outputs": output_json,
    "intents": intent_json,
    "errors": error_json,
    "lifecycle": lifecycle_json,
}


@dataclass
class ReplayResult:
    """What a replay emitted, as sorted JSON lines, and its Beam counters."""

    outputs: list[bytes]
    intents: list[bytes]
    errors: list[bytes]
    lifecycle: list[bytes]
    counters: dict[str, int] = field(default_factory=dict)
    """Committed counters by `namespace/name`."""
    events: int = 0
    """Alerts that entered the pipeline."""
    wall_seconds: float = 0.0

    def counter(self, name: str) -> int:
        """A counter's value, 0 when it never moved (`beam_agents.runtime/model_calls`)."""
        return self.counters.get(name, 0)


def script(alerts: Sequence[Alert], answers: Sequence[Answer] = ()) -> Script:
    """The TestStream of a replay: alerts and answers in one-minute steps of both clocks."""
    return stepped_script(
        ((a.service, a.to_bytes(), a.event_time_ms) for a in alerts),
        ((a.service, a.intent_id, a.answer.encode(), a.event_time_ms) for a in answers),
        step_ms=STEP_MS,
        drain_ms=_DRAIN_MS,
    )


def replay(
    alerts: Sequence[Alert],
    answers: Sequence[Answer] = (),
    *,
    longterm_uri: str,
    model_spec: str = "rules",
    lifecycle: bool = True,
    on_progress: Callable[[int], None] | None = None,
    max_inflight_calls: int = 256,
    tool_urls: Mapping[str, str] | None = None,
    embedder_spec: str = DEFAULT_EMBEDDER,
    coalesce_max: int = 1,
) -> ReplayResult:
    """Run the triage pipeline over `alerts` (and `answers`) and gather what it emitted.

    `on_progress(events_replayed)` is called from this thread a few times a
    second while the pipeline runs. `tool_urls` delivers pages, tickets and
    escalations (`triage`); `embedder_spec` is recall's embedder (`none`: off);
    `coalesce_max` over 1 decides storms together (`triage_config`).
    """

    def build(events: PCollection[Any], answers: PCollection[Any]) -> Mapping[str, Any]:
        outputs = triage(
            events,
            answers,
            model_spec=model_spec,
            longterm_uri=longterm_uri,
            replay=True,
            lifecycle=lifecycle,
            max_inflight_calls=max_inflight_calls,
            tool_urls=tool_urls,
            embedder_spec=embedder_spec,
            coalesce_max=coalesce_max,
        )
        gathered = {
            "outputs": outputs.outputs,
            "intents": outputs.intents,
            "errors": outputs.errors,
        }
        if outputs.lifecycle is not None:
            gathered["lifecycle"] = outputs.lifecycle
        return gathered

    run = run_locally(script(alerts, answers), build, on_progress=on_progress)
    return result_of(run)


def result_of(run: LocalRun) -> ReplayResult:
    """The run's outputs as sorted JSON lines, beside its counters."""
    lines = {
        name: sorted((encode(e) for e in run.outputs.get(name, [])), key=sort_key)
        for name, encode in _ENCODERS.items()
    }
    return ReplayResult(
        **lines,
        counters=run.counters(),
        events=run.events,
        wall_seconds=run.wall_seconds,
    )
