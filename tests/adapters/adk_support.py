"""What the ADK adapter tests share: an agent written as ADK teaches, and loopback servers.

The agent is ordinary ADK code: an `LlmAgent` with an instruction and a
function tool. The one adapter-specific object in it is the model.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.request
from collections import Counter
from typing import Any

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

PAGER_ENV = "BEAM_AGENTS_TEST_PAGER_URL"
KEY_ENV = "BEAM_AGENTS_TEST_OPENAI_KEY"
CHAT = "/v1/chat/completions"


def page_oncall(service: str, reason: str) -> dict[str, Any]:
    """Page the on-call engineer of a service."""
    request = urllib.request.Request(
        os.environ[PAGER_ENV],
        data=json.dumps({"service": service, "reason": reason}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return dict(json.loads(answer.read()))


def restart_service(service: str) -> dict[str, Any]:
    """Start restarting a service; the restart finishes later, elsewhere."""
    started = page_oncall(f"restart-{service}", "restart requested")
    return {"status": "started", **started}


def restart_agent() -> Any:
    """An agent with a long-running tool, as ADK's documentation writes one."""
    from google.adk.agents import LlmAgent
    from google.adk.tools import LongRunningFunctionTool

    from beam_agents.adapters.adk import BeamAgentsLlm

    return LlmAgent(
        name="restarts",
        model=BeamAgentsLlm(model="gpt-test"),
        instruction="Restart a service when asked; report when the restart is done.",
        tools=[LongRunningFunctionTool(restart_service)],
    )


def triage_agent(*, confirm: bool = False) -> Any:
    """The triage agent, as ADK's documentation writes one."""
    from google.adk.agents import LlmAgent
    from google.adk.tools import FunctionTool

    from beam_agents.adapters.adk import BeamAgentsLlm

    return LlmAgent(
        name="triage",
        model=BeamAgentsLlm(model="gpt-test"),
        instruction="Triage the alert. Page the on-call engineer when a service is down.",
        tools=[FunctionTool(page_oncall, require_confirmation=confirm)],
    )


class Pager:
    """A loopback pager that counts pages per service."""

    def __init__(self, server: HTTPServer) -> None:
        self.pages: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.url = server.url_for("/page")
        server.expect_request("/page", method="POST").respond_with_handler(self._answer)

    def _answer(self, request: Request) -> Response:
        body = json.loads(request.get_data())
        with self._lock:
            self.pages[body["service"]] += 1
            number = sum(self.pages.values())
        return Response(json.dumps({"page": f"P-{number}"}), content_type="application/json")


class ScriptedModel:
    """A loopback OpenAI-compatible model whose answer is a function of what it is sent.

    A user turn that says "down" gets a `page_oncall` tool call; a tool
    result gets "paged: <result>"; anything else gets the conversation's
    user turns so far, so a test sees what the model was shown.
    """

    def __init__(self, server: HTTPServer) -> None:
        self.requests: list[dict[str, Any]] = []
        self.delay_s = 0.0
        """How long each answer waits: long enough, and the runtime parks the calls."""
        self._lock = threading.Lock()
        server.expect_request(CHAT, method="POST").respond_with_handler(self._answer)

    @property
    def calls(self) -> int:
        return len(self.requests)

    def _answer(self, request: Request) -> Response:
        body = json.loads(request.get_data())
        with self._lock:
            self.requests.append(body)
        time.sleep(self.delay_s)
        messages = body["messages"]
        last = messages[-1]
        users = [m["content"] for m in messages if m["role"] == "user"]
        if last["role"] == "tool":
            message: dict[str, Any] = {"role": "assistant", "content": f"paged: {last['content']}"}
        elif last["role"] == "user" and ("down" in last["content"] or "restart" in last["content"]):
            service = last["content"].split()[0]
            tool = "restart_service" if "restart" in last["content"] else "page_oncall"
            fields = (
                {"service": service}
                if "restart" in last["content"]
                else {
                    "service": service,
                    "reason": last["content"],
                }
            )
            args = json.dumps(fields)
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": tool, "arguments": args},
                    }
                ],
            }
        else:
            message = {"role": "assistant", "content": "heard: " + " | ".join(users)}
        answer = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "gpt-test",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        return Response(json.dumps(answer), content_type="application/json")


def provider_spec(server: HTTPServer) -> str:
    return (
        f"openai:gpt-test?base_url={server.url_for('/v1')}&api_key_env={KEY_ENV}"
        "&timeout_s=10&max_retries=0"
    )
