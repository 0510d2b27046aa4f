"""An ADK agent's `output_schema` reaches the provider as the request's output type."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from beam_agents import AgentConfig
from beam_agents.model import FakeLLM, Rule
from beam_agents.model.messages import LlmResponse
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.adapters.adk_support import page_oncall

pytestmark = [pytest.mark.pipeline, pytest.mark.framework_extras]

ALERT = ("db", b"db is down", 1_000)


class Verdict(BaseModel):
    """What the agent decides about an alert."""

    priority: str
    page: bool


VERDICT_JSON = b'{"priority":"P1","page":true}'


def _agent(**overrides: Any) -> Any:
    from google.adk.agents import LlmAgent

    from beam_agents.adapters.adk import BeamAgentsLlm

    return LlmAgent(
        name="triage",
        model=BeamAgentsLlm(model="gpt-test"),
        instruction="Decide the alert's priority and whether to page.",
        output_schema=Verdict,
        **overrides,
    )


def _run(root_agent: Any, model: FakeLLM, output_type: type | None = None) -> StreamRun:
    from beam_agents.adapters.adk import adk_agent, adk_tools

    model.reset()
    config = AgentConfig(
        provider_factory=model,
        longterm_memory="memory://adk-structured",
        tools=adk_tools(root_agent),
    )
    script = Script().events(ALERT)
    return run_script(adk_agent(root_agent), config, script, output_type=output_type)


def test_an_output_schema_reaches_the_provider_as_the_requests_output_type() -> None:
    """The answer wraps its JSON in prose; ADK, and the output, get the validated value."""
    model = FakeLLM(
        rules=[Rule(r'"output_schema"', b'Here it is: {"priority": "P1", "page": true}')],
        name="adk-structured-native",
    )

    run = _run(_agent(output_key="verdict"), model)

    assert run.errors == []
    (request,) = model.calls()
    assert request.output_type is Verdict
    assert request.tools_schema is None
    assert run.outputs == [(b"db", VERDICT_JSON)]
    assert Verdict.model_validate_json(run.outputs[0][1]) == Verdict(priority="P1", page=True)


def test_an_agent_with_tools_is_offered_its_schema_as_adks_set_model_response_tool() -> None:
    """A structured request cannot be answered with a tool call, so ADK's own tool carries it."""
    answer = {"tool_calls": [{"name": "set_model_response", "arguments": json.loads(VERDICT_JSON)}]}
    model = FakeLLM(
        rules=[Rule(r"set_model_response", json.dumps(answer).encode())],
        name="adk-structured-tools",
    )

    run = _run(_agent(tools=[page_oncall]), model)

    assert run.errors == []
    (request,) = model.calls()
    assert request.output_type is None
    offered = {tool["name"]: tool for tool in request.tools_schema or []}
    assert sorted(offered) == ["page_oncall", "set_model_response"]
    assert set(offered["set_model_response"]["parameters"]["properties"]) == {"priority", "page"}
    ((key, output),) = run.outputs
    assert (key, Verdict.model_validate_json(output)) == (b"db", Verdict(priority="P1", page=True))


@pytest.mark.parametrize("tools", [[], [page_oncall]], ids=["native", "set_model_response"])
def test_under_a_typed_run_agent_the_outputs_are_the_agents_schema_values(
    tools: list[Any],
) -> None:
    """Asked natively or through ADK's tool, the result is a Verdict row, not bytes."""
    call = {"tool_calls": [{"name": "set_model_response", "arguments": json.loads(VERDICT_JSON)}]}
    model = FakeLLM(
        rules=[
            Rule(r"set_model_response", json.dumps(call).encode()),
            Rule(r'"output_schema"', b'{"priority": "P1", "page": true}'),
        ],
        name="adk-structured-typed",
    )

    run = _run(_agent(tools=tools), model, output_type=Verdict)

    assert run.errors == []
    assert run.outputs == [(b"db", Verdict(priority="P1", page=True))]
    assert isinstance(run.outputs[0][1], Verdict)


def test_an_answer_that_never_fits_the_schema_dead_letters_output_invalid() -> None:
    """Repaired once, then refused: ADK never sees it, and the raw answer is in the detail."""
    model = FakeLLM(rules=[Rule(r'"output_schema"', b'{"priority": 1}')], name="adk-invalid")

    run = _run(_agent(), model)

    assert run.outputs == []
    (error,) = run.errors
    assert error.reason == "output_invalid"
    assert "page: Field required" in error.detail
    assert '{"priority": 1}' in error.detail
    assert len(model.calls()) == 2  # the call and its one repair


def _request(config: Any) -> Any:
    from google.adk.models.llm_request import LlmRequest as AdkRequest
    from google.genai import types

    contents = [types.Content(role="user", parts=[types.Part(text="db is down")])]
    return AdkRequest(contents=contents, config=config)


def test_a_genai_schema_becomes_a_json_schema_output_type() -> None:
    from google.genai import types

    from beam_agents.adapters.adk._llm import to_request

    schema = types.Schema(
        type="OBJECT",
        properties={"priority": types.Schema(type="STRING", enum=["P1", "P2"])},
        required=["priority"],
    )
    config = types.GenerateContentConfig(response_schema=schema)

    request = to_request(_request(config), "gpt-test")

    assert request.output_type == {
        "type": "object",
        "properties": {"priority": {"type": "string", "enum": ["P1", "P2"]}},
        "required": ["priority"],
    }


def test_a_list_output_schema_becomes_a_json_schema_of_an_array() -> None:
    from google.genai import types

    from beam_agents.adapters.adk._llm import to_request

    config = types.GenerateContentConfig(response_schema=list[Verdict])

    output_type = to_request(_request(config), "gpt-test").output_type

    assert output_type["type"] == "array"
    assert output_type["items"] == {"$ref": "#/$defs/Verdict"}


def test_a_response_schema_beside_tools_is_refused_in_one_line() -> None:
    """An ADK that decides by the model's name may send both: the adapter says why it cannot."""
    from google.genai import types

    from beam_agents.adapters.adk import AdkAdapterError
    from beam_agents.adapters.adk._llm import to_request

    tool = types.Tool(function_declarations=[types.FunctionDeclaration(name="page_oncall")])
    config = types.GenerateContentConfig(response_schema=Verdict, tools=[tool])

    with pytest.raises(AdkAdapterError, match="response schema and tools together"):
        to_request(_request(config), "gpt-test")


def test_a_structured_answer_reaches_adk_as_its_value_in_json() -> None:
    from beam_agents.adapters.adk._llm import to_adk_response

    answer = LlmResponse(
        response=b'Sure! {"priority": "P2", "page": false}',
        parsed=Verdict(priority="P2", page=False),
    )

    content = to_adk_response(answer).content

    assert content is not None
    assert content.parts is not None
    assert [part.text for part in content.parts] == ['{"priority":"P2","page":false}']


def test_the_adapters_model_declares_no_output_schema_beside_tools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not guessed from the model's name: ADK would say yes to a Gemini name on Vertex AI."""
    from beam_agents.adapters.adk import BeamAgentsLlm

    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "1")

    assert BeamAgentsLlm(model="gemini-2.5-flash").capabilities.output_schema_and_tools is False
