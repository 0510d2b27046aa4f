"""What `adk_agent` and `adk_tools` refuse, and the translation of ADK's model requests."""

from __future__ import annotations

import json
from typing import Any

import pytest

from beam_agents.errors import ConfigurationError
from tests.adapters.adk_support import page_oncall


def lookup_runbook(service: str) -> dict[str, Any]:
    """Read the runbook of a service."""
    return {"runbook": f"restart {service}"}


def ask_first(service: str, tool_context: Any) -> dict[str, Any]:
    """A tool that reads its ADK context."""
    return {"service": service}


def _agent(**overrides: Any) -> Any:
    from google.adk.agents import LlmAgent

    from beam_agents.adapters.adk import BeamAgentsLlm

    return LlmAgent(
        name=overrides.pop("name", "triage"),
        model=BeamAgentsLlm(model="gpt-test"),
        instruction="Triage.",
        **overrides,
    )


def test_adk_tools_gives_a_handler_per_side_effecting_function_tool() -> None:
    from beam_agents.adapters.adk import adk_tools

    agent = _agent(tools=[page_oncall, lookup_runbook])

    assert sorted(adk_tools(agent)) == ["lookup_runbook", "page_oncall"]
    assert sorted(adk_tools(agent, read_only_tools=["lookup_runbook"])) == ["page_oncall"]


def test_a_tool_that_takes_tool_context_must_be_declared_read_only() -> None:
    from beam_agents.adapters.adk import adk_agent

    agent = _agent(tools=[ask_first])

    refusal = r"triage.tools\['ask_first'\]: takes tool_context"
    with pytest.raises(ConfigurationError, match=refusal):
        adk_agent(agent)
    assert callable(adk_agent(agent, read_only_tools=["ask_first"]))


def test_a_tool_that_is_not_a_function_must_be_declared_read_only() -> None:
    from google.adk.tools import AgentTool

    from beam_agents.adapters.adk import adk_agent

    helper = AgentTool(agent=_agent(name="helper"))

    with pytest.raises(ConfigurationError, match="is a AgentTool"):
        adk_agent(_agent(tools=[helper]))


def test_a_parallel_agent_is_refused_naming_it() -> None:
    from google.adk.agents import ParallelAgent

    from beam_agents.adapters.adk import adk_agent

    fan_out = ParallelAgent(name="fan_out", sub_agents=[_agent(name="a"), _agent(name="b")])

    with pytest.raises(ConfigurationError, match=r"agents\['fan_out'\]: is a ParallelAgent"):
        adk_agent(fan_out)


def test_adk_requests_become_canonical_runtime_requests_without_adk_ids() -> None:
    from google.adk.models.llm_request import LlmRequest as AdkRequest
    from google.genai import types

    from beam_agents.adapters.adk._llm import to_request
    from beam_agents.model.messages import canonical_request_bytes

    def request(call_id: str) -> AdkRequest:
        call = types.FunctionCall(id=call_id, name="page_oncall", args={"service": "db"})
        result = types.FunctionResponse(id=call_id, name="page_oncall", response={"page": "P-1"})
        return AdkRequest(
            contents=[
                types.Content(role="user", parts=[types.Part(text="db is down")]),
                types.Content(role="model", parts=[types.Part(function_call=call)]),
                types.Content(role="user", parts=[types.Part(function_response=result)]),
            ],
            config=types.GenerateContentConfig(system_instruction="Triage.", temperature=0.0),
        )

    first = to_request(request("adk-1"), "gpt-test")
    second = to_request(request("adk-2"), "gpt-test")

    assert canonical_request_bytes(first) == canonical_request_bytes(second)
    roles = [m["role"] for m in first.messages]
    assert roles == ["system", "user", "assistant", "tool"]
    assert json.loads(first.messages[2]["content"]) == {
        "tool_calls": [{"arguments": {"service": "db"}, "name": "page_oncall"}]
    }
    assert first.messages[3]["content"] == '{"page":"P-1"}'
    assert first.sampling_params == {"temperature": 0.0}


def test_the_adapter_exports_exactly_its_documented_names() -> None:
    from beam_agents.adapters import adk

    assert set(adk.__all__) == {"AdkAdapterError", "BeamAgentsLlm", "adk_agent", "adk_tools"}
