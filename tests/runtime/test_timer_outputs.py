"""Outputs a timer emits reach downstream aggregations on every runner a user reaches.

RunAgent emits from three timers: the poll of a parked call (outputs,
intents), an approval's timeout (a `suspension_timeout` dead letter) and a
key's expiry (`ttl_expired` lifecycle records). Each of RunAgent's four
outputs is grouped (GroupByKey) and combined (CombinePerKey) downstream,
and every record must arrive in both. Where a runner cannot deliver timer
outputs in time, RunAgent moves the pipeline to one that can, or refuses
it at construction, naming the alternative; it never fails at run time.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.pvalue import PCollection
from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing import test_stream
from apache_beam.transforms.window import FixedWindows, TimestampedValue

from beam_agents import AgentConfig, FlushToLongterm, RunAgent
from beam_agents.errors import ConfigurationError
from beam_agents.model import FakeLLM
from beam_agents.runtime import _runners
from tests.runtime import agents
from tests.runtime.collect import Collect, take_run

pytestmark = pytest.mark.pipeline

KEYS = 6
ASKS = 3
"""Keys whose events ask for approval (nobody answers); the others complete."""
TTL_MS = 60_000


def _events() -> list[tuple[bytes, bytes]]:
    return [
        (f"k{i}".encode(), b"approve disk full" if i < ASKS else b"cpu idle") for i in range(KEYS)
    ]


def _created(p: beam.Pipeline) -> PCollection[Any]:
    return p | beam.Create(_events())


def _streamed(p: beam.Pipeline) -> PCollection[Any]:
    """Events at 1-6 s; the approvals' 60 s timeout passes on the test clock, then the
    watermark stops past every key's expiry (a suspended key's is pushed back by the
    timeout) before it ends, as a test script should (docs/runtime.md, Runners)."""
    stream = test_stream.TestStream().add_elements(
        [TimestampedValue(event, 1 + i) for i, event in enumerate(_events())]
    )
    stream = stream.advance_processing_time(120).advance_watermark_to(2 * TTL_MS // 1000 + 30)
    return p | stream.advance_watermark_to_infinity()  # type: ignore[no-any-return]


@dataclass(frozen=True)
class _Runner:
    make: Callable[[], beam.Pipeline]
    source: Callable[[beam.Pipeline], PCollection[Any]]
    streaming: bool = False


RUNNERS = {
    "beam.Pipeline()": _Runner(lambda: beam.Pipeline(), _created),
    "runner=DirectRunner": _Runner(lambda: beam.Pipeline(runner="DirectRunner"), _created),
    "FnApiRunner()": _Runner(lambda: beam.Pipeline(runner=FnApiRunner()), _created),
    "streaming DirectRunner, TestStream": _Runner(
        lambda: beam.Pipeline(runner="DirectRunner", options=PipelineOptions(streaming=True)),
        _streamed,
        streaming=True,
    ),
}


def _aggregate(pcoll: PCollection[Any], name: str, run_id: str, streaming: bool) -> None:
    """Group and combine `pcoll` by a key of each record, collecting both results."""
    keyed = pcoll | f"Key[{name}]" >> beam.Map(lambda record: (_kind(name, record), 1))
    if streaming:  # an unbounded input is grouped in windows
        keyed = keyed | f"Window[{name}]" >> beam.WindowInto(FixedWindows(3600))
    grouped = keyed | f"Group[{name}]" >> beam.GroupByKey()
    counted = keyed | f"Count[{name}]" >> beam.CombinePerKey(sum)
    _ = (
        grouped
        | f"Sizes[{name}]" >> beam.MapTuple(lambda kind, ones: (kind, len(list(ones))))
        | f"CollectGrouped[{name}]" >> beam.ParDo(Collect(run_id, f"grouped {name}"))
    )
    _ = counted | f"CollectCounted[{name}]" >> beam.ParDo(Collect(run_id, f"counted {name}"))


def _kind(name: str, record: Any) -> str:
    """What a record is, as the aggregations count it."""
    if name == "outputs":
        return "output"
    if name == "intents":
        return str(record.tool)
    if name == "errors":
        return str(record.reason)
    return str(record.kind)


def _run(runner: _Runner) -> dict[str, dict[str, int]]:
    provider = FakeLLM(name=f"timer-outputs-{uuid.uuid4().hex}", latency_s=0.02, default=b"ok")
    provider.reset()
    config = AgentConfig(
        provider_factory=provider,
        ttl_ms=TTL_MS,
        longterm_memory=f"memory://timer-outputs-{uuid.uuid4().hex}",
        on_expire=FlushToLongterm(),  # expiry also emits its flush's records
    )
    run_id = uuid.uuid4().hex
    pipeline = runner.make()
    result = runner.source(pipeline) | RunAgent(
        agents.answer_or_ask_for_approval,
        config,
        lifecycle=True,
        clock_ms=agents.clock_at_zero,  # approval deadlines at 60 s: past on the wall clock
    )
    for name in ("outputs", "intents", "errors", "lifecycle"):
        _aggregate(getattr(result, name), name, run_id, runner.streaming)
    pipeline.run().wait_until_finish()
    found = take_run(run_id)
    return {name: dict(sorted(pairs)) for name, pairs in found.items()}


EXPECTED = {"outputs": {"output": KEYS - ASKS}, "intents": {"approval": ASKS}}
LIFECYCLE = {
    "activated": KEYS,
    "completed": KEYS - ASKS,
    "suspended": ASKS,
    "failed": ASKS,  # the approvals' timeouts
    "expire_flushed": KEYS - ASKS,  # a timed-out activation committed nothing to flush
    "ttl_expired": KEYS,
}
"""Lifecycle records by kind (`parked` left out: how many calls wait is the runner's)."""
ENDINGS = {"suspension_timeout", "ttl_wiped_suspension"}
"""How an unanswered approval ends: its timeout, or the key's expiry when that comes first
(in batch the watermark jumps to the end of time, so which timer fires first is the runner's)."""


@pytest.mark.parametrize("name", list(RUNNERS))
def test_timer_outputs_reach_a_group_by_key_and_a_combine_per_key_on_every_runner(
    name: str,
) -> None:
    got = _run(RUNNERS[name])

    for output, kinds in EXPECTED.items():
        assert got[f"grouped {output}"] == kinds, output
        assert got[f"counted {output}"] == kinds, output
    assert got["grouped errors"] == got["counted errors"]
    assert set(got["counted errors"]) <= ENDINGS
    assert sum(got["counted errors"].values()) == ASKS
    assert got["grouped lifecycle"] == got["counted lifecycle"]
    lifecycle = {k: n for k, n in got["counted lifecycle"].items() if k != "parked"}
    assert lifecycle == LIFECYCLE


def test_the_batch_bundle_based_direct_runner_is_refused_where_the_pipeline_is_built() -> None:
    """It would fail the pipeline at run time, once a timer's output met a grouping."""
    p = beam.Pipeline(runner=BundleBasedDirectRunner())
    config = AgentConfig(provider_factory=FakeLLM(name="timer-outputs-refused"))

    with pytest.raises(ConfigurationError, match=r"BundleBasedDirectRunner.*FnApiRunner"):
        _ = _created(p) | RunAgent(agents.answer_or_ask_for_approval, config)


def test_the_default_runner_in_batch_moves_to_the_fnapi_runner() -> None:
    p = beam.Pipeline()
    config = AgentConfig(provider_factory=FakeLLM(name="timer-outputs-moved"))
    _ = _created(p) | RunAgent(agents.answer_or_ask_for_approval, config)

    assert isinstance(p.runner, FnApiRunner)


def test_the_streaming_direct_runner_outside_a_test_stream_warns_that_timer_outputs_can_be_late(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_runners, "_announced", set())
    config = AgentConfig(provider_factory=FakeLLM(name="timer-outputs-late"))
    with caplog.at_level(logging.WARNING, logger=_runners.__name__):
        for label in ("First", "Second"):
            p = beam.Pipeline(runner="DirectRunner", options=PipelineOptions(streaming=True))
            _ = _created(p) | label >> RunAgent(agents.answer_or_ask_for_approval, config)
        streamed = beam.Pipeline(runner="DirectRunner", options=PipelineOptions(streaming=True))
        _ = _streamed(streamed) | RunAgent(agents.answer_or_ask_for_approval, config)

    late = [r for r in caplog.records if "dropped as late" in r.getMessage()]
    assert len(late) == 1
    assert "allowed_lateness" in late[0].getMessage()
