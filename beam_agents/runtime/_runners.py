"""Which runner RunAgent runs on, and whether it parks: decided where the pipeline is built.

Two kinds of output leave RunAgent from a timer callback rather than from
`process`: a key's expiry (the TTL timer: `ttl_expired` and flush records,
whatever `on_expire` emits) and the processing-time timer's work (an
approval's timeout, a parked activation's poll). A runner that does not
hold a step's output watermark for its pending timers lets those outputs
reach a downstream grouping after it completed: the batch
`BundleBasedDirectRunner` then fails the pipeline (an `AssertionError` in
its GroupByKey), the streaming one drops them as late when one watermark
advance passes both the timer and a window's end.

What each runner a user can reach does (Beam 2.77 and 2.78):

- `DirectRunner` (the default of `beam.Pipeline()`), batch: it would hand
  RunAgent's DoFn, which declares a processing-time timer, to the
  `BundleBasedDirectRunner`, so RunAgent moves the pipeline to the
  `FnApiRunner`, configured as the DirectRunner configures it. Parks.
- `BundleBasedDirectRunner()`, batch, chosen explicitly: refused at
  construction, naming the alternatives.
- `DirectRunner`, streaming (always the `BundleBasedDirectRunner`): parks
  only when every input of RunAgent comes from a `TestStream`, whose script
  holds the watermark while the test clock fires the polls; in place
  otherwise, with a warning that timer outputs may be late downstream.
- `FnApiRunner`: runs a stage's timers before the next stage reads its
  output, so every timer output arrives. Parks.
- `PrismRunner`, chosen explicitly: its processing-time timers do not
  follow a real clock. In place.
- `InteractiveRunner`: decided for the runner it wraps.
- Any other runner (Dataflow, Flink, Spark) fires processing-time timers
  on the wall clock and holds the watermark for every timer. Parks.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.pvalue import PCollection
from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner, SwitchingDirectRunner
from apache_beam.runners.runner import PipelineRunner
from apache_beam.testing.test_stream import TestStream

from beam_agents.errors import ConfigurationError

__all__ = [
    "announce_in_place",
    "in_place_reason",
    "settle_local_runner",
]

_LOGGER = logging.getLogger(__name__)
_announced: set[str] = set()
_announced_lock = threading.Lock()


def settle_local_runner(
    pipeline: beam.Pipeline, inputs: Iterable[PCollection[object] | None]
) -> None:
    """Put a local pipeline on a runner that delivers every timer output, or say why not.

    Called when RunAgent is applied, before anything runs: a pipeline that
    would fail or lose records at run time is moved or refused here, in one
    line. Moving the default DirectRunner's batch pipelines to the
    FnApiRunner is what the DirectRunner itself does for a pipeline without
    a processing-time timer; RunAgent's DoFn declares one (approval
    timeouts, parking), which alone would send it to the runner that fails.
    """
    runner = pipeline.runner
    streaming = pipeline.options.view_as(StandardOptions).streaming
    if type(runner) is SwitchingDirectRunner and not streaming:
        pipeline.runner = _direct_fnapi_runner(pipeline.options)
        _announce(
            "batch-direct",
            logging.INFO,
            "RunAgent runs this batch pipeline on the FnApiRunner, as the DirectRunner runs a "
            "pipeline without processing-time timers: its own choice for RunAgent, the "
            "BundleBasedDirectRunner, would deliver timer outputs after downstream groupings "
            "completed (docs/runtime.md, Runners).",
        )
    elif isinstance(runner, BundleBasedDirectRunner) and not streaming:
        raise ConfigurationError(
            "runner",
            "RunAgent cannot run on the batch BundleBasedDirectRunner: it delivers outputs "
            "emitted from timers (key expiry, approval timeouts) after a downstream GroupByKey "
            "or Combine has completed, which fails the pipeline; use beam.Pipeline() or "
            "runner=FnApiRunner() (docs/runtime.md, Runners)",
        )
    elif isinstance(runner, BundleBasedDirectRunner | SwitchingDirectRunner) and not all(
        _from_test_stream(pcoll) for pcoll in inputs if pcoll is not None
    ):
        _announce(
            "streaming-direct",
            logging.WARNING,
            "RunAgent on the streaming DirectRunner: that runner does not hold the watermark "
            "for timers, so an output a timer emits (key expiry, an approval timeout) can reach "
            "a downstream window after it closed and be dropped as late; give such windows "
            "allowed_lateness, or run on Dataflow or the FnApiRunner (docs/runtime.md, Runners).",
        )


def _direct_fnapi_runner(options: PipelineOptions) -> PipelineRunner:
    """The FnApiRunner as the DirectRunner builds one: the pipeline's options reach the workers."""
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner import fn_runner
    from apache_beam.runners.portability.portable_runner import JobServiceHandle

    encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
    provision = fn_runner.ExtendedProvisionInfo(
        beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded)
    )
    return fn_runner.FnApiRunner(provision_info=provision)


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
            return "the batch DirectRunner"  # refused or moved by `settle_local_runner` first
        if not all(_from_test_stream(pcoll) for pcoll in inputs if pcoll is not None):
            return "the streaming DirectRunner on an input that is not a TestStream"
        return None
    if module.startswith("apache_beam.runners.portability.prism_runner."):
        return "the PrismRunner"
    return None


def announce_in_place(reason: str) -> None:
    """Log once per process and runner that calls run in place, with what it costs."""
    _announce(
        reason,
        logging.WARNING,
        f"RunAgent runs model and tool calls in place on {reason}: that runner would deliver "
        "a parked activation's outputs after a downstream grouping had completed. Each call "
        "holds the Beam thread for its latency, as with max_inflight_calls=1; results are "
        "the same (docs/runtime.md, Parking, Runners).",
    )


def _announce(topic: str, level: int, message: str) -> None:
    """Log `message` once per process for `topic`: a runner's limits do not change per transform."""
    with _announced_lock:
        if topic in _announced:
            return
        _announced.add(topic)
    _LOGGER.log(level, message)


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
