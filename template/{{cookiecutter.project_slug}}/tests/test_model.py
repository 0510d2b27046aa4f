{%- set openai = cookiecutter.model_provider == "openai" -%}
{%- set framework = cookiecutter.framework -%}
"""The agent against a loopback server that speaks the {% if openai %}OpenAI chat-completions{% else %}Gemini generateContent{% endif %} wire format.

The provider is built from the same `--model` spec grammar the deployed job
uses, pointed at 127.0.0.1: the real SDK, a real HTTP exchange, no network.
{%- if framework == "adk" %}
ADK asks for the agent's `output_schema` beside its tools as its own
`set_model_response` tool, which the server calls to answer.
{%- else %}
The agent's structured request asks for the `Classification` schema
natively ({% if openai %}`response_format`{% else %}`responseJsonSchema`{% endif %}), and the server answers it in JSON.
{%- endif %}
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from beam_agents.local import Script, run_agent

from {{ cookiecutter.package_name }}.agent import MODEL_ID, Decision, agent
from {{ cookiecutter.package_name }}.graph import DEFAULT_MODEL, config
from {{ cookiecutter.package_name }}.pipeline import main

DATA = Path(__file__).resolve().parents[1] / "data"
DEPLOY_KEY_ENV = "{{ cookiecutter.model_provider | upper }}_API_KEY"

KEY_ENV = "{{ cookiecutter.package_name | upper }}_TEST_MODEL_KEY"
{%- if framework == "plain" %}
#: The classification the server answers the schema with.
CLASSIFIED = {"label": "reply"}
{%- else %}
#: The classification the server answers with.
CLASSIFIED = {"label": "reply", "answer": "call the customer back"}
{%- endif %}


{% if openai -%}
def _completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL_ID,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16},
    }


def asks_for_schema(body: dict[str, Any]) -> bool:
    """A structured request, asked natively: `response_format` with the JSON Schema."""
    return body.get("response_format", {}).get("type") == "json_schema"


def answer_to(body: dict[str, Any]) -> dict[str, Any]:
{%- if framework == "adk" %}
    function = {"name": "set_model_response", "arguments": json.dumps(CLASSIFIED)}
    call = {"id": "call_1", "type": "function", "function": function}
    return _completion({"role": "assistant", "content": None, "tool_calls": [call]})
{%- elif framework == "langgraph" %}
    if asks_for_schema(body):
        return _completion({"role": "assistant", "content": json.dumps(CLASSIFIED)})
    return _completion({"role": "assistant", "content": "reply: I will call back."})
{%- else %}
    return _completion({"role": "assistant", "content": json.dumps(CLASSIFIED)})
{%- endif %}
{%- else -%}
def _candidate(part: dict[str, Any]) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 4, "totalTokenCount": 16},
        "modelVersion": MODEL_ID,
    }


def asks_for_schema(body: dict[str, Any]) -> bool:
    """A structured request, asked natively: JSON out, under the JSON Schema given."""
    generation = body.get("generationConfig", {})
    return generation.get("responseMimeType") == "application/json" and (
        "responseJsonSchema" in generation or "responseSchema" in generation
    )


def answer_to(body: dict[str, Any]) -> dict[str, Any]:
{%- if framework == "adk" %}
    return _candidate({"functionCall": {"name": "set_model_response", "args": CLASSIFIED}})
{%- elif framework == "langgraph" %}
    if asks_for_schema(body):
        return _candidate({"text": json.dumps(CLASSIFIED)})
    return _candidate({"text": "reply: I will call back."})
{%- else %}
    return _candidate({"text": json.dumps(CLASSIFIED)})
{%- endif %}
{%- endif %}


class _ModelServer(ThreadingHTTPServer):
    """Answers every POST as the model would (`answer_to`) and keeps what it received."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: list[tuple[str, dict[str, Any]]] = []


class _Handler(BaseHTTPRequestHandler):
    server: _ModelServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.server.received.append((self.path, body))
        payload = json.dumps(answer_to(body)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        """Keep test output quiet."""


@pytest.fixture
def model_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[_ModelServer]:
    monkeypatch.setenv(KEY_ENV, "test-key-not-a-secret")
    server = _ModelServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_the_deployed_model_spec_is_valid() -> None:
    assert DEFAULT_MODEL.startswith("{{ cookiecutter.model_provider }}:")
    config(DEFAULT_MODEL)


def test_a_local_run_with_the_deploy_model_and_no_key_fails_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(DEPLOY_KEY_ENV, raising=False)

    assert main(["--input", str(DATA / "events.jsonl"), "--model", DEFAULT_MODEL]) == 2

    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert DEPLOY_KEY_ENV in line
    assert "is not set" in line


def test_the_agent_calls_the_model_over_its_wire_format(model_server: _ModelServer) -> None:
    host, port = model_server.server_address[:2]
{%- if openai %}
    spec = f"openai:{MODEL_ID}?base_url=http://{host}:{port}/v1&api_key_env={KEY_ENV}"
{%- else %}
    spec = f"gemini:{MODEL_ID}?base_url=http://{host}:{port}&api_key_env={KEY_ENV}"
{%- endif %}
    script = Script().events(("acct-4", b"can someone call me back", 1_000))

    run = run_agent(
        agent,
        config(spec{% if cookiecutter.longterm_backend != "none" %}, "memory://{{ cookiecutter.package_name }}-model-test"{% endif %}),
        script,
        output_type=Decision,
    )

    assert run.errors == []
    ((key, decision),) = run.outputs
    assert (key, decision.label) == (b"acct-4", "reply")
    paths = [path for path, _ in model_server.received]
    assert all({% if openai %}path.endswith("/chat/completions"){% else %}f"{MODEL_ID}:generateContent" in path{% endif %} for path in paths)
    bodies = [body for _, body in model_server.received]
    assert "can someone call me back" in json.dumps(bodies[0])
{%- if framework == "adk" %}
    ((_, body),) = model_server.received
    assert not asks_for_schema(body)  # beside tools, the schema is a tool
    assert "set_model_response" in json.dumps(body["tools"])
    assert decision.answer == CLASSIFIED["answer"]
{%- elif framework == "langgraph" %}
    # The ReAct turn, then the structured one: only that one asks for the schema.
    assert [asks_for_schema(body) for body in bodies] == [False, True]
    assert "Classification" in json.dumps(bodies[1])
    assert decision.answer == CLASSIFIED["answer"]
{%- else %}
    ((_, body),) = model_server.received
    assert asks_for_schema(body)
    assert "Classification" in json.dumps(body)
{%- endif %}
