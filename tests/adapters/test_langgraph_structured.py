"""`with_structured_output` on the bridge: the schema reaches the provider, the value the graph."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from pydantic import BaseModel

from tests.adapters.conftest import require_langgraph

require_langgraph()

from langchain_core.messages import SystemMessage  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402

from beam_agents import AgentConfig  # noqa: E402
from beam_agents.adapters.langgraph import BeamAgentsChatModel, graph_agent  # noqa: E402
from beam_agents.errors import ConfigurationError  # noqa: E402
from beam_agents.model import FakeLLM, Rule  # noqa: E402
from beam_agents.testing.streaming import Script, StreamRun, run_script  # noqa: E402

pytestmark = [pytest.mark.pipeline, pytest.mark.framework_extras]

ALERT = ("db", b"db is down", 1_000)


class Verdict(BaseModel):
    """What the graph decides about an alert."""

    priority: str
    page: bool


class VerdictDict(TypedDict):
    priority: str
    page: bool


class TriageState(MessagesState):
    verdict: Any


def _graph(schema: Any, **options: Any) -> StateGraph:
    model = BeamAgentsChatModel(model_id="gpt-test").with_structured_output(schema, **options)

    async def classify(state: TriageState) -> dict[str, Any]:
        system = SystemMessage("Decide the alert's priority and whether to page.")
        return {"verdict": await model.ainvoke([system, *state["messages"]])}

    builder = StateGraph(TriageState)
    builder.add_node("classify", classify)
    builder.add_edge(START, "classify")
    builder.add_edge("classify", END)
    return builder


def _verdict_of(state: dict[str, Any]) -> bytes:
    """The output: what the graph holds, by its type, so the test sees that type arrive."""
    verdict = state["verdict"]
    if isinstance(verdict, dict) and "raw" in verdict:
        verdict = verdict["parsed"]
    return f"{type(verdict).__name__} {verdict!r}".encode()


def _run(schema: Any, model: FakeLLM, **options: Any) -> StreamRun:
    model.reset()
    agent = graph_agent(_graph(schema, **options), output=_verdict_of, checkpoint_types=[Verdict])
    return run_script(agent, AgentConfig(provider_factory=model), Script().events(ALERT))


def _model(name: str, answer: bytes) -> FakeLLM:
    return FakeLLM(rules=[Rule(r'"output_schema"', answer)], name=name)


def test_with_structured_output_asks_with_the_schema_and_returns_its_value() -> None:
    """The answer wraps its JSON in prose; the graph gets a Verdict."""
    model = _model("lg-structured", b'Sure: {"priority": "P1", "page": true}')

    run = _run(Verdict, model)

    assert run.errors == []
    (request,) = model.calls()
    assert request.output_type is Verdict
    assert request.tools_schema is None
    assert run.outputs == [(b"db", b"Verdict Verdict(priority='P1', page=True)")]


def test_a_typeddict_schema_is_asked_as_json_schema_and_comes_back_a_dict() -> None:
    model = _model("lg-structured-dict", b'{"priority": "P2", "page": false}')

    run = _run(VerdictDict, model)

    assert run.errors == []
    (request,) = model.calls()
    assert request.output_type == {
        "title": "VerdictDict",
        "type": "object",
        "properties": {"priority": {"type": "string"}, "page": {"type": "boolean"}},
        "required": ["priority", "page"],
    }
    assert run.outputs == [(b"db", b"dict {'priority': 'P2', 'page': False}")]


def test_include_raw_gives_the_message_and_the_value() -> None:
    model = _model("lg-structured-raw", b'{"priority": "P1", "page": true}')

    run = _run(Verdict, model, include_raw=True)

    assert run.errors == []
    assert run.outputs == [(b"db", b"Verdict Verdict(priority='P1', page=True)")]


def _verdict(state: dict[str, Any]) -> Any:
    """The graph's result: the value the structured call returned, not bytes."""
    return state["verdict"]


def test_under_a_typed_run_agent_the_graphs_value_is_the_output() -> None:
    model = _model("lg-structured-typed", b'{"priority": "P1", "page": true}')
    agent = graph_agent(_graph(Verdict), output=_verdict, checkpoint_types=[Verdict])

    run = run_script(
        agent, AgentConfig(provider_factory=model), Script().events(ALERT), output_type=Verdict
    )

    assert run.errors == []
    assert run.outputs == [(b"db", Verdict(priority="P1", page=True))]
    assert isinstance(run.outputs[0][1], Verdict)


def test_an_answer_that_never_fits_the_schema_dead_letters_output_invalid() -> None:
    """Repaired once, then refused with its own reason: not wrapped as the graph's failure."""
    model = _model("lg-structured-invalid", b'{"priority": "P1", "page": "yes"}')

    run = _run(Verdict, model)

    assert run.outputs == []
    (error,) = run.errors
    assert error.reason == "output_invalid"
    assert "page: Input should be a valid boolean" in error.detail
    assert len(model.calls()) == 2  # the call and its one repair


def test_a_schema_with_no_json_schema_is_refused_when_the_graph_is_built() -> None:
    with pytest.raises(ConfigurationError, match="output_type"):
        BeamAgentsChatModel().with_structured_output(int)
