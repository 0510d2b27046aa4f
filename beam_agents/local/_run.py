"""`run_locally`: a graph over a `Script` on the streaming DirectRunner, its outputs gathered.

The run reports how many events went in while it runs, and hands back what
the named outputs emitted and the run's counters. While it runs, the
runner is held to production's habits: counters per bundle
(`bundle_scoped_metrics`), DoFn instances that outlive their bundle
(`_reused_dofns`), and polls of parked activations that let the script's
next step in (`_script_clock`, `beam_agents.runtime._paths.deferred_polls`).
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import apache_beam as beam
from apache_beam.metrics.metric import MetricResults, MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.pvalue import PCollection

from beam_agents._beam_metrics import counter
from beam_agents.local._metrics import bundle_scoped_metrics
from beam_agents.local._reused_dofns import reusing_dofns
from beam_agents.local._script import ANSWERS, EVENTS, Script
from beam_agents.local._script_clock import ScriptClock
from beam_agents.runtime._paths import deferred_polls

__all__ = ["EVENTS_COUNTER", "Build", "LocalRun", "run_locally"]

EVENTS_COUNTER = ("beam_agents.local", "events")
"""The Beam counter of events that entered a local run (namespace, name)."""

_lock = threading.Lock()
_sinks: dict[tuple[str, str], list[Any]] = {}
_entered: dict[str, int] = {}


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
