"""Run an agent on the streaming DirectRunner from a scripted TestStream.

Event-time TTL and processing-time HITL timers only mean something in
streaming mode, so agent tests belong there. `Script` builds the TestStream
(events, answers, watermark and processing-time steps); `run_script` runs
RunAgent over it and hands back everything the transform emitted plus the
pipeline's metrics. Results are gathered through a module-level sink, which
works because the DirectRunner runs the pipeline in this process (and this
module is pickled by reference, not copied).

The streaming DirectRunner of Beam 2.77 loses the metric updates of every
bundle after a step's first on a worker thread; `run_script` runs inside
`beam_agents.testing.direct_metrics.bundle_scoped_metrics()` so that tests
can read counters back from a streaming pipeline.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import apache_beam as beam
from apache_beam.metrics.metric import MetricResults, MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.testing.test_stream import TestStream
from apache_beam.transforms.window import TimestampedValue
from apache_beam.utils.timestamp import Duration, Timestamp

from beam_agents.coders import encode_deterministic
from beam_agents.config import AgentConfig
from beam_agents.proto.beam_agents_pb2 import ToolIntent
from beam_agents.runtime.activation import Agent
from beam_agents.runtime.errors import ActivationError
from beam_agents.runtime.lifecycle import LifecycleEvent
from beam_agents.runtime.transform import RunAgent
from beam_agents.testing.direct_metrics import bundle_scoped_metrics

__all__ = ["Script", "StreamRun", "run_script"]

EVENTS = "events"
ANSWERS = "answers"

_lock = threading.Lock()
_sinks: dict[tuple[str, str], list[Any]] = {}


class _CollectDoFn(beam.DoFn):
    def __init__(self, run_id: str, name: str) -> None:
        super().__init__()
        self._key = (run_id, name)

    def process(self, element: Any) -> Iterator[None]:
        with _lock:
            _sinks.setdefault(self._key, []).append(element)
        return iter(())


def _at(ms: int) -> Timestamp:
    # Exact: float seconds would lose the millisecond TestStream insists on.
    return Timestamp(micros=ms * 1000)


@dataclass
class Script:
    """A TestStream script; times are event-time milliseconds."""

    _steps: list[Callable[[TestStream], TestStream]] = field(default_factory=list)

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


@dataclass
class StreamRun:
    """What one run emitted, in emission order, and its metrics."""

    outputs: list[tuple[bytes, bytes]]
    errors: list[ActivationError]
    intents: list[ToolIntent]
    metrics: MetricResults
    lifecycle: list[LifecycleEvent] = field(default_factory=list)
    """Lifecycle records, when the run asked for them (`run_script(lifecycle=True)`)."""

    def counter(self, namespace: str, name: str) -> int:
        """A committed counter's value (0 when it was never incremented)."""
        found = self.metrics.query(MetricsFilter().with_namespace(namespace).with_name(name))
        return sum(int(c.committed) for c in found["counters"])

    def fingerprint(
        self,
    ) -> tuple[list[tuple[bytes, bytes]], list[bytes], list[bytes], list[bytes]]:
        """Everything the run emitted, as sorted deterministic bytes.

        Two runs of one script with equal fingerprints emitted the same outputs,
        intents, errors and lifecycle records, byte for byte, each exactly as
        many times: what a retry-determinism check compares between a clean
        and a faulty run.
        """
        return (
            sorted(self.outputs),
            sorted(encode_deterministic(intent) for intent in self.intents),
            sorted(encode_deterministic(error.to_proto()) for error in self.errors),
            sorted(encode_deterministic(event.to_proto()) for event in self.lifecycle),
        )

    def kinds(self) -> list[str]:
        """The kinds of the lifecycle records, in order."""
        return [event.kind for event in self.lifecycle]

    def reasons(self) -> list[str]:
        """The reasons of the errors output, in order."""
        return [e.reason for e in self.errors]


def run_script(
    agent: Agent,
    config: AgentConfig,
    script: Script,
    *,
    clock_ms: Callable[[], int] | None = None,
    options: Sequence[str] = (),
    lifecycle: bool = False,
) -> StreamRun:
    """Run `agent` under RunAgent on the streaming DirectRunner over `script`.

    `lifecycle=True` also collects the `.lifecycle` records.
    """
    run_id = uuid.uuid4().hex
    pipeline_options = PipelineOptions(list(options))
    pipeline_options.view_as(StandardOptions).streaming = True
    pipeline = beam.Pipeline(runner="DirectRunner", options=pipeline_options)
    streams = pipeline | "Script" >> script.build()
    result = streams[EVENTS] | "RunAgent" >> RunAgent(
        agent, config, answers=streams[ANSWERS], clock_ms=clock_ms, lifecycle=lifecycle
    )
    collections = [
        ("outputs", result.outputs),
        ("errors", result.errors),
        ("intents", result.intents),
    ]
    if result.lifecycle is not None:
        collections.append(("lifecycle", result.lifecycle))
    for name, pcoll in collections:
        _ = pcoll | f"Collect{name.title()}" >> beam.ParDo(_CollectDoFn(run_id, name))
    with bundle_scoped_metrics():
        outcome = pipeline.run()
        outcome.wait_until_finish()
    with _lock:
        collected = {
            name: _sinks.pop((run_id, name), [])
            for name in ("outputs", "errors", "intents", "lifecycle")
        }
    return StreamRun(
        outputs=collected["outputs"],
        errors=collected["errors"],
        intents=collected["intents"],
        metrics=outcome.metrics(),
        lifecycle=collected["lifecycle"],
    )
