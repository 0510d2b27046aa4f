"""Whether a runner delivers a parked activation's outputs: decided where the pipeline is built.

A parked activation finishes in a processing-time timer callback (the
poll). Beam's local runners do not hold a step's output watermark for
pending processing-time timers, so on some of them the poll's outputs reach
a downstream grouping after it has completed: the batch DirectRunner fails
the pipeline (an `AssertionError` in its GroupByKey), the streaming one with
a real clock drops them as late, together with every poll still pending when
its input ends. There RunAgent runs every call in place, as with
`max_inflight_calls=1`: slower, never wrong.

What each runner a user can reach does (Beam 2.77 and 2.78):

- `DirectRunner` (the default of `beam.Pipeline()`): it would hand a
  pipeline to Prism or the FnApiRunner, but both are refused for a stateful
  DoFn with a processing-time timer, so RunAgent always runs on the
  `BundleBasedDirectRunner`. In batch: in place. Streaming: parks only when
  every input of RunAgent comes from a `TestStream`, whose script holds the
  watermark while the test clock fires the polls; in place otherwise.
- `FnApiRunner`: runs a stage's timers before the next stage reads its
  output, so parking delivers every output. Parks.
- `PrismRunner`, chosen explicitly (Beam never picks it for RunAgent):
  its processing-time timers do not follow a real clock. In place.
- `InteractiveRunner`: decided for the runner it wraps.
- Any other runner (Dataflow, Flink, Spark) fires processing-time timers
  on the wall clock and holds the watermark for them. Parks.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.pvalue import PCollection
from apache_beam.testing.test_stream import TestStream

from beam_agents.config import AgentConfig

__all__ = ["announce_in_place", "in_place_reason", "parks_by_config"]

_LOGGER = logging.getLogger(__name__)
_announced: set[str] = set()
_announced_lock = threading.Lock()


def in_place_reason(
    runner: object, options: PipelineOptions, inputs: Iterable[PCollection[object] | None]
) -> str | None:
    """Why RunAgent must run its calls in place on `runner`; None when parking is safe.

    `inputs` are RunAgent's inputs (events, answers): on the streaming
    DirectRunner parking is safe only when all of them come from a TestStream.
    """
    runner = _underlying(runner)
    module = type(runner).__module__ + "."
    if module.startswith("apache_beam.runners.direct."):
        if not options.view_as(StandardOptions).streaming:
            return "the batch DirectRunner"
        if not all(_from_test_stream(pcoll) for pcoll in inputs if pcoll is not None):
            return "the streaming DirectRunner on an input that is not a TestStream"
        return None
    if module.startswith("apache_beam.runners.portability.prism_runner."):
        return "the PrismRunner"
    return None


def parks_by_config(config: AgentConfig) -> bool:
    """Whether `config` would park calls that wait (it has calls, and more than one may fly)."""
    has_calls = (
        config.provider_factory is not None or config.embedder is not None or bool(config.tools)
    )
    return has_calls and config.max_inflight_calls > 1


def announce_in_place(reason: str) -> None:
    """Log once per process and runner that calls run in place, with what it costs."""
    with _announced_lock:
        if reason in _announced:
            return
        _announced.add(reason)
    _LOGGER.warning(
        "RunAgent runs model and tool calls in place on %s: that runner would deliver a "
        "parked activation's outputs after a downstream grouping had completed. Each call "
        "holds the Beam thread for its latency, as with max_inflight_calls=1; results are "
        "the same (docs/runtime.md, Parking, Runners).",
        reason,
    )


def _underlying(runner: object) -> object:
    """The runner that executes the pipeline: the one an InteractiveRunner wraps."""
    seen = 0
    while type(runner).__module__.startswith("apache_beam.runners.interactive.") and seen < 8:
        inner = getattr(runner, "_underlying_runner", None)
        if inner is None:
            break
        runner, seen = inner, seen + 1
    return runner


def _from_test_stream(pcoll: PCollection[object]) -> bool:
    """Whether every root `pcoll` descends from (through main inputs) is a TestStream."""
    pending = [pcoll]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        producer = current.producer
        if producer is None or id(producer) in seen:
            continue
        seen.add(id(producer))
        if isinstance(producer.transform, TestStream):
            continue
        parents = [p for p in producer.main_inputs.values() if isinstance(p, PCollection)]
        if not parents:
            return False  # a root that is not a TestStream: Create, Impulse, a source
        pending.extend(parents)
    return True
