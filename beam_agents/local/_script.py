"""`Script`: when each event and answer arrives, and when the two clocks move.

The runtime's timers only mean something on a streaming runner: event-time
TTL expiry and processing-time approval deadlines. A script is a `TestStream`
for the streaming DirectRunner, so a local run fires them as production
does; `stepped_script` builds one from timestamped records, moving both
clocks in fixed steps so hours of traffic replay in the time the runner
needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from apache_beam.testing.test_stream import TestStream
from apache_beam.transforms.window import TimestampedValue
from apache_beam.utils.timestamp import Duration, Timestamp

from beam_agents.errors import ConfigurationError

__all__ = ["ANSWERS", "EVENTS", "Script", "stepped_script"]

EVENTS = "events"
"""The `TestStream` output carrying `(key, event)` elements."""
ANSWERS = "answers"
"""The `TestStream` output carrying `(key, intent_id, answer)` elements."""


def _at(ms: int) -> Timestamp:
    # Exact: float seconds would lose the millisecond TestStream insists on.
    return Timestamp(micros=ms * 1000)


@dataclass
class Script:
    """A TestStream script; times are event-time milliseconds."""

    _steps: list[Callable[[TestStream], TestStream]] = field(default_factory=list)
    _moves: list[int] = field(default_factory=list)
    """Where each processing-time move leaves the clock (it starts at 0), in order."""
    _aligned: bool = False
    """Whether the clock stands at the watermark after each move (`stepped_script`)."""

    def events(self, *events: tuple[Any, Any, int]) -> Script:
        """Add `(key, event, event_time_ms)` elements."""
        values = [TimestampedValue((k, e), _at(t)) for k, e, t in events]
        self._steps.append(lambda ts: ts.add_elements(values, tag=EVENTS))
        return self

    def answers(self, *answers: tuple[Any, str, Any, int]) -> Script:
        """Add `(key, intent_id, answer, event_time_ms)` answers."""
        values = [TimestampedValue((k, i, a), _at(t)) for k, i, a, t in answers]
        self._steps.append(lambda ts: ts.add_elements(values, tag=ANSWERS))
        return self

    def raw(self, *elements: tuple[Any, int], answers: bool = False) -> Script:
        """Add `(element, event_time_ms)` as they are, to test malformed input."""
        values = [TimestampedValue(element, _at(t)) for element, t in elements]
        tag = ANSWERS if answers else EVENTS
        self._steps.append(lambda ts: ts.add_elements(values, tag=tag))
        return self

    def watermark(self, ms: int) -> Script:
        """Advance the event-time watermark of both inputs to `ms`."""
        self._steps.append(
            lambda ts: ts.advance_watermark_to(_at(ms), tag=EVENTS).advance_watermark_to(
                _at(ms), tag=ANSWERS
            )
        )
        return self

    def processing_time(self, advance_ms: int) -> Script:
        """Advance the processing-time clock by `advance_ms`."""
        self._moves.append((self._moves[-1] if self._moves else 0) + advance_ms)
        self._steps.append(
            lambda ts: ts.advance_processing_time(Duration(micros=advance_ms * 1000))
        )
        return self

    def build(self) -> TestStream:
        """The TestStream, ending with the watermark at infinity."""
        stream = TestStream(output_tags={EVENTS, ANSWERS})
        for step in self._steps:
            stream = step(stream)
        stream = stream.advance_watermark_to_infinity(tag=EVENTS)
        return stream.advance_watermark_to_infinity(tag=ANSWERS)  # type: ignore[no-any-return]


def stepped_script(
    events: Iterable[tuple[Any, Any, int]],
    answers: Iterable[tuple[Any, str, Any, int]] = (),
    *,
    step_ms: int,
    drain_ms: int,
) -> Script:
    """A script that replays timestamped records in steps of `step_ms` of event time.

    Before each step the watermark and the processing-time clock both move to
    the step's start, so event-time timers (TTL) and processing-time timers
    (approval deadlines) fire in the order a live deployment would fire them.
    Answers of a step arrive before its events. After the last step both
    clocks move `drain_ms` further, letting pending deadlines and expiries
    fire. A record with two events of one key in one step replays both in
    that step, in the order given.
    """
    if type(step_ms) is not int or step_ms <= 0:
        raise ConfigurationError("stepped_script.step_ms", f"must be an int > 0, got {step_ms!r}")
    if type(drain_ms) is not int or drain_ms < 0:
        raise ConfigurationError(
            "stepped_script.drain_ms", f"must be an int >= 0, got {drain_ms!r}"
        )
    steps: dict[int, tuple[list[tuple[Any, Any, int]], list[tuple[Any, str, Any, int]]]] = {}
    for event in events:
        steps.setdefault(event[2] // step_ms, ([], []))[0].append(event)
    for answer in answers:
        steps.setdefault(answer[3] // step_ms, ([], []))[1].append(answer)
    script = Script(_aligned=True)
    clock = 0  # TestStream's processing-time clock starts at 0
    last = 0
    for step in sorted(steps):
        start = step * step_ms
        script.watermark(start)
        if start > clock:  # TestStream refuses a zero advance
            script.processing_time(start - clock)
            clock = start
        step_events, step_answers = steps[step]
        if step_answers:
            script.answers(*step_answers)
        if step_events:
            script.events(*step_events)
        last = start + step_ms
    if drain_ms:
        script.processing_time(drain_ms)
    script.watermark(last + drain_ms)
    return script
