"""What graph_agent refuses, and the pieces of the adapter outside a pipeline."""

from __future__ import annotations

import asyncio

import pytest

from tests.adapters.conftest import require_langgraph

require_langgraph()

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402

from beam_agents.adapters.langgraph import (  # noqa: E402
    BeamAgentsChatModel,
    GraphAgent,
    NotInActivationError,
    graph_agent,
    tool_handlers,
)
from beam_agents.adapters.langgraph._model import to_request_messages  # noqa: E402
from beam_agents.errors import ConfigurationError  # noqa: E402
from beam_agents.tools import ToolCall  # noqa: E402
from tests.adapters import lg_graph  # noqa: E402


def test_something_other_than_a_graph_is_refused_by_name() -> None:
    with pytest.raises(ConfigurationError, match=r"graph_agent\(graph\).*got dict"):
        graph_agent({"nodes": []})


def test_static_breakpoints_are_refused_in_favour_of_interrupt() -> None:
    compiled = lg_graph.builder.compile(interrupt_before=["tools"])

    with pytest.raises(ConfigurationError, match="interrupt_before/interrupt_after"):
        graph_agent(compiled)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"read_only_tools": ["lookup_runbok"]}, r"read_only_tools.*'lookup_runbok'"),
        ({"read_only_tools": "lookup_runbook"}, r"read_only_tools.*collection of tool names"),
        ({"recursion_limit": 0}, r"recursion_limit.*int >= 1"),
        ({"expired_memory_key": ""}, r"expired_memory_key.*non-empty str"),
        ({"suspend_timeout_ms": -5}, r"suspend_timeout_ms.*positive int"),
    ],
)
def test_bad_options_are_refused_naming_the_option(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        graph_agent(lg_graph.graph, **options)


def test_a_compiled_graph_keeps_its_name_and_gets_the_working_memory_checkpointer() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from beam_agents.adapters.langgraph._checkpoint import WorkingMemorySaver

    compiled = lg_graph.builder.compile(checkpointer=InMemorySaver(), name="triage")

    ran = GraphAgent(compiled).graph

    assert ran.name == "triage"
    assert isinstance(ran.checkpointer, WorkingMemorySaver)
    assert compiled.checkpointer is not ran.checkpointer  # the user's graph is left as it was


def test_the_chat_model_outside_an_activation_says_where_it_runs() -> None:
    with pytest.raises(NotInActivationError, match="graph_agent"):
        asyncio.run(BeamAgentsChatModel().ainvoke("hello"))


def test_tool_results_name_their_tool_for_gemini_and_their_call_for_openai() -> None:
    messages = [
        HumanMessage("checkout unreachable"),
        AIMessage(
            "", tool_calls=[{"name": "lookup_runbook", "args": {"service": "c"}, "id": "t1"}]
        ),
        ToolMessage("page them", tool_call_id="t1"),
    ]

    _, call, result = to_request_messages(messages)

    assert (
        call["content"] == '{"tool_calls":[{"arguments":{"service":"c"},"name":"lookup_runbook"}]}'
    )
    assert call["tool_calls"][0]["id"] == "t1"
    assert result == {
        "role": "tool",
        "name": "lookup_runbook",
        "tool_call_id": "t1",
        "content": "page them",
    }


def test_a_tool_handler_runs_the_langchain_tool_with_the_intent_id_as_its_call_id() -> None:
    handler = tool_handlers([lg_graph.lookup_runbook])["lookup_runbook"]
    call = ToolCall(
        "0b7a5c1e-8f61-5a8e-9f0e-4f3c2d1b0a99", "lookup_runbook", b"k", {"service": "db"}
    )

    assert asyncio.run(handler(call)) == b"db: page the on-call engineer when it is unreachable"


def test_two_tools_of_one_name_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="two tools are named 'page_oncall'"):
        tool_handlers([lg_graph.page_oncall, lg_graph.page_oncall])


@pytest.mark.pipeline
def test_a_sync_node_asks_the_model_through_the_activation_and_keeps_the_conversation() -> None:
    """A model slow enough to park its later calls: the park leaves the executor thread too."""
    from beam_agents import AgentConfig
    from beam_agents.model import FakeLLM, Rule
    from beam_agents.testing.streaming import Script, run_script

    provider = FakeLLM(
        rules=[Rule(pattern=r"first.*second", response=b"both")],
        default=b"one",
        name="lg-sync",
        latency_s=0.05,
    )
    provider.reset()
    script = Script().events(("k", b"first", 1_000)).watermark(1_500)
    script.events(("k", b"second", 2_000))

    run = run_script(
        graph_agent(lg_graph.sync_builder), AgentConfig(provider_factory=provider), script
    )

    assert run.errors == []
    assert run.outputs == [(b"k", b"one"), (b"k", b"both")]
    assert FakeLLM(name="lg-sync").call_count() == 2


@pytest.mark.pipeline
def test_a_state_without_messages_is_output_as_json_or_refused_by_name() -> None:
    from beam_agents import AgentConfig
    from beam_agents.testing.streaming import Script, run_script

    script = Script().events(("k", b"a", 1_000)).watermark(1_500).events(("k", b"b", 2_000))

    counted = run_script(graph_agent(lg_graph.counting_builder), AgentConfig(), script)
    tagged = run_script(graph_agent(lg_graph.tagging_builder), AgentConfig(), script)

    assert counted.outputs == [(b"k", b'{"seen":["event"]}'), (b"k", b'{"seen":["event","event"]}')]
    assert [e.reason for e in tagged.errors] == ["activation_error", "activation_error"]
    assert tagged.errors[0].detail.startswith("GraphRunError: the graph's final state is not JSON")
