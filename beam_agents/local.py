"""Run a pipeline on this machine over recorded events, with production's timers.

Event-time TTL and processing-time approval deadlines only mean something on
a streaming runner, so a local run replays its inputs through a `TestStream`
on the streaming DirectRunner: a `Script` says when each event and answer
arrives and when the watermark and the processing-time clock move;
`stepped_script` builds one from timestamped records (JSON lines read by
`read_jsonl`, say), moving both clocks in fixed steps so hours of traffic
replay in the time the runner needs. `run_locally` runs it, reports how many
events went in while it runs, and hands back what the named outputs emitted
and the run's counters.

Counters need care. The streaming DirectRunner of Beam 2.77 loses the metric
updates of every bundle after a step's first on a worker thread: its
long-lived StateSampler caches each step's execution state together with the
first bundle's MetricsContainer, so later bundles update a container that was
already committed. `bundle_scoped_metrics()` rebinds each bundle's state to
that bundle's own container while it is active; `run_locally` runs inside it.
Runners that deploy (Dataflow, Flink) never reach this code.

Calls overlap across steps. The runner lets the script's next step in only
once nothing runs, and a parked activation's poll that waited on its call
would hold its one thread; so while `run_locally` runs, a poll whose call is
still running sets itself again a little ahead of the processing-time clock,
which creeps between the script's moves (`beam_agents._script_clock`), and
the following steps enter meanwhile (`beam_agents.runtime._deferred_polls`).
After the script's last clock move, polls wait on their calls. And a
DoFn instance serves many bundles, as on a deployed runner, instead of
being set up for each (`beam_agents._reused_dofns`).
"""

from __future__ import annotations

import contextlib
import gc
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apache_beam as beam
from apache_beam.metrics.metric import MetricResults, MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.pvalue import PCollection
from apache_beam.runners.worker import statesampler
from apache_beam.testing.test_stream import TestStream
from apache_beam.transforms.window import TimestampedValue
from apache_beam.utils.timestamp import Duration, Timestamp

from beam_agents import _failpoints as failpoints
from beam_agents._beam_metrics import counter
from beam_agents._reused_dofns import reusing_dofns
from beam_agents._script_clock import ScriptClock
from beam_agents.config import AgentConfig
from beam_agents.errors import BeamAgentsError, ConfigurationError
from beam_agents.proto.beam_agents_pb2 import ToolIntent
from beam_agents.runtime import _deferred_polls as deferred_polls
from beam_agents.runtime.errors import ActivationError
from beam_agents.runtime.lifecycle import LifecycleEvent
from beam_agents.runtime.transform import RunAgent

__all__ = [
    "ANSWERS",
    "EVENTS",
    "EVENTS_COUNTER",
    "AgentRun",
    "InvalidLocalInputError",
    "LocalRun",
    "Script",
    "bundle_scoped_metrics",
    "fail_after_tool_calls",
    "read_jsonl",
    "run_agent",
    "run_locally",
    "stepped_script",
]

EVENTS = "events"
"""The `TestStream` output carrying `(key, event)` elements."""
ANSWERS = "answers"
"""The `TestStream` output carrying `(key, intent_id, answer)` elements."""
EVENTS_COUNTER = ("beam_agents.local", "events")
"""The Beam counter of events that entered a local run (namespace, name)."""

_lock = threading.Lock()
_sinks: dict[tuple[str, str], list[Any]] = {}
_entered: dict[str, int] = {}


class InvalidLocalInputError(BeamAgentsError, ValueError):
    """A recorded input that cannot be replayed; the message names the file and line."""


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


def read_jsonl(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each non-blank line of a JSON-lines file as `("FILE:LINE", object)`.

    The location travels with the record so whoever checks its fields can say
    where a bad one is. A line that is not a JSON object raises
    `InvalidLocalInputError`.
    """
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise InvalidLocalInputError(f"{where}: not JSON ({exc})") from None
            except RecursionError:
                raise InvalidLocalInputError(f"{where}: JSON nested too deeply") from None
            if not isinstance(record, dict):
                raise InvalidLocalInputError(
                    f"{where}: expected a JSON object, got {type(record).__name__}"
                )
            yield where, record


@contextlib.contextmanager
def bundle_scoped_metrics() -> Iterator[None]:
    """While active, a step's execution state always reports to the current bundle."""
    original = statesampler.StateSampler.scoped_state

    def scoped_state(
        self: Any,
        name_context: Any,
        state_name: str,
        io_target: Any = None,
        metrics_container: Any = None,
    ) -> Any:
        state = original(self, name_context, state_name, io_target, metrics_container)
        if metrics_container is not None and state.metrics_container is not metrics_container:
            for name, cached in list(self._states_by_name.items()):
                if cached is state:
                    del self._states_by_name[name]
            state = original(self, name_context, state_name, io_target, metrics_container)
        return state

    statesampler.StateSampler.scoped_state = scoped_state  # type: ignore[method-assign]
    try:
        yield
    finally:
        statesampler.StateSampler.scoped_state = original  # type: ignore[method-assign]


class _CollectDoFn(beam.DoFn):
    """Gathers one named output in this process, under the run's id.

    The DirectRunner runs the pipeline in this process and this module is
    pickled by reference, so the module-level sink is the caller's.
    """

    def __init__(self, run_id: str, name: str) -> None:
        super().__init__()
        self._key = (run_id, name)

    def process(self, element: Any) -> Iterator[None]:
        with _lock:
            _sinks.setdefault(self._key, []).append(element)
        return iter(())


class _CountEventsDoFn(beam.DoFn):
    """Counts events entering the run: a Beam counter, and the live figure for progress."""

    def __init__(self, run_id: str) -> None:
        super().__init__()
        self._run_id = run_id
        self._events = counter(*EVENTS_COUNTER)

    def process(self, element: Any) -> Iterator[Any]:
        self._events.inc()
        with _lock:
            _entered[self._run_id] = _entered.get(self._run_id, 0) + 1
        yield element


@dataclass
class LocalRun:
    """What one local run emitted, per named output in emission order, and its metrics."""

    outputs: dict[str, list[Any]]
    metrics: MetricResults
    events: int = 0
    """Events that entered the run."""
    wall_seconds: float = 0.0
    cancelled: bool = False
    """The run was cancelled (`run_locally(cancel=...)`) before it finished: outputs are partial."""

    def counters(self) -> dict[str, int]:
        """Every committed counter by `namespace/name`, and each distribution's sum.

        A distribution's sum is the total a run reports (the milliseconds
        calls waited for a rate limit, say); its count and extremes are in
        `metrics`.
        """
        counters: dict[str, int] = {}
        queried = self.metrics.query(MetricsFilter())
        for result in queried["counters"]:
            name = f"{result.key.metric.namespace}/{result.key.metric.name}"
            counters[name] = counters.get(name, 0) + int(result.committed)
        for result in queried["distributions"]:
            name = f"{result.key.metric.namespace}/{result.key.metric.name}"
            committed = result.committed
            counters[name] = counters.get(name, 0) + (int(committed.sum) if committed else 0)
        return counters


Build = Callable[[PCollection[Any], PCollection[Any]], Mapping[str, PCollection[Any]]]
"""Builds the graph over the events and answers; returns the outputs to gather, by name."""


def run_locally(
    script: Script,
    build: Build,
    *,
    on_progress: Callable[[int], None] | None = None,
    options: Sequence[str] = (),
    cancel: threading.Event | None = None,
) -> LocalRun:
    """Run `build`'s graph over `script` on the streaming DirectRunner and gather its outputs.

    `on_progress(events_entered)` is called from this thread a few times a
    second while the pipeline runs, and once at the end. A pipeline failure
    is raised here. Setting `cancel` stops the runner where it is (a backlog
    is not worked off): the run returns what was gathered, `cancelled`.
    """
    run_id = uuid.uuid4().hex
    pipeline_options = PipelineOptions(list(options))
    pipeline_options.view_as(StandardOptions).streaming = True
    pipeline = beam.Pipeline(runner="DirectRunner", options=pipeline_options)
    streams = pipeline | "Script" >> script.build()
    events = streams[EVENTS] | "CountEvents" >> beam.ParDo(_CountEventsDoFn(run_id))
    gathered = build(events, streams[ANSWERS])
    for name, pcoll in gathered.items():
        _ = pcoll | f"Collect[{name}]" >> beam.ParDo(_CollectDoFn(run_id, name))
    started = time.monotonic()
    clock = ScriptClock(script._moves if script._aligned else [])
    try:
        with bundle_scoped_metrics(), deferred_polls.deferring(clock), reusing_dofns(), _frozen():
            running = pipeline.run()
            clock.attach(running)
            cancelled = _wait(running, run_id, on_progress, cancel)
    finally:
        with _lock:
            collected = {name: _sinks.pop((run_id, name), []) for name in gathered}
            entered = _entered.pop(run_id, 0)
    if on_progress is not None:
        on_progress(entered)
    return LocalRun(
        outputs=collected,
        metrics=running.metrics(),
        events=entered,
        wall_seconds=time.monotonic() - started,
        cancelled=cancelled,
    )


@contextlib.contextmanager
def _frozen() -> Iterator[None]:
    """The collector leaves what the process held before the run alone while it runs.

    A full collection walks every tracked object, the caller's included (a
    notebook's data, an earlier run's results): over a local run's many
    small allocations that was a pause on every thread, the runner's and the
    call loop's alike. What was frozen is collectable again afterwards.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _wait(
    running: Any,
    run_id: str,
    on_progress: Callable[[int], None] | None,
    cancel: threading.Event | None,
) -> bool:
    """Wait for the pipeline, reporting progress meanwhile; re-raises its failure here.

    Returns whether `cancel` ended it first.
    """
    if on_progress is None and cancel is None:
        running.wait_until_finish()
        return False
    done = threading.Event()
    failures: list[BaseException] = []

    def wait() -> None:
        # Kept for the calling thread: a second wait_until_finish() does not raise again.
        try:
            running.wait_until_finish()
        except BaseException as exc:  # re-raised below, on the caller's thread
            failures.append(exc)
        finally:
            done.set()

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    while not done.wait(0.25):
        if cancel is not None and cancel.is_set():
            # The executor's workers are daemon threads: those still busy
            # finish their bundle and are dropped with the process.
            running.cancel()
            return True
        if on_progress is not None:
            with _lock:
                entered = _entered.get(run_id, 0)
            on_progress(entered)
    waiter.join()
    if failures:
        raise failures[0]
    return False


@dataclass
class AgentRun:
    """What one agent emitted over a script, each output in emission order, and the counters."""

    outputs: list[tuple[bytes, bytes]]
    errors: list[ActivationError]
    intents: list[ToolIntent]
    metrics: MetricResults
    lifecycle: list[LifecycleEvent] = field(default_factory=list)
    """Lifecycle records, when the run asked for them (`run_agent(lifecycle=True)`)."""


def run_agent(
    agent: Callable[..., Any],
    config: AgentConfig,
    script: Script,
    *,
    clock_ms: Callable[[], int] | None = None,
    options: Sequence[str] = (),
    lifecycle: bool = False,
) -> AgentRun:
    """Run `agent` under `RunAgent(agent, config)` over `script` and gather what it emitted.

    The shortest way to see an agent work end to end, with its TTL and
    approval timers: a project's tests and notebooks use it. `clock_ms`
    stands in for the processing-time clock of approval deadlines
    (`RunAgent(clock_ms=...)`); `lifecycle=True` also gathers `.lifecycle`.
    """

    def build(events: PCollection[Any], answers: PCollection[Any]) -> Mapping[str, Any]:
        result = events | "RunAgent" >> RunAgent(
            agent, config, answers=answers, clock_ms=clock_ms, lifecycle=lifecycle
        )
        outputs = {"outputs": result.outputs, "errors": result.errors, "intents": result.intents}
        if result.lifecycle is not None:
            outputs["lifecycle"] = result.lifecycle
        return outputs

    run = run_locally(script, build, options=options)
    return AgentRun(
        outputs=run.outputs["outputs"],
        errors=run.outputs["errors"],
        intents=run.outputs["intents"],
        metrics=run.metrics,
        lifecycle=run.outputs.get("lifecycle", []),
    )


@contextlib.contextmanager
def fail_after_tool_calls(*, times: int = 1) -> Iterator[failpoints.Failpoint]:
    """While active, the commits of the first `times` activations that called a tool fail once.

    What a worker crash between a tool call and the commit does to a running
    pipeline, on demand: each failed activation's tool calls ran and were
    recorded, the runner retries its bundle, and the retry gets the recorded
    results back instead of calling the tools again. The triage demo shows
    it by default. Any key, any seq; yields the failpoint, whose `fired`
    lists each (entity_key, seq) it failed.
    """
    failed: set[tuple[bytes, int]] = set()

    def first_time(entity_key: bytes, seq: int) -> bool:
        if (entity_key, seq) in failed:
            return False
        failed.add((entity_key, seq))
        return True

    point = failpoints.Failpoint(match=first_time, times=times)
    failpoints.arm(failpoints.AFTER_TOOL, point)
    try:
        yield point
    finally:
        failpoints.disarm(failpoints.AFTER_TOOL)
