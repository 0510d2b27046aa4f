"""Parking on every runner `beam.Pipeline()` can give: full results, with aggregations downstream.

Each runner runs the same events with calls that wait, once with the default
`max_inflight_calls` and once with 1 (every call in place), and feeds
RunAgent's outputs to a GroupByKey and a Count.Globally. Where a runner
cannot deliver a parked activation's outputs before such a grouping
completes, RunAgent runs the calls in place there instead of failing or
dropping them. (`beam.Pipeline()` in batch runs on the FnApiRunner, and the
batch BundleBasedDirectRunner is refused: tests/runtime/test_timer_outputs.py.)
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.pvalue import PCollection
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.runners.portability.prism_runner import PrismRunner
from apache_beam.testing import test_stream
from apache_beam.transforms import trigger
from apache_beam.transforms.window import GlobalWindows, TimestampedValue

from beam_agents import AgentConfig, RunAgent
from beam_agents.coders import encode_deterministic
from beam_agents.local import bundle_scoped_metrics
from beam_agents.model import FakeLLM
from beam_agents.runtime import _runners
from beam_agents.runtime._runners import in_place_reason
from tests.runtime import agents
from tests.runtime.collect import Collect, take

pytestmark = pytest.mark.pipeline

RUNTIME = "beam_agents.runtime"
KEYS = 20
EVENTS = 40
LATENCY_S = 0.05
TOTALS = ("activations", "model_calls", "memory_writes", "intents", "errors", "ttl_wipes")


def _events() -> list[tuple[bytes, bytes]]:
    return [(f"k{i % KEYS}".encode(), f"e{i}".encode()) for i in range(EVENTS)]


def _created(p: beam.Pipeline, label: str = "Create") -> PCollection[Any]:
    return p | label >> beam.Create(_events())


def _streamed(p: beam.Pipeline) -> PCollection[Any]:
    stream = test_stream.TestStream().add_elements(
        [TimestampedValue(event, 1_000 + i) for i, event in enumerate(_events())]
    )
    stream = stream.advance_watermark_to(1_000 + EVENTS).advance_watermark_to_infinity()
    return p | stream  # type: ignore[no-any-return]


@dataclass(frozen=True)
class _Runner:
    """How a user reaches one runner, and the events it reads."""

    make: Callable[[], beam.Pipeline]
    source: Callable[[beam.Pipeline], PCollection[Any]]
    streaming: bool = False


def _streaming_options() -> PipelineOptions:
    return PipelineOptions(streaming=True)


RUNNERS = {
    "beam.Pipeline()": _Runner(lambda: beam.Pipeline(), _created),
    "DirectRunner": _Runner(lambda: beam.Pipeline(runner="DirectRunner"), _created),
    "FnApiRunner": _Runner(lambda: beam.Pipeline(runner=FnApiRunner()), _created),
    "streaming DirectRunner, TestStream": _Runner(
        lambda: beam.Pipeline(runner="DirectRunner", options=_streaming_options()),
        _streamed,
        streaming=True,
    ),
    "streaming DirectRunner, Create": _Runner(
        lambda: beam.Pipeline(runner="DirectRunner", options=_streaming_options()),
        _created,
        streaming=True,
    ),
}
PARKS = {"beam.Pipeline()", "DirectRunner", "FnApiRunner", "streaming DirectRunner, TestStream"}
"""The runners that deliver a poll's outputs; on the others every call runs in place."""


@dataclass
class _Run:
    outputs: list[tuple[bytes, bytes]]
    grouped: list[tuple[bytes, list[bytes]]]
    count: list[int]
    intents: list[bytes]
    errors: list[bytes]
    totals: dict[str, int]
    parks: int
    result: Any


def _run(runner: _Runner, max_inflight_calls: int) -> _Run:
    provider = FakeLLM(name=f"runners-{uuid.uuid4().hex}", latency_s=LATENCY_S, default=b"ok")
    provider.reset()
    config = AgentConfig(provider_factory=provider, max_inflight_calls=max_inflight_calls)
    run_id = uuid.uuid4().hex
    pipeline = runner.make()
    result = runner.source(pipeline) | RunAgent(agents.ask_and_fingerprint, config)
    outputs = result.outputs
    if runner.streaming:  # an unbounded input is grouped once its watermark ends
        outputs = outputs | beam.WindowInto(
            GlobalWindows(),
            trigger=trigger.AfterWatermark(),
            accumulation_mode=trigger.AccumulationMode.DISCARDING,
        )
    grouped = outputs | beam.GroupByKey() | beam.MapTuple(lambda key, values: (key, sorted(values)))
    count = outputs | beam.combiners.Count.Globally().without_defaults()
    for name, pcoll in {
        "outputs": result.outputs,
        "grouped": grouped,
        "count": count,
        "intents": result.intents | "EncodeIntents" >> beam.Map(encode_deterministic),
        "errors": result.errors | "EncodeErrors" >> beam.Map(lambda e: e.reason),
    }.items():
        _ = pcoll | f"Collect[{name}]" >> beam.ParDo(Collect(run_id, name))
    # The streaming DirectRunner keeps only the first bundle's metrics of a
    # step without this (docs/runtime.md, Metrics).
    with bundle_scoped_metrics():
        running = pipeline.run()
        running.wait_until_finish()
    got = {
        name: take(run_id, name) for name in ("outputs", "grouped", "count", "intents", "errors")
    }
    counters = running.metrics().query(MetricsFilter().with_namespace(RUNTIME))["counters"]
    by_name: dict[str, int] = {}
    for counter in counters:
        name = counter.key.metric.name
        by_name[name] = by_name.get(name, 0) + int(counter.committed)
    return _Run(
        outputs=sorted(got["outputs"]),
        grouped=sorted(got["grouped"]),
        count=got["count"],
        intents=sorted(got["intents"]),
        errors=sorted(got["errors"]),
        totals={name: by_name.get(name, 0) for name in TOTALS},
        parks=by_name.get("parks", 0),
        result=running,
    )


@pytest.mark.parametrize("name", list(RUNNERS))
def test_parked_and_in_place_runs_agree_with_aggregations_downstream_on_every_runner(
    name: str,
) -> None:
    """Outputs, groups, count and metric totals: the same bytes as with max_inflight_calls=1."""
    runner = RUNNERS[name]
    serial = _run(runner, max_inflight_calls=1)
    default = _run(runner, max_inflight_calls=256)

    assert len(serial.outputs) == EVENTS
    assert serial.count == [EVENTS]
    assert len(serial.grouped) == KEYS
    assert default.outputs == serial.outputs
    assert default.grouped == serial.grouped
    assert default.count == serial.count
    assert default.intents == serial.intents
    assert default.errors == serial.errors == []
    assert default.totals["activations"] == EVENTS
    assert default.totals["ttl_wipes"] == KEYS
    assert default.totals == serial.totals
    if name in PARKS:
        assert default.parks > 0
    else:
        assert default.parks == 0


def test_running_in_place_is_logged_once_per_process(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_runners, "_announced", set())
    config = AgentConfig(provider_factory=FakeLLM(name="runners-log"))
    with caplog.at_level(logging.INFO, logger=_runners.__name__):
        for _ in range(3):
            p = beam.Pipeline(runner="DirectRunner", options=_streaming_options())
            _ = _created(p) | RunAgent(agents.ask_model, config)
            _ = _created(p, "CreateAgain") | "Again" >> RunAgent(agents.ask_model, config)

    lines = [r for r in caplog.records if "in place" in r.getMessage()]
    assert len(lines) == 1
    assert lines[0].levelno == logging.WARNING
    assert "in place on the streaming DirectRunner on an input" in lines[0].getMessage()


def test_a_config_that_never_parks_logs_nothing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_runners, "_announced", set())
    serial = AgentConfig(provider_factory=FakeLLM(name="runners-quiet"), max_inflight_calls=1)
    with caplog.at_level(logging.INFO, logger=_runners.__name__):
        p = beam.Pipeline(runner="DirectRunner", options=_streaming_options())
        _ = _created(p) | RunAgent(agents.ask_model, serial)
        _ = _created(p, "CreateMore") | "NoModel" >> RunAgent(agents.remember, AgentConfig())

    assert [r for r in caplog.records if "in place" in r.getMessage()] == []


def test_prism_chosen_explicitly_runs_calls_in_place() -> None:
    """Prism's processing-time timers do not follow a real clock (it cannot run here)."""
    p = beam.Pipeline(runner=PrismRunner())

    assert in_place_reason(p.runner, p.options, [_created(p)]) == "the PrismRunner"


def test_on_the_streaming_direct_runner_every_input_must_come_from_a_test_stream() -> None:
    p = beam.Pipeline(runner="DirectRunner", options=_streaming_options())
    streamed = _streamed(p) | "Shape" >> beam.Map(lambda e: e)
    created = _created(p, "Created")
    merged = (streamed, created) | beam.Flatten()

    assert in_place_reason(p.runner, p.options, [streamed]) is None
    assert in_place_reason(p.runner, p.options, [streamed, None]) is None
    assert in_place_reason(p.runner, p.options, [streamed, created]) is not None
    assert in_place_reason(p.runner, p.options, [merged]) is not None


def test_deployed_runners_park() -> None:
    from apache_beam.runners.dataflow.dataflow_runner import DataflowRunner

    options = PipelineOptions(
        [
            "--project=demo-project",
            "--region=europe-west1",
            "--temp_location=gs://bucket/tmp",
            "--dry_run=True",
        ]
    )
    p = beam.Pipeline(runner=DataflowRunner(), options=options)

    assert in_place_reason(p.runner, p.options, [_created(p)]) is None
