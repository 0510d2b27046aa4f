"""Replay alerts through the triage pipeline on the streaming DirectRunner.

A `TestStream` plays the alerts in one-minute steps. Before each step the
watermark and the processing-time clock both move to the step's start, so
event-time TTL timers (idle services) and processing-time approval deadlines
fire in the order they would have in a live deployment, twelve hours
compressed into the time the runner needs. Results are gathered in this
process (the DirectRunner runs here) and returned as JSON lines in a
deterministic order, with the Beam counters of the run.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import apache_beam as beam
from apache_beam.metrics.metric import Metrics, MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from app.triage.alerts import Alert, Answer
from app.triage.pipeline import triage
from app.triage.records import error_json, intent_json, lifecycle_json, output_json, sort_key
from beam_agents.testing.direct_metrics import bundle_scoped_metrics
from beam_agents.testing.streaming import Script

__all__ = ["STEP_MS", "ReplayResult", "replay"]

STEP_MS = 60_000
"""Event time of one TestStream step (the bundled data has at most one alert per service in one)."""
_DRAIN_MS = 2 * 3_600_000
_KINDS = ("outputs", "intents", "errors", "lifecycle")

_lock = threading.Lock()
_sinks: dict[tuple[str, str], list[bytes]] = {}
_replayed: dict[str, int] = {}


class _Collect(beam.DoFn):
    """Gathers one output as JSON lines in this process, under the run's id.

    It encodes as it collects: on the DirectRunner every step costs time per
    TestStream step, so the replay keeps its own steps few.
    """

    def __init__(self, run_id: str, name: str, encode: Callable[[Any], bytes]) -> None:
        super().__init__()
        self._key = (run_id, name)
        self._encode = encode

    def process(self, element: Any) -> Iterator[None]:
        line = self._encode(element)
        with _lock:
            _sinks.setdefault(self._key, []).append(line)
        return iter(())


class _CountReplayed(beam.DoFn):
    """Counts events entering the pipeline, for the live progress bar."""

    def __init__(self, run_id: str) -> None:
        super().__init__()
        self._run_id = run_id
        self._events = Metrics.counter("app.triage", "events")

    def process(self, element: Any) -> Iterator[Any]:
        self._events.inc()
        with _lock:
            _replayed[self._run_id] = _replayed.get(self._run_id, 0) + 1
        yield element


@dataclass
class ReplayResult:
    """What a replay emitted, as sorted JSON lines, and its Beam counters."""

    outputs: list[bytes]
    intents: list[bytes]
    errors: list[bytes]
    lifecycle: list[bytes]
    counters: dict[str, int] = field(default_factory=dict)
    """Committed counters by `namespace/name`."""
    wall_seconds: float = 0.0

    def counter(self, name: str) -> int:
        """A counter's value, 0 when it never moved (`beam_agents.runtime/model_calls`)."""
        return self.counters.get(name, 0)


def _script(alerts: Sequence[Alert], answers: Sequence[Answer]) -> Script:
    """The TestStream: per one-minute step, move both clocks to its start, then add its elements."""
    steps: dict[int, tuple[list[Alert], list[Answer]]] = {}
    for alert in alerts:
        steps.setdefault(alert.event_time_ms // STEP_MS, ([], []))[0].append(alert)
    for answer in answers:
        steps.setdefault(answer.event_time_ms // STEP_MS, ([], []))[1].append(answer)
    script = Script()
    clock = 0  # TestStream's processing-time clock starts at 0
    last = 0
    for step in sorted(steps):
        start = step * STEP_MS
        script.watermark(start)
        if start > clock:  # TestStream refuses a zero advance
            script.processing_time(start - clock)
            clock = start
        step_alerts, step_answers = steps[step]
        if step_answers:
            script.answers(
                *(
                    (a.service, a.intent_id, a.answer.encode(), a.event_time_ms)
                    for a in step_answers
                )
            )
        if step_alerts:
            script.events(*((a.service, a.to_bytes(), a.event_time_ms) for a in step_alerts))
        last = start + STEP_MS
    # Let every pending approval deadline pass before the final TTL expiries.
    script.processing_time(_DRAIN_MS)
    script.watermark(last + _DRAIN_MS)
    return script


def replay(
    alerts: Sequence[Alert],
    answers: Sequence[Answer] = (),
    *,
    longterm_uri: str,
    model_spec: str = "rules",
    lifecycle: bool = True,
    on_progress: Callable[[int], None] | None = None,
) -> ReplayResult:
    """Run the triage pipeline over `alerts` (and `answers`) and gather what it emitted.

    `on_progress(events_replayed)` is called from this thread a few times a
    second while the pipeline runs.
    """
    run_id = uuid.uuid4().hex
    options = PipelineOptions([])
    options.view_as(StandardOptions).streaming = True
    pipeline = beam.Pipeline(runner="DirectRunner", options=options)
    streams = pipeline | "Replay" >> _script(alerts, answers).build()
    events = streams["events"] | "CountReplayed" >> beam.ParDo(_CountReplayed(run_id))
    outputs = triage(
        events,
        streams["answers"],
        model_spec=model_spec,
        longterm_uri=longterm_uri,
        replay=True,
        lifecycle=lifecycle,
    )
    encoders: dict[str, tuple[Any, Callable[[Any], bytes]]] = {
        "outputs": (outputs.outputs, output_json),
        "intents": (outputs.intents, intent_json),
        "errors": (outputs.errors, error_json),
    }
    if outputs.lifecycle is not None:
        encoders["lifecycle"] = (outputs.lifecycle, lifecycle_json)
    for name, (pcoll, encode) in encoders.items():
        _ = pcoll | f"Collect{name.title()}" >> beam.ParDo(_Collect(run_id, name, encode))
    started = time.monotonic()
    try:
        with bundle_scoped_metrics():
            running = pipeline.run()
            done = threading.Event()

            def wait() -> None:
                # A failure is re-raised on the calling thread below, not here.
                with contextlib.suppress(Exception):
                    running.wait_until_finish()
                done.set()

            waiter = threading.Thread(target=wait, daemon=True)
            waiter.start()
            while not done.wait(0.25):
                if on_progress is not None:
                    with _lock:
                        on_progress(_replayed.get(run_id, 0))
            waiter.join()
            running.wait_until_finish()  # re-raises a pipeline failure on this thread
    finally:
        with _lock:
            collected = {name: _sinks.pop((run_id, name), []) for name in _KINDS}
            replayed = _replayed.pop(run_id, 0)
    if on_progress is not None:
        on_progress(replayed)
    counters: dict[str, int] = {}
    for result in running.metrics().query(MetricsFilter())["counters"]:
        name = f"{result.key.metric.namespace}/{result.key.metric.name}"
        counters[name] = counters.get(name, 0) + int(result.committed)
    return ReplayResult(
        **{name: sorted(collected[name], key=sort_key) for name in _KINDS},
        counters=counters,
        wall_seconds=time.monotonic() - started,
    )
