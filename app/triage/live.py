"""A live run: alerts replayed against the wall clock, answers read as a person writes them.

The demo replays twelve hours in a couple of minutes from a fixed script;
nobody could answer an approval in between. Here the TestStream reads its
events from a local gRPC TestStream service (`TestStreamServiceController`)
that `LiveFeed` fills as time passes, so the streaming DirectRunner keeps
production's timers while a person takes part.

One clock drives the run: the run's clock, which starts at the first
alert's event time and runs `speedup` times faster than the wall clock (one
hour of alerts per minute at 60). Alerts arrive when their time comes, the
watermark follows them (so idle services expire: TTL), and processing time
follows it too, so an approval's deadline is set and fired in the same
time as the TTL that must not pre-empt it: a suspended service can never be
wiped before its approval times out. A person's fifteen minutes would be
fifteen seconds at 60x, so the live run gives its approvals a window in
the person's time (`approval_window_s`, two minutes by default: two hours of
run time). The run publishes its clock (`clock.json`, see
`beam_agents.console.clock`) so the console counts deadlines in the same time.

The answers file (the console's sink) and a re-submission file are followed
as they grow; each new line enters the pipeline at the current watermark.
A live run verifies its answers (`answers_signed`): each answer line enters
whole, as the signed envelope the console wrote, and the agent's DoFn
checks its signature as a deployed job would.
Every record is appended to the run directory as the pipeline emits it, so
the console shows the run as it happens. The feed ends `drain_s` after the
last alert, or when asked to stop; the run then writes summary.json and
report.html like the demo.
"""

from __future__ import annotations

import bisect
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
from beam_agents.console.clock import DRAINING, ENDED, RUNNING, RunClock, write_clock
from beam_agents.console.follow import JsonLinesFollower
from beam_agents.local import ANSWERS, EVENTS, Script, run_locally

__all__ = ["DEFAULT_WINDOW_S", "RECORD_FILES", "LiveFeed", "LiveScript", "run_live"]

_Event = beam_runner_api_pb2.TestStreamPayload.Event
_CODER = FastPrimitivesCoder()
RECORD_FILES = ("outputs", "intents", "errors", "lifecycle")
_MAX_EVENT_MS = 253_402_300_799_000  # 9999-12-31: later is the end-of-stream drain
DEFAULT_WINDOW_S = 120.0
"""How long a person has to answer an approval in a live run, in their seconds."""
_CLOCK_EVERY_S = 0.5
_append_lock = threading.Lock()
_reached_ms = 0
"""The newest event time of any record the pipeline appended: how far it has got."""


def _elements(tag: str, values: Sequence[tuple[Any, int]]) -> Any:
    stamped = [
        beam_runner_api_pb2.TestStreamPayload.TimestampedElement(
            encoded_element=_CODER.encode(value), timestamp=at_ms * 1000
        )
        for value, at_ms in values
    ]
    return _Event(element_event=_Event.AddElements(elements=stamped, tag=tag))


def _processing_time(advance_ms: int) -> Any:
    step = _Event.AdvanceProcessingTime(advance_duration=advance_ms * 1000)
    return _Event(processing_time_event=step)


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
    drain_s: float = DEFAULT_WINDOW_S + 5
    tick_s: float = 0.25
    on_alert: Callable[[int], None] | None = None
    approval_window_s: float = DEFAULT_WINDOW_S
    clock_dir: Path | None = None
    """Where `clock.json` is published (the run directory); None: not published."""
    answers_signed: bool = False
    """Pass each answer line whole (the signed envelope) rather than its `answer` text."""

    def __post_init__(self) -> None:
        self.stop = threading.Event()
        self._answers = JsonLinesFollower(self.answers)
        self._resubmitted = JsonLinesFollower(self.resubmit) if self.resubmit else None
        self._pending = sorted(self.alerts, key=lambda a: a.event_time_ms)
        self._times = [a.event_time_ms for a in self._pending]
        self.origin = (self._times[0] if self._times else 0) - 1
        self.run_ms = self.origin
        self.sent = 0
        self._state = RUNNING
        self._published = 0.0

    @property
    def approval_timeout_ms(self) -> int:
        """The approval window in run time: what the pipeline's deadlines use."""
        return int(self.approval_window_s * 1000 * self.speedup)

    def lag_ms(self) -> int:
        """Run time between the clock and the oldest alert fed that the pipeline has not reached."""
        first_unreached = bisect.bisect_right(self._times, _reached_ms, 0, self.sent)
        if first_unreached >= self.sent:
            return 0
        return max(self.run_ms - self._times[first_unreached], 0)

    def clock(self, state: str | None = None) -> RunClock:
        """The run's clock as the console reads it."""
        return RunClock(
            speedup=self.speedup,
            run_ms=self.run_ms,
            wall_ms=int(time.time() * 1000),
            approval_timeout_ms=self.approval_timeout_ms,
            lag_ms=self.lag_ms(),
            alerts_sent=self.sent,
            alerts_total=len(self._pending),
            first_ms=self._times[0] if self._times else 0,
            last_ms=self._times[-1] if self._times else 0,
            state=state or self._state,
        )

    def publish(self, state: str | None = None) -> None:
        """Rewrite clock.json (when the feed has a directory to publish to)."""
        if state is not None:
            self._state = state
        if self.clock_dir is not None:
            write_clock(self.clock_dir, self.clock())
            self._published = time.monotonic()

    def read_multiple(self, _keys: object) -> Iterator[Any]:
        """The TestStream service's reader interface: every event of the run, in order."""
        pending = self._pending
        watermark = processing = self.origin
        # The runner's processing-time clock starts at 0: move it to the run's clock.
        yield _processing_time(processing)
        started = time.monotonic()
        finished_at: float | None = None
        while not self.stop.is_set():
            now = time.monotonic()
            self.run_ms = virtual = self.origin + int((now - started) * 1000 * self.speedup)
            yield from self._arrivals(watermark)
            while self.sent < len(pending) and pending[self.sent].event_time_ms <= virtual:
                alert = pending[self.sent]
                if alert.event_time_ms > watermark:
                    yield from _watermark(alert.event_time_ms)
                    watermark = alert.event_time_ms
                yield _elements(EVENTS, [((alert.service, alert.to_bytes()), alert.event_time_ms)])
                self.sent += 1
                if self.on_alert is not None:
                    self.on_alert(self.sent)
            if virtual > watermark:
                yield from _watermark(virtual)
                watermark = virtual
            if virtual > processing:
                yield _processing_time(virtual - processing)
                processing = virtual
            if now - self._published >= _CLOCK_EVERY_S:
                self.publish()
            if self.sent == len(pending):
                finished_at = finished_at or now
                if now - finished_at >= self.drain_s:
                    break
            self.stop.wait(self.tick_s)
        self.publish(DRAINING)

    def _arrivals(self, watermark: int) -> Iterator[Any]:
        """Answers and re-submitted alerts written since the last tick, at the watermark."""
        answers = []
        for record in self._answers.read_new()[0]:
            try:
                answer = Answer.from_bytes(_json(record), where=str(self.answers))
            except InvalidAlertError:
                continue  # the console validates what it writes; a hand-written bad line is skipped
            text = _json(record) if self.answers_signed else answer.answer.encode()
            answers.append(((answer.service, answer.intent_id, text), watermark))
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

    def process(self, line: bytes, timestamp: Any = beam.DoFn.TimestampParam) -> Iterator[None]:
        global _reached_ms
        with _append_lock, open(self._path, "ab") as handle:
            handle.write(line + b"\n")
            at = int(timestamp.micros // 1000)
            if at < _MAX_EVENT_MS:  # a record of the final drain is at +infinity
                _reached_ms = max(_reached_ms, at)
        return iter(())


def run_live(
    feed: LiveFeed,
    *,
    out: Path,
    longterm_uri: str,
    model_spec: str = "rules",
    on_progress: Callable[[int], None] | None = None,
    cancel: threading.Event | None = None,
    answer_signing_key: str | None = None,
) -> tuple[ReplayResult, bool]:
    """Run the triage pipeline on `feed`'s events, appending records under `out` as they come.

    `answer_signing_key` (`env:NAME`): answers are taken only with a valid
    signature under it (the feed then passes answer lines whole). Returns the
    result and whether `cancel` cut the run short (its records are then partial).
    """
    feed.answers_signed = answer_signing_key is not None
    global _reached_ms
    _reached_ms = 0
    for name in RECORD_FILES:
        (out / f"{name}.jsonl").write_bytes(b"")

    def build(events: PCollection[Any], answers: PCollection[Any]) -> dict[str, Any]:
        outputs = triage(
            events,
            answers,
            model_spec=model_spec,
            longterm_uri=longterm_uri,
            replay=True,  # deadlines from the alert's time: the run's clock, as the TTL's
            approval_timeout_ms=feed.approval_timeout_ms,
            answer_signing_key=answer_signing_key,
        )
        for name, lines in as_json_lines(outputs).items():
            _ = lines | f"Append[{name}]" >> beam.ParDo(AppendLines(str(out / f"{name}.jsonl")))
        return {
            "outputs": outputs.outputs,
            "intents": outputs.intents,
            "errors": outputs.errors,
            "lifecycle": outputs.lifecycle,
        }

    feed.clock_dir = out
    feed.publish(RUNNING)
    server = TestStreamServiceController(feed)
    server.start()
    try:
        run = run_locally(
            LiveScript(endpoint=server.endpoint), build, on_progress=on_progress, cancel=cancel
        )
    finally:
        feed.stop.set()
        server.stop()
    feed.publish(ENDED)
    return result_of(run), run.cancelled
