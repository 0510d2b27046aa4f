{%- set openai = cookiecutter.model_provider == "openai" -%}
"""The agent against a loopback server that speaks the {% if openai %}OpenAI chat-completions{% else %}Gemini generateContent{% endif %} wire format.

The provider is built from the same `--model` spec grammar the deployed job
uses, pointed at 127.0.0.1: the real SDK, a real HTTP exchange, no network.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from beam_agents.local import Script, run_agent

from {{ cookiecutter.package_name }}.agent import MODEL_ID, agent
from {{ cookiecutter.package_name }}.graph import DEFAULT_MODEL, config
from {{ cookiecutter.package_name }}.pipeline import main

DATA = Path(__file__).resolve().parents[1] / "data"
DEPLOY_KEY_ENV = "{{ cookiecutter.model_provider | upper }}_API_KEY"

KEY_ENV = "{{ cookiecutter.package_name | upper }}_TEST_MODEL_KEY"
{%- if openai %}
RESPONSE = {
    "id": "chatcmpl-loopback",
    "object": "chat.completion",
    "created": 0,
    "model": MODEL_ID,
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Reply."},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13},
}
{%- else %}
RESPONSE = {
    "candidates": [
        {
            "content": {"role": "model", "parts": [{"text": "Reply."}]},
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 1, "totalTokenCount": 13},
    "modelVersion": MODEL_ID,
}
{%- endif %}


class _ModelServer(ThreadingHTTPServer):
    """Answers every POST with RESPONSE and keeps what it received."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: list[tuple[str, bytes]] = []


class _Handler(BaseHTTPRequestHandler):
    server: _ModelServer

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.received.append((self.path, body))
        payload = json.dumps(RESPONSE).encode()
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

    run = run_agent(agent, config(spec{% if cookiecutter.longterm_backend != "none" %}, "memory://model-test"{% endif %}), script)

    assert run.errors == []
    ((key, output),) = run.outputs
    assert (key, json.loads(output)["label"]) == (b"acct-4", "reply")
    ((path, body),) = model_server.received
    assert {% if openai %}path.endswith("/chat/completions"){% else %}f"{MODEL_ID}:generateContent" in path{% endif %}
    assert "can someone call me back" in body.decode()
