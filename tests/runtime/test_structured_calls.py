"""Structured model calls: validated answers, repairs as model calls, `output_invalid` when spent.

Each case runs a real pipeline (the streaming DirectRunner with a
TestStream) over a scripted provider. A structured answer comes back as
`response.parsed`, a value of the requested type; an answer that does not
validate is re-asked with its errors, and each re-ask is an ordinary model
call of the activation (its own replay key, counted, budgeted, parked); when
the repairs are spent the activation fails as `output_invalid` carrying the
raw answer and every error, and commits nothing.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Sequence
from typing import Literal, NamedTuple

import pydantic
import pytest

from beam_agents import ActivationContext, AgentConfig, Complete
from beam_agents.errors import ConfigurationError
from beam_agents.model import FakeLLM, Rule
from beam_agents.model.messages import STOP_LENGTH, STOP_REFUSED, LlmRequest, LlmResponse
from beam_agents.model.structured import extract_json, output_schema
from beam_agents.runtime.errors import OutputInvalid
from beam_agents.testing.chaos import fail_commit_once
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime import agents

pytestmark = pytest.mark.pipeline

RUNTIME = "beam_agents.runtime"


class Verdict(pydantic.BaseModel):
    priority: Literal["p1", "p2", "p3"]
    reason: str


@dataclasses.dataclass(frozen=True)
class VerdictRecord:
    priority: str
    score: int


class VerdictRow(NamedTuple):
    priority: str
    score: int


VERDICT_SCHEMA = {
    "title": "Verdict",
    "type": "object",
    "properties": {"priority": {"enum": ["p1", "p2", "p3"]}, "reason": {"type": "string"}},
    "required": ["priority", "reason"],
    "additionalProperties": False,
}

GOOD = b'{"priority": "p2", "reason": "disk filling"}'
BAD = b'{"priority": "urgent", "reason": 7}'


async def classify(ctx: ActivationContext) -> Complete:
    """Writes memory first, so a failed activation shows that nothing committed."""
    ctx.memory.append("seen", ctx.event)
    response = await ctx.call_model(
        LlmRequest("m", [{"role": "user", "content": ctx.event.decode()}], output_type=Verdict)
    )
    verdict = response.parsed
    assert isinstance(verdict, Verdict)
    seen = len(ctx.memory.ring("seen"))
    return Complete(f"{verdict.priority}:{verdict.reason}:{seen}".encode())


def _config(provider: object, **overrides: object) -> AgentConfig:
    return AgentConfig(provider_factory=provider, **overrides)  # type: ignore[arg-type]


def _run(provider: object, events: Sequence[tuple[str, bytes, int]], **config: object) -> StreamRun:
    script = Script()
    for event in events:
        script.events(event)
    return run_script(classify, _config(provider, **config), script)


def _fake(name: str, *, answers: dict[str, bytes]) -> FakeLLM:
    """Scripted by rules, first match wins; a request no rule matches is answered GOOD."""
    return FakeLLM(
        rules=[Rule(pattern, answer) for pattern, answer in answers.items()],
        default=GOOD,
        name=f"{name}-{uuid.uuid4().hex}",
    )


def test_a_conformant_answer_comes_back_validated_as_the_type() -> None:
    fake = _fake("conformant", answers={})
    run = _run(fake, [("db", b"disk 91% full", 1_000)])

    assert run.errors == []
    assert run.outputs == [(b"db", b"p2:disk filling:1")]
    assert len(fake.calls()) == 1
    # The request carried the schema, so the provider could ask for it natively.
    assert fake.calls()[0].output_type is Verdict


def test_a_non_conformant_answer_is_repaired_once_with_its_errors() -> None:
    # The repair request carries the errors, so a rule on them scripts the fixed answer.
    fake = _fake("repaired", answers={"does not match the Verdict schema": GOOD, "disk": BAD})
    run = _run(fake, [("db", b"disk 91% full", 1_000)])

    assert run.errors == []
    assert run.outputs == [(b"db", b"p2:disk filling:1")]
    first, repair = fake.calls()
    assert list(repair.messages[: len(first.messages)]) == list(first.messages)
    assert repair.messages[-2] == {"role": "assistant", "content": BAD.decode()}
    errors = repair.messages[-1]["content"]
    assert "priority: Input should be 'p1', 'p2' or 'p3'" in errors
    assert "reason: Input should be a valid string" in errors
    assert run.counter(RUNTIME, "output_repairs") == 1
    assert run.counter(RUNTIME, "model_calls") == 2


def test_an_answer_still_invalid_after_its_repairs_is_dead_lettered_output_invalid() -> None:
    fake = _fake("invalid", answers={"disk": b"I think this is a p2, honestly."})
    run = _run(fake, [("db", b"disk 91% full", 1_000), ("db", b"disk 95% full", 2_000)])

    assert run.outputs == []
    assert [e.reason for e in run.errors] == ["output_invalid", "output_invalid"]
    detail = run.errors[0].detail
    assert "after 1 repair" in detail
    assert "(root): the answer holds no JSON value" in detail
    assert "raw: I think this is a p2, honestly." in detail
    assert run.errors[0].payload == b"disk 91% full"
    assert len(fake.calls()) == 4  # each event: the call and one repair
    assert run.counter(RUNTIME, "outputs_invalid") == 2


def test_a_failed_structured_call_commits_nothing() -> None:
    fake = _fake("commits-nothing", answers={"95%": b"no JSON here"})
    run = _run(
        fake,
        [("db", b"disk 91% full", 1_000), ("db", b"disk 95% full", 2_000), ("db", b"ok", 3_000)],
    )

    assert [e.reason for e in run.errors] == ["output_invalid"]
    # The third event sees two appends: the failed second activation's write is gone.
    assert run.outputs == [(b"db", b"p2:disk filling:1"), (b"db", b"p2:disk filling:2")]


def test_output_repairs_zero_fails_at_the_first_invalid_answer() -> None:
    fake = _fake("no-repairs", answers={"disk": BAD})
    run = _run(fake, [("db", b"disk 91% full", 1_000)], output_repairs=0)

    assert [e.reason for e in run.errors] == ["output_invalid"]
    assert "after 0 repairs" in run.errors[0].detail
    assert len(fake.calls()) == 1


def test_a_repair_is_a_model_call_the_loop_budget_counts() -> None:
    fake = _fake("budgeted", answers={"does not match": GOOD, "disk": BAD})
    run = _run(fake, [("db", b"disk 91% full", 1_000)], max_model_calls=1)

    assert [e.reason for e in run.errors] == ["budget_exceeded"]
    assert "max_model_calls=1 reached" in run.errors[0].detail
    assert len(fake.calls()) == 1


@dataclasses.dataclass(frozen=True)
class Stopping:
    """A provider whose every answer ended early: refused or cut off at its token limit."""

    stop_reason: str
    name: str

    def __call__(self) -> Stopping:
        return self

    async def complete(self, request: LlmRequest) -> LlmResponse:
        _stopped_calls.setdefault(self.name, []).append(request)
        text = b"I can't help with that." if self.stop_reason == STOP_REFUSED else b'{"prio'
        return LlmResponse(text, "stopping-1", 10, 5, stop_reason=self.stop_reason)


_stopped_calls: dict[str, list[LlmRequest]] = {}


@pytest.mark.parametrize(
    ("stop_reason", "said"),
    [
        (STOP_REFUSED, "the model refused to answer"),
        (STOP_LENGTH, "cut off at the output token limit"),
    ],
)
def test_a_refused_or_cut_off_answer_is_output_invalid_without_a_repair(
    stop_reason: str, said: str
) -> None:
    provider = Stopping(stop_reason, f"stopping-{uuid.uuid4().hex}")
    run = _run(provider, [("db", b"disk 91% full", 1_000)], output_repairs=3)

    assert [e.reason for e in run.errors] == ["output_invalid"]
    assert said in run.errors[0].detail
    assert len(_stopped_calls[provider.name]) == 1


def _replayed(inflight: int, *, fault: bool) -> tuple[StreamRun, FakeLLM]:
    fake = FakeLLM(
        rules=[
            Rule("95%", b"still not JSON"),
            Rule("does not match", GOOD),
            Rule("disk|cert", BAD),
        ],
        latency_s=0.02,
        name=f"replayed-{uuid.uuid4().hex}",
    )
    script = Script()
    for event in [
        ("db", b"disk 91% full", 1_000),
        ("web", b"cert expires", 1_100),
        ("db", b"disk 95% full", 1_200),
        ("db", b"disk 97% full", 1_300),
    ]:
        script.events(event)
    # Processing time moves on, so the parked activations' polls fire.
    script.watermark(1_400).processing_time(1_000).watermark(100_000)
    config = _config(fake, max_inflight_calls=inflight)
    if fault:
        # The first db activation's commit fails after its call and its repair.
        with fail_commit_once(b"db", 1) as point:
            run = run_script(classify, config, script, clock_ms=agents.clock_just_ahead)
        assert point.fired == [(b"db", 1)]
    else:
        run = run_script(classify, config, script, clock_ms=agents.clock_just_ahead)
    return run, fake


def test_repairs_replay_byte_identically_parked_retried_and_in_place() -> None:
    serial, serial_fake = _replayed(1, fault=False)
    parked, _ = _replayed(256, fault=False)
    faulty, faulty_fake = _replayed(256, fault=True)

    assert [e.reason for e in serial.errors] == ["output_invalid"]
    assert parked.fingerprint() == serial.fingerprint()
    assert faulty.fingerprint() == serial.fingerprint()
    assert parked.counter(RUNTIME, "parks") > 0
    # The retried bundle's calls came back from the attempt memo: nothing asked twice.
    assert len(faulty_fake.calls()) == len(serial_fake.calls())


def test_each_kind_of_output_type_validates_an_answer() -> None:
    record = output_schema(VerdictRecord).read(b'{"priority": "p1", "score": 3}')
    row = output_schema(VerdictRow).read(b'```json\n{"priority": "p1", "score": 3}\n```')
    plain = output_schema(VERDICT_SCHEMA).read(b'Here: {"priority": "p3", "reason": "noise"}')

    assert record == VerdictRecord("p1", 3)
    assert row == VerdictRow("p1", 3)
    assert plain == {"priority": "p3", "reason": "noise"}
    # A NamedTuple is asked for by its field names, not as an array.
    assert output_schema(VerdictRow).json_schema["type"] == "object"


def test_validation_never_coerces() -> None:
    with pytest.raises(OutputInvalid) as caught:
        output_schema(VerdictRow).read(b'{"priority": "p1", "score": "3"}')
    assert caught.value.errors == ("score: Input should be a valid integer",)
    with pytest.raises(OutputInvalid) as caught:
        output_schema(VERDICT_SCHEMA).read(b'{"priority": "p4", "reason": "x", "extra": 1}')
    assert caught.value.errors == (
        "(root): Additional properties are not allowed ('extra' was unexpected)",
        "priority: 'p4' is not one of ['p1', 'p2', 'p3']",
    )


def test_json_is_taken_from_prose_the_same_way_every_time() -> None:
    answer = 'Sure! {not json} then {"priority": "p2", "reason": "x"} and {"b": 2}'
    assert extract_json(answer) == '{"priority": "p2", "reason": "x"}'
    assert extract_json("no json at all") is None


@pytest.mark.parametrize(
    ("output_type", "said"),
    [
        (int, "int is not a pydantic model, a dataclass or a typing.NamedTuple"),
        ("Verdict", "got str"),
        ({"type": "objekt"}, "is not a valid JSON Schema"),
    ],
)
def test_an_output_type_that_is_none_of_the_kinds_is_refused_by_name(
    output_type: object, said: str
) -> None:
    with pytest.raises(ConfigurationError, match="output_type") as caught:
        output_schema(output_type)
    assert said in str(caught.value)


@pytest.mark.parametrize("repairs", [-1, 11, True, 1.0])
def test_output_repairs_out_of_range_is_refused_at_construction(repairs: object) -> None:
    with pytest.raises(ConfigurationError, match=r"AgentConfig\.output_repairs"):
        AgentConfig(output_repairs=repairs)  # type: ignore[arg-type]


def test_the_request_bytes_carry_the_schema_so_the_replay_key_does() -> None:
    from beam_agents.model.messages import canonical_request_bytes

    plain = canonical_request_bytes(LlmRequest("m", ["x"]))
    typed = json.loads(canonical_request_bytes(LlmRequest("m", ["x"], output_type=Verdict)))

    assert b"output_schema" not in plain  # an untyped call's replay key is unchanged
    assert typed["output_schema"]["name"] == "Verdict"
    assert typed["output_schema"]["schema"]["required"] == ["priority", "reason"]


async def look_then_classify(ctx: ActivationContext) -> Complete:
    """Offers a tool beside the type: the tool call comes back unparsed, the final answer typed."""
    messages: list[object] = [{"role": "user", "content": ctx.event.decode()}]
    tools = [{"name": "disk_usage", "parameters": {"type": "object"}}]
    first = await ctx.call_model(LlmRequest("m", messages, tools_schema=tools, output_type=Verdict))
    assert first.parsed is None
    messages += [
        {"role": "assistant", "content": first.response.decode()},
        {"role": "tool", "content": "91%", "name": "disk_usage"},
    ]
    final = await ctx.call_model(LlmRequest("m", messages, tools_schema=tools, output_type=Verdict))
    return Complete(final.parsed.priority.encode())


def test_a_tool_call_answer_to_a_typed_request_is_not_held_to_the_type() -> None:
    tool_call = b'{"tool_calls":[{"arguments":{},"name":"disk_usage"}]}'
    fake = _fake("tools", answers={'"tool"': GOOD, "disk": tool_call})
    script = Script().events(("db", b"disk 91% full", 1_000))
    run = run_script(look_then_classify, _config(fake), script)

    assert run.errors == []
    assert run.outputs == [(b"db", b"p2")]
    assert len(fake.calls()) == 2  # no repair of the tool call


class Aliased(pydantic.BaseModel):
    priority: Literal["p1", "p2", "p3"] = pydantic.Field(alias="class")
    reason: str


def test_a_typed_value_written_as_json_reads_back_as_the_same_value() -> None:
    """What an adapter hands a framework, and eval writes, is what the validator reads."""
    from beam_agents.model.structured import value_json

    for value in (
        Aliased.model_validate({"class": "p1", "reason": "disk"}),
        VerdictRecord("p2", 3),
        VerdictRow("p3", 4),
    ):
        text = value_json(value)
        assert output_schema(type(value)).read(text.encode()) == value
    assert value_json(VerdictRow("p3", 4)) == '{"priority":"p3","score":4}'
