"""A live run: alerts replayed against the wall clock, answers read as a person writes them.

The demo replays twelve hours in a couple of minutes from a fixed script;
nobody could answer an approval in between. Here the TestStream reads its
events from a local gRPC TestStream service (`TestStreamServiceController`)
that `LiveFeed` fills as time passes, so the streaming DirectRunner keeps
production's timers while a person takes part:

- event time runs `speedup` times faster than the wall clock (one hour of
  alerts per minute at 60): alerts arrive when their time comes, and the
  watermark follows them, so idle services expire as they would;
- processing time runs at the wall clock's pace, so an approval's deadline
  (`APPROVAL_TIMEOUT_MS`) is real: a person has its fifteen minutes;
- the answers file (the console's sink) and a re-submission file are
  followed as they grow; each new line enters the pipeline at the current
  watermark.

Every record is appended to the run directory as the pipeline emits it, so
the console shows the run as it happens. The feed ends `drain_s` after the
last alert, or when asked to stop; the run then writes summary.json and
report.html like the demo.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache_beam as beam
from apache_beam.coders import FastPrimitivesCoder
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.pvalue import PCollection
from apache_beam.testing.test_stream import TestStream
from apache_beam.testing.test_stream_service import TestStreamServiceController

from app.triage.alerts import Alert, Answer, InvalidAlertError
from app.triage.pipeline import as_json_lines, triage
from app.triage.replay import ReplayResult, result_of
from beam_agents.console.follow import JsonLinesFollower
from beam_agents.local import ANSWERS, EVENTS, Script, run_locally

__all__ = ["RECORD_FILES", "LiveFeed", "LiveScript", "live_clock_ms", "run_live"]

_Event = beam_runner_api_pb2.TestStreamPayload.Event
_CODER = FastPrimitivesCoder()
RECORD_FILES = ("outputs", "intents", "errors", "lifecycle")
_append_lock = threading.Lock()
_processing_ms = 0
"""The processing time the feed has given the runner's test clock (it starts at 0)."""


def live_clock_ms() -> int:
    """The runner's processing-time clock in a live run: what the feed has advanced it to.

    RunAgent sets approval deadlines from this, so a deadline and the timer
    that fires it read the same clock.
    """
    return _processing_ms


def _elements(tag: str, values: Sequence[tuple[Any, int]]) -> Any:
    stamped = [
        beam_runner_api_pb2.TestStreamPayload.TimestampedElement(
            encoded_element=_CODER.encode(value), timestamp=at_ms * 1000
        )
        for value, at_ms in values
    ]
    return _Event(element_event=_Event.AddElements(elements=stamped, tag=tag))


def _watermark(ms: int) -> Iterator[Any]:
    for tag in (EVENTS, ANSWERS):
        yield _Event(watermark_event=_Event.AdvanceWatermark(new_watermark=ms * 1000, tag=tag))


@dataclass
class LiveFeed:
    """The events of a live run, produced as the wall clock moves (a TestStream service reader)."""

    alerts: Sequence[Alert]
    answers: Path
    resubmit: Path | None = None
    speedup: float = 60.0
    drain_s: float = 960.0
    tick_s: float = 0.25
    on_alert: Callable[[int], None] | None = None

    def __post_init__(self) -> None:
        self.stop = threading.Event()
        self._answers = JsonLinesFollower(self.answers)
        self._resubmitted = JsonLinesFollower(self.resubmit) if self.resubmit else None

    def read_multiple(self, _keys: object) -> Iterator[Any]:
        """The TestStream service's reader interface: every event of the run, in order."""
        global _processing_ms
        pending = sorted(self.alerts, key=lambda a: a.event_time_ms)
        origin = (pending[0].event_time_ms if pending else 0) - 1
        watermark, sent = origin, 0
        started = last_tick = time.monotonic()
        finished_at: float | None = None
        while not self.stop.is_set():
            now = time.monotonic()
            virtual = origin + int((now - started) * 1000 * self.speedup)
            yield from self._arrivals(watermark)
            while sent < len(pending) and pending[sent].event_time_ms <= virtual:
                alert = pending[sent]
                if alert.event_time_ms > watermark:
                    yield from _watermark(alert.event_time_ms)
                    watermark = alert.event_time_ms
                yield _elements(EVENTS, [((alert.service, alert.to_bytes()), alert.event_time_ms)])
                sent += 1
                if self.on_alert is not None:
                    self.on_alert(sent)
            if virtual > watermark:
                yield from _watermark(virtual)
                watermark = virtual
            advance = int((now - last_tick) * 1000)
            if advance > 0:
                _processing_ms += advance
                last_tick += advance / 1000
                step = _Event.AdvanceProcessingTime(advance_duration=advance * 1000)
                yield _Event(processing_time_event=step)
            if sent == len(pending):
                finished_at = finished_at or now
                if now - finished_at >= self.drain_s:
                    return
            self.stop.wait(self.tick_s)

    def _arrivals(self, watermark: int) -> Iterator[Any]:
        """Answers and re-submitted alerts written since the last tick, at the watermark."""
        answers = []
        for record in self._answers.read_new()[0]:
            try:
                answer = Answer.from_bytes(_json(record), where=str(self.answers))
            except InvalidAlertError:
                continue  # the console validates what it writes; a hand-written bad line is skipped
            answers.append(((answer.service, answer.intent_id, answer.answer.encode()), watermark))
        if answers:
            yield _elements(ANSWERS, answers)
        if self._resubmitted is None:
            return
        alerts = []
        for record in self._resubmitted.read_new()[0]:
            try:
                alert = Alert.from_bytes(_json(record), where=str(self.resubmit))
            except InvalidAlertError:
                continue
            alerts.append(((alert.service, alert.to_bytes()), watermark))
        if alerts:
            yield _elements(EVENTS, alerts)


def _json(record: dict[str, Any]) -> bytes:
    return json.dumps(record).encode()


@dataclass
class LiveScript(Script):
    """A Script whose TestStream reads its events from a TestStream service at `endpoint`."""

    endpoint: str = ""

    def build(self) -> TestStream:
        return TestStream(output_tags={EVENTS, ANSWERS}, endpoint=self.endpoint)


class AppendLines(beam.DoFn):
    """Appends each JSON line to a file as the pipeline emits it (the console follows it).

    One write of one whole line under a lock: a reader never sees half of
    one. A retried bundle may append a line twice; the files of a live run
    are a view, the sorted record of a run is the demo's.
    """

    def __init__(self, path: str) -> None:
        super().__init__()
        self._path = path

    def process(self, line: bytes) -> Iterator[None]:
        with _append_lock, open(self._path, "ab") as handle:
            handle.write(line + b"\n")
        return iter(())


def run_live(
    feed: LiveFeed,
    *,
    out: Path,
    longterm_uri: str,
    model_spec: str = "rules",
    on_progress: Callable[[int], None] | None = None,
) -> ReplayResult:
    """Run the triage pipeline on `feed`'s events, appending records under `out` as they come."""
    global _processing_ms
    _processing_ms = 0
    for name in RECORD_FILES:
        (out / f"{name}.jsonl").write_bytes(b"")

    def build(events: PCollection[Any], answers: PCollection[Any]) -> dict[str, Any]:
        outputs = triage(
            events,
            answers,
            model_spec=model_spec,
            longterm_uri=longterm_uri,
            clock_ms=live_clock_ms,
        )
        for name, lines in as_json_lines(outputs).items():
            _ = lines | f"Append[{name}]" >> beam.ParDo(AppendLines(str(out / f"{name}.jsonl")))
        return {
            "outputs": outputs.outputs,
            "intents": outputs.intents,
            "errors": outputs.errors,
            "lifecycle": outputs.lifecycle,
        }

    server = TestStreamServiceController(feed)
    server.start()
    try:
        run = run_locally(LiveScript(endpoint=server.endpoint), build, on_progress=on_progress)
    finally:
        feed.stop.set()
        server.stop()
    return result_of(run)
