"""Typed results: `RunAgent(..., output_type=T)` emits `(key, T)` as schema'd Beam rows."""

from __future__ import annotations

import dataclasses
import functools
import json
import subprocess
import sys
import uuid
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, NamedTuple

import apache_beam as beam
import pydantic
import pytest
from apache_beam.coders.typecoders import registry as coder_registry
from apache_beam.dataframe.convert import to_dataframe, to_pcollection
from apache_beam.pvalue import PCollection
from apache_beam.runners.pipeline_context import PipelineContext
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.transforms import trigger
from apache_beam.transforms.window import GlobalWindows

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest, RunAgent
from beam_agents.errors import ConfigurationError
from beam_agents.local import LocalRun, run_locally
from beam_agents.memory import SummarizeCompactor
from beam_agents.model import FakeLLM, Rule
from beam_agents.runtime._typed_outputs import typed_output
from beam_agents.testing.chaos import fail_commit_once
from beam_agents.testing.streaming import Script
from tests.runtime import agents
from tests.runtime.collect import Collect, take

pytestmark = pytest.mark.pipeline

Action = Literal["page", "ticket", "ignore"]


class PydanticDecision(pydantic.BaseModel):
    priority: Annotated[int, pydantic.Field(ge=0)]
    action: Action
    reason: str
    recall_changed: bool = False
    seen: int = 1
    alerts: list[str] = []
    note: str | None = None


@dataclasses.dataclass(frozen=True)
class DataclassDecision:
    priority: int
    action: Action
    reason: str
    recall_changed: bool = False
    seen: int = 1
    alerts: list[str] = dataclasses.field(default_factory=list)
    note: str | None = None


class TupleDecision(NamedTuple):
    priority: int
    action: Action
    reason: str
    recall_changed: bool = False
    seen: int = 1
    alerts: list[str] = []  # noqa: RUF012  # a NamedTuple default, never mutated
    note: str | None = None


TYPES = {"pydantic": PydanticDecision, "dataclass": DataclassDecision, "namedtuple": TupleDecision}

ANSWERS = {
    "disk full": {"priority": 1, "action": "page", "reason": "disk full"},
    "latency spike": {"priority": 2, "action": "ticket", "reason": "latency spike"},
}
IGNORE = {"priority": 3, "action": "ignore", "reason": "noise"}
EVENTS = [
    ("db-1", "disk full"),
    ("web-1", "latency spike"),
    ("db-1", "disk full"),
    ("web-2", "cpu idle"),
    ("db-2", "disk full"),
    ("web-1", "latency spike"),
    ("web-2", "cpu idle"),
]


def _decider(name: str, latency_s: float = 0.0) -> FakeLLM:
    """A model that answers each alert with its decision as JSON, as a native schema call does."""
    rules = [
        Rule(pattern=text, response=json.dumps(answer).encode()) for text, answer in ANSWERS.items()
    ]
    provider = FakeLLM(
        name=name, rules=rules, default=json.dumps(IGNORE).encode(), latency_s=latency_s
    )
    provider.reset()
    return provider


def _fields(value: Any) -> dict[str, Any]:
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return dict(value._asdict())


async def decide(output_type: type, ctx: ActivationContext) -> Complete:
    """Asks the model for a decision of `output_type` and completes with it.

    A key's later alerts amend the decision from memory and return it as a
    mapping of its fields, so both forms a typed agent may return run, and a
    lost or doubled commit would change `seen`.
    """
    ctx.memory.append("seen", ctx.event, max_items=16)
    request = LlmRequest(model_id="fake-1", messages=[ctx.event.decode()], output_type=output_type)
    answer = await ctx.call_model(request)
    alerts = [event.decode() for event in ctx.memory.ring("seen")]
    if len(alerts) == 1:
        return Complete(answer.parsed)
    amended = {"recall_changed": True, "seen": len(alerts), "alerts": alerts, "note": "again"}
    return Complete({**_fields(answer.parsed), **amended})


async def misreport(ctx: ActivationContext) -> Complete:
    """Writes memory and stages an intent, then completes with a priority that is no int
    for `misreport`, and with one beyond 64 bits for `overflow`."""
    ctx.memory.append("seen", ctx.event)
    ctx.emit_intent("notify", {"event": ctx.event.decode()})
    seen = len(ctx.memory.ring("seen"))
    if ctx.event == b"misreport":
        return Complete({"priority": "high", "action": "page", "reason": "x", "seen": seen})
    if ctx.event == b"overflow":
        return Complete(TupleDecision(priority=2**70, action="page", reason="x", seen=seen))
    return Complete(
        TupleDecision(priority=3, action="ignore", reason=ctx.event.decode(), seen=seen)
    )


async def typed_without_a_type(ctx: ActivationContext) -> Complete:
    """Completes with a typed value under a RunAgent that declared none."""
    ctx.memory.append("seen", ctx.event)
    return Complete(TupleDecision(priority=1, action="page", reason="disk full"))


def _downstream(outputs: PCollection[Any], streaming: bool) -> dict[str, PCollection[Any]]:
    """What a pipeline does with typed decisions: group them by a field, sum a field per
    another with Beam's schema transforms and, in batch, as a DataFrame. Unbounded outputs
    are grouped once their watermark ends."""
    if streaming:
        outputs = outputs | beam.WindowInto(
            GlobalWindows(),
            trigger=trigger.AfterWatermark(),
            accumulation_mode=trigger.AccumulationMode.DISCARDING,
        )
    decisions = outputs | beam.Values()
    by_action = (
        decisions
        | beam.GroupBy("action")
        | beam.MapTuple(
            lambda action, group: (
                action,
                sorted(d.seen for d in group),
                {type(d).__qualname__ for d in group},  # decoded after the shuffle
            )
        )
    )
    summed = (
        decisions
        | beam.Select("priority", "seen")
        | beam.GroupBy("priority").aggregate_field("seen", sum, "seen")
        | "SummedPairs" >> beam.Map(lambda row: (row.priority, row.seen))
    )
    gathered = {"by_action": by_action, "per_priority": summed}
    if not streaming:  # the streaming DirectRunner runs no batched DoFn, so no DataFrame
        frame = to_dataframe(decisions)
        seen = frame[["priority", "seen"]].groupby("priority").sum()
        gathered["frame_per_priority"] = to_pcollection(seen, include_indexes=True) | beam.Map(
            lambda row: (int(row.priority), int(row.seen))
        )
    return gathered


def _run_batch(
    agent: Callable[..., Any], config: AgentConfig, output_type: type
) -> dict[str, list[Any]]:
    run_id = uuid.uuid4().hex
    pipeline = beam.Pipeline(runner=FnApiRunner())
    events = pipeline | beam.Create([(key, event.encode()) for key, event in EVENTS])
    result = events | RunAgent(agent, config, output_type=output_type)
    gathered = {"outputs": result.outputs, "errors": result.errors}
    gathered.update(_downstream(result.outputs, streaming=False))
    for name, pcoll in gathered.items():
        _ = pcoll | f"Collect[{name}]" >> beam.ParDo(Collect(run_id, name))
    pipeline.run().wait_until_finish()
    return {name: take(run_id, name) for name in gathered}


def _script() -> Script:
    script = Script()
    for i, (key, event) in enumerate(EVENTS):
        t = 1_000 * (i + 1)
        script.events((key, event.encode(), t)).watermark(t + 1)
    return script


def _stream(
    agent: Callable[..., Any],
    config: AgentConfig,
    output_type: type | None,
    script: Script,
    downstream: bool = False,
) -> LocalRun:
    """RunAgent over `script` on the streaming DirectRunner, with what it emitted gathered."""

    def build(events: PCollection[Any], answers: PCollection[Any]) -> Mapping[str, Any]:
        result = events | RunAgent(agent, config, output_type=output_type)
        gathered = {"outputs": result.outputs, "errors": result.errors, "intents": result.intents}
        if downstream:
            gathered.update(_downstream(result.outputs, streaming=True))
        return gathered

    return run_locally(script, build)


def _run_streaming(
    agent: Callable[..., Any], config: AgentConfig, output_type: type
) -> dict[str, list[Any]]:
    return _stream(agent, config, output_type, _script(), downstream=True).outputs


RUNS = {"FnApiRunner": _run_batch, "streaming DirectRunner, TestStream": _run_streaming}


@pytest.mark.parametrize("kind", list(TYPES))
@pytest.mark.parametrize("runner", list(RUNS))
def test_typed_decisions_group_by_a_field_and_aggregate_downstream(runner: str, kind: str) -> None:
    """Each decision arrives as an instance of its type, whose fields Beam's schema
    transforms read; in batch a DataFrame too (the streaming DirectRunner runs no batched
    DoFn, so no DataFrame of any element type)."""
    output_type = TYPES[kind]
    config = AgentConfig(provider_factory=_decider(f"typed-{runner}-{kind}"))

    got = RUNS[runner](functools.partial(decide, output_type), config, output_type)

    assert got["errors"] == []
    assert all(type(decision) is output_type for _, decision in got["outputs"])
    assert {(d.seen, tuple(d.alerts), d.note) for key, d in got["outputs"] if key == b"web-1"} == {
        (1, (), None),
        (2, ("latency spike", "latency spike"), "again"),
    }
    assert sorted((key, decision.seen) for key, decision in got["outputs"]) == [
        (b"db-1", 1), (b"db-1", 2), (b"db-2", 1), (b"web-1", 1), (b"web-1", 2),
        (b"web-2", 1), (b"web-2", 2),
    ]  # fmt: skip
    name = {output_type.__qualname__}
    assert sorted(got["by_action"]) == [
        ("ignore", [1, 2], name),
        ("page", [1, 1, 2], name),
        ("ticket", [1, 2], name),
    ]
    assert sorted(got["per_priority"]) == [(1, 4), (2, 3), (3, 3)]
    if runner == "FnApiRunner":
        assert sorted(got["frame_per_priority"]) == [(1, 4), (2, 3), (3, 3)]


def _encoded(output_type: type, outputs: list[tuple[bytes, Any]]) -> list[tuple[bytes, bytes]]:
    """The outputs as the PCollection's coder writes them: what a runner ships and stores."""
    coder = typed_output(output_type).coder
    return sorted((key, coder.encode(decision)) for key, decision in outputs)


@pytest.mark.parametrize("kind", list(TYPES))
def test_typed_outputs_are_byte_identical_in_place_parked_and_after_a_failed_commit(
    kind: str,
) -> None:
    output_type = TYPES[kind]
    agent = functools.partial(decide, output_type)

    providers: dict[str, FakeLLM] = {}

    def run(name: str, inflight: int) -> LocalRun:
        provider = providers[name] = _decider(f"typed-bytes-{kind}-{name}", latency_s=0.02)
        config = AgentConfig(provider_factory=provider, max_inflight_calls=inflight)
        return _stream(agent, config, output_type, _script())

    in_place = run("in-place", 1)
    parked = run("parked", 256)
    with fail_commit_once(b"db-1", 2) as fault:
        retried = run("retried", 1)

    assert fault.fired == [(b"db-1", 2)]
    assert parked.counters()["beam_agents.runtime/parks"] >= 1
    assert in_place.outputs["errors"] == parked.outputs["errors"] == []
    assert retried.outputs["errors"] == []
    clean = _encoded(output_type, in_place.outputs["outputs"])
    assert len(clean) == len(EVENTS)
    assert _encoded(output_type, parked.outputs["outputs"]) == clean
    assert _encoded(output_type, retried.outputs["outputs"]) == clean
    # The retried activation replayed its structured call rather than asking again.
    assert {name: p.call_count() for name, p in providers.items()} == dict.fromkeys(
        providers, len(EVENTS)
    )


def test_an_invalid_typed_result_is_dead_lettered_output_invalid_and_commits_nothing() -> None:
    """The key's next event sees its memory as before the invalid one, and the invalid
    activation's intent never leaves."""
    config = AgentConfig(provider_factory=FakeLLM(default=b"unused"))
    script = Script().events(
        ("a", b"first", 1_000), ("a", b"misreport", 2_000), ("a", b"after", 3_000)
    )

    run = _stream(misreport, config, TupleDecision, script).outputs

    (error,) = run["errors"]
    assert error.reason == "output_invalid"
    assert "the agent's result: not a valid TupleDecision" in error.detail
    assert "priority: Input should be a valid integer" in error.detail
    assert "'priority': 'high'" in error.detail  # the value as the agent returned it
    assert error.payload == b"misreport"
    assert [(key, d.reason, d.seen) for key, d in run["outputs"]] == [
        (b"a", "first", 1),
        (b"a", "after", 2),
    ]
    assert [intent.args_json for intent in run["intents"]] == [
        b'{"event":"first"}',
        b'{"event":"after"}',
    ]


def test_a_typed_result_beam_cannot_encode_is_output_invalid_not_a_failed_bundle() -> None:
    """An int beyond 64 bits passes validation; encoding it would fail every retry."""
    config = AgentConfig(provider_factory=FakeLLM(default=b"unused"))
    script = Script().events(("a", b"overflow", 1_000), ("a", b"after", 2_000))

    run = _stream(misreport, config, TupleDecision, script).outputs

    (error,) = run["errors"]
    assert error.reason == "output_invalid"
    assert "priority: Beam cannot encode it" in error.detail
    assert [(d.reason, d.seen) for _, d in run["outputs"]] == [("after", 1)]


def test_an_untyped_run_agent_dead_letters_a_typed_result_saying_it_has_no_output_type() -> None:
    config = AgentConfig(provider_factory=FakeLLM(default=b"unused"))
    script = Script().events(("a", b"disk full", 1_000))

    run = _stream(typed_without_a_type, config, None, script).outputs

    (error,) = run["errors"]
    assert error.reason == "output_invalid"
    assert "this RunAgent has no output_type" in error.detail
    assert "TupleDecision(priority=1" in error.detail
    assert run["outputs"] == []


def test_an_untyped_run_agent_still_emits_bytes_pairs() -> None:
    pipeline = beam.Pipeline(runner=FnApiRunner())
    events = pipeline | beam.Create([("a", b"x")])
    config = AgentConfig(provider_factory=FakeLLM(default=b"unused"))

    outputs = (events | RunAgent(misreport, config)).outputs

    assert outputs.element_type == beam.typehints.Tuple[bytes, bytes]
    assert (
        repr(coder_registry.get_coder(outputs.element_type)) == "TupleCoder[BytesCoder, BytesCoder]"
    )


@pytest.mark.parametrize("kind", list(TYPES))
def test_typed_outputs_carry_a_deterministic_row_coder_that_group_by_key_uses(kind: str) -> None:
    """The PCollection declares `(bytes, T)` as Beam's standard row encoding of T's fields,
    and a GroupByKey keyed by the decision itself takes that coder as its key coder: equal
    decisions of different keys meet in one group."""
    output_type = TYPES[kind]
    pipeline = beam.Pipeline(runner=FnApiRunner())
    config = AgentConfig(provider_factory=_decider(f"typed-coder-{kind}"))
    events = pipeline | beam.Create([(key, event.encode()) for key, event in EVENTS])
    outputs = (
        events | RunAgent(functools.partial(decide, output_type), config, output_type=output_type)
    ).outputs
    typed = typed_output(output_type)
    keyed = outputs | beam.MapTuple(lambda key, decision: (decision, key)).with_output_types(
        beam.typehints.Tuple[typed.row_type, bytes]
    )
    run_id = uuid.uuid4().hex
    _ = (
        keyed
        | beam.GroupByKey()
        | beam.MapTuple(lambda decision, keys: (decision.reason, decision.seen, sorted(keys)))
        | beam.ParDo(Collect(run_id, "groups"))
    )

    coder = coder_registry.get_coder(outputs.element_type)
    proto, context = pipeline.to_runner_api(return_context=True)
    coders = proto.components.coders

    def components_of(pcoll: PCollection[Any]) -> list[Any]:
        found = proto.components.pcollections[context.pcollections.get_id(pcoll)]
        return [coders[c] for c in coders[found.coder_id].component_coder_ids]

    assert coder.is_deterministic()
    assert coder.as_deterministic_coder("GroupByKey") is coder
    key_coder, row_coder = components_of(outputs)
    assert key_coder.spec.urn == "beam:coder:bytes:v1"
    assert row_coder.spec.urn == "beam:coder:row:v1"
    assert row_coder.spec.payload == typed.coder.schema.SerializeToString()
    group_key_coder, _ = components_of(keyed)
    assert group_key_coder == row_coder
    pipeline.run().wait_until_finish()
    groups = take(run_id, "groups")
    assert sorted(groups) == [
        ("disk full", 1, [b"db-1", b"db-2"]),
        ("disk full", 2, [b"db-1"]),
        ("latency spike", 1, [b"web-1"]),
        ("latency spike", 2, [b"web-1"]),
        ("noise", 1, [b"web-2"]),
        ("noise", 2, [b"web-2"]),
    ]


class WithMapping(NamedTuple):
    priority: int
    labels: dict[str, str]


class WithUnion(pydantic.BaseModel):
    priority: int | str


class Inner(NamedTuple):
    priority: int


@dataclasses.dataclass
class WithNested:
    inner: Inner


@dataclasses.dataclass
class WithDerivedField:
    priority: int
    label: str = dataclasses.field(init=False, default="")


class NotAType:
    priority: int


@pytest.mark.parametrize(
    ("output_type", "named"),
    [
        ({"type": "object", "properties": {}}, "a Beam schema needs a Python type"),
        (NotAType, "NotAType is not a pydantic model, a dataclass or a typing.NamedTuple"),
        (WithMapping, "WithMapping.labels: dict[str, str] has no Beam schema type"),
        (WithUnion, "WithUnion.priority: int | str has no Beam schema type"),
        (WithNested, "WithNested.inner: Inner has no Beam schema type (nested rows"),
        (WithDerivedField, "WithDerivedField.label is not an __init__ argument"),
    ],
)
def test_run_agent_refuses_an_output_type_beam_cannot_carry_naming_what(
    output_type: Any, named: str
) -> None:
    config = AgentConfig(provider_factory=FakeLLM(default=b"unused"))

    with pytest.raises(ConfigurationError) as refused:
        RunAgent(misreport, config, output_type=output_type)

    assert refused.value.field == "RunAgent.output_type"
    assert named in str(refused.value)


@pytest.mark.parametrize("output", ["disk full", ("page", 1), 3, None])
def test_complete_refuses_an_output_that_is_neither_bytes_nor_a_typed_value(output: Any) -> None:
    with pytest.raises(TypeError, match="must be bytes, or a typed result") as refused:
        Complete(output)

    assert f"got {type(output).__name__}" in str(refused.value)


_ELSEWHERE = """
import sys
from apache_beam.coders.coders import Coder
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.runners.pipeline_context import PipelineContext

spec = beam_runner_api_pb2.Coder.FromString(bytes.fromhex(sys.argv[1]))
coder = Coder.from_runner_api(spec, PipelineContext())
row = coder.decode(bytes.fromhex(sys.argv[2]))
print(type(row).__module__, row.priority, row.action, row.reason, row.recall_changed, row.seen)
"""


@pytest.mark.parametrize("kind", list(TYPES))
def test_a_process_that_never_loaded_the_type_decodes_rows_with_its_fields(kind: str) -> None:
    """What a runner or worker without the user's module reads from the pipeline's coder."""
    typed = typed_output(TYPES[kind])
    decision = typed.check({"priority": 1, "action": "page", "reason": "disk full", "seen": 2})
    spec = typed.coder.to_runner_api(PipelineContext()).SerializeToString()

    shown = subprocess.run(
        [sys.executable, "-c", _ELSEWHERE, spec.hex(), typed.coder.encode(decision).hex()],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()

    assert shown == ["apache_beam.typehints.schemas", "1", "page", "disk", "full", "False", "2"]


def test_an_invalid_typed_result_is_refused_before_the_summarizer_spends_a_call() -> None:
    provider = FakeLLM(name="typed-summarizer", default=b"S")
    provider.reset()
    summarizer = SummarizeCompactor(
        build_request=agents.summary_request,
        extract_summary=agents.summary_of,
        source_keys=("seen",),
        keep_recent=0,
        trigger_bytes=1,
    )
    config = AgentConfig(provider_factory=provider, summarizer=summarizer)
    script = Script().events(("a", b"misreport", 1_000))

    run = _stream(misreport, config, TupleDecision, script.events(("a", b"after", 2_000)))

    assert [error.reason for error in run.outputs["errors"]] == ["output_invalid"]
    assert [(d.reason, d.seen) for _, d in run.outputs["outputs"]] == [("after", 1)]
    assert provider.call_count() == 1  # the valid activation's summary only


@pytest.mark.parametrize("kind", list(TYPES))
def test_a_step_declared_on_the_users_own_type_reads_typed_outputs(kind: str) -> None:
    """`beam.Map` hinted `Tuple[bytes, Decision]` passes Beam's type check on the outputs."""
    output_type = TYPES[kind]
    run_id = uuid.uuid4().hex
    config = AgentConfig(provider_factory=_decider(f"hinted-{kind}"))
    pipeline = beam.Pipeline(runner=FnApiRunner())
    events = pipeline | beam.Create([(key, event.encode()) for key, event in EVENTS])
    result = events | RunAgent(
        functools.partial(decide, output_type), config, output_type=output_type
    )
    priorities = result.outputs | beam.Map(lambda kv: kv[1].priority).with_input_types(
        beam.typehints.Tuple[bytes, output_type]
    )
    _ = priorities | beam.ParDo(Collect(run_id, "priorities"))
    pipeline.run().wait_until_finish()

    got = take(run_id, "priorities")
    assert len(got) == 7  # one per alert
    assert set(got) == {1, 2, 3}
