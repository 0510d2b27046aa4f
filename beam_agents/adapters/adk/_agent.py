"""`adk_agent`: one ADK invocation per event, in the entity key's session.

The runner is built once per process; each activation loads the key's
session from working memory, runs the invocation with ADK's clock, ids and
tools bound to the activation, turns a pause into a `Suspend` (or resumes
it with the answer), and writes the trimmed session back.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.parallel_agent import ParallelAgent
from google.adk.apps import App
from google.adk.events.event import Event
from google.adk.runners import Runner
from google.genai import types

from beam_agents.adapters.adk._binding import AdkAdapterError, Binding, bind
from beam_agents.adapters.adk._memory import LongtermMemoryService
from beam_agents.adapters.adk._session import (
    WorkingMemorySessions,
    load_session,
    session_bytes,
    session_key,
    trim_session,
)
from beam_agents.adapters.adk._tools import LedgerToolsPlugin, function_tools
from beam_agents.errors import ConfigurationError
from beam_agents.runtime.agent import Agent
from beam_agents.runtime.context import ActivationContext
from beam_agents.runtime.results import Complete, Suspend

__all__ = ["adk_agent"]

CONFIRMATION = "adk_request_confirmation"
DEFAULT_MAX_EVENTS = 200
DEFAULT_MAX_SESSION_BYTES = 256 * 1024
_YES = frozenset({"approve", "approved", "yes", "y", "true", "confirm", "confirmed", "ok"})


def adk_agent(
    root_agent: BaseAgent,
    *,
    app_name: str = "beam_agents",
    read_only_tools: Sequence[str] = (),
    max_events: int = DEFAULT_MAX_EVENTS,
    max_session_bytes: int = DEFAULT_MAX_SESSION_BYTES,
    remember: bool = False,
    message: Callable[[bytes], str] | None = None,
) -> Agent:
    """The agent function for `RunAgent` that runs `root_agent`, one invocation per event.

    - `app_name`: ADK's app name (sessions and memory are scoped by it).
    - `read_only_tools`: names of tools that run in place, as ADK runs them;
      every other function tool runs once through `ctx.call_tool`.
    - `max_events`, `max_session_bytes`: the session's bounds; past them the
      oldest invocations are dropped.
    - `remember`: after each completed event, add the session to ADK's
      memory service (the long-term tier), for `load_memory` to find.
    - `message`: the event bytes as the user's text (default: UTF-8).
    """
    if not isinstance(root_agent, BaseAgent):
        raise ConfigurationError(
            "root_agent", f"must be an ADK agent, got {type(root_agent).__name__}"
        )
    if isinstance(read_only_tools, str) or not all(
        type(name) is str and name for name in read_only_tools
    ):
        raise ConfigurationError("read_only_tools", "must be a sequence of tool names")
    for name, value in (("max_events", max_events), ("max_session_bytes", max_session_bytes)):
        if type(value) is not int or value < 1:
            raise ConfigurationError(name, f"must be a positive int, got {value!r}")
    _refuse_parallel(root_agent)
    read_only = frozenset(read_only_tools)
    function_tools(root_agent, read_only)  # refuses, now, a tool that cannot run once
    adapter = _Adapter(
        root_agent,
        app_name,
        read_only,
        max_events,
        max_session_bytes,
        remember,
        message or _utf8,
    )

    async def agent(ctx: ActivationContext) -> Complete | Suspend:
        return await adapter.activate(ctx)

    agent.__qualname__ = agent.__name__ = f"adk_agent[{root_agent.name}]"
    return agent


def _utf8(event: bytes) -> str:
    return event.decode("utf-8", errors="replace")


def _refuse_parallel(agent: BaseAgent) -> None:
    """Parallel branches would call tools in an order a re-run cannot promise."""
    if isinstance(agent, ParallelAgent):
        raise ConfigurationError(
            f"agents[{agent.name!r}]",
            "is a ParallelAgent: its branches interleave their model and tool calls "
            "differently on every run, which the replay cache and the tool ledger "
            "cannot match; use a SequentialAgent",
        )
    for sub in agent.sub_agents:
        _refuse_parallel(sub)


@dataclass
class _Pending:
    """A function call ADK paused on: a confirmation it asks for, or a long-running tool."""

    call: types.FunctionCall
    kind: str

    def prompt(self, entity: str) -> bytes:
        args = dict(self.call.args or {})
        if self.kind == "confirmation":
            original = args.get("originalFunctionCall") or {}
            hint = (args.get("toolConfirmation") or {}).get("hint")
            body: dict[str, Any] = {
                "kind": "confirmation",
                "tool": original.get("name"),
                "args": original.get("args") or {},
                "hint": hint,
            }
        else:
            body = {"kind": "long_running", "tool": self.call.name, "args": args}
        body["entity"] = entity
        return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()

    def reply(self, answer: bytes) -> types.Content:
        text = _answer_text(answer)
        if self.kind == "confirmation":
            decision = text.split(":", 1)[0].strip().casefold()
            response: dict[str, Any] = {"confirmed": decision in _YES}
        else:
            try:
                parsed = json.loads(text)
            except (ValueError, RecursionError):
                parsed = None
            response = parsed if isinstance(parsed, dict) else {"result": text}
        part = types.Part(
            function_response=types.FunctionResponse(
                id=self.call.id, name=self.call.name, response=response
            )
        )
        return types.Content(role="user", parts=[part])


def _answer_text(answer: bytes) -> str:
    """The answer's text: the console's JSON line carries it in `answer`."""
    text = answer.decode("utf-8", errors="replace")
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return text
    if isinstance(body, dict) and isinstance(body.get("answer"), str):
        return str(body["answer"])
    return text


class _Adapter:
    """The per-pipeline half of `adk_agent`: the runner, built once per process."""

    def __init__(
        self,
        root_agent: BaseAgent,
        app_name: str,
        read_only: frozenset[str],
        max_events: int,
        max_session_bytes: int,
        remember: bool,
        message: Callable[[bytes], str],
    ) -> None:
        self.root_agent = root_agent
        self.app_name = app_name
        self.read_only = read_only
        self.max_events = max_events
        self.max_session_bytes = max_session_bytes
        self.remember = remember
        self.message = message
        self._runner: Runner | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(vars(self))
        state["_runner"] = None  # rebuilt on the worker
        return state

    def runner(self) -> Runner:
        if self._runner is None:
            _settle_missing_a2a()
            app = App(name=self.app_name, root_agent=self.root_agent, plugins=[LedgerToolsPlugin()])
            self._runner = Runner(
                app=app,
                session_service=WorkingMemorySessions(),
                memory_service=LongtermMemoryService(),
            )
        return self._runner

    async def activate(self, ctx: ActivationContext) -> Complete | Suspend:
        entity = ctx.entity_key.decode("utf-8", errors="backslashreplace")
        with bind(Binding(ctx, self.read_only)) as binding:
            runner = self.runner()
            session = await load_session(ctx, entity)
            if session is None:
                session = await runner.session_service.create_session(
                    app_name=self.app_name, user_id=entity, session_id=entity
                )
            binding.sessions[entity] = session
            start = len(session.events)
            text = types.Content(role="user", parts=[types.Part(text=self.message(ctx.event))])
            await self._run(runner, entity, text)
            pending = _pending(session.events[start:])
            if pending is not None:
                if ctx.answer is None:
                    return Suspend(prompt=pending.prompt(entity))
                await self._run(runner, entity, pending.reply(ctx.answer))
                again = _pending(session.events[start:])
                if again is not None:
                    raise AdkAdapterError(
                        f"the agent paused again on {again.call.name!r} after its answer: "
                        "one confirmation or long-running tool per event is supported"
                    )
            output = _final_text(session.events[start:])
            if self.remember and runner.memory_service is not None:
                await runner.memory_service.add_session_to_memory(session)
            for session_id, held in sorted(binding.sessions.items()):
                kept_from = start if session_id == entity else len(held.events)
                trim_session(held, kept_from, self.max_events, self.max_session_bytes)
                ctx.memory.set(session_key(session_id), session_bytes(ctx, session_id, held))
            return Complete(output.encode("utf-8"))

    async def _run(self, runner: Runner, entity: str, message: types.Content) -> None:
        async for _event in runner.run_async(
            user_id=entity, session_id=entity, new_message=message
        ):
            pass


def _settle_missing_a2a() -> None:
    """Make ADK's optional A2A import fail at once when `a2a` is not installed.

    ADK's workflow imports its remote-A2A agent inside every run and
    catches the ImportError; a failed import is not remembered, so without
    `a2a` each activation re-executes that module up to its failing import:
    about 2 ms, most of the adapter's cost. A `None` in `sys.modules` is
    Python's own way to remember a module as unavailable.
    """
    if importlib.util.find_spec("a2a") is None:
        sys.modules.setdefault("google.adk.agents.remote_a2a_agent", None)  # type: ignore[arg-type]


def _pending(events: Sequence[Event]) -> _Pending | None:
    """The call ADK paused on in `events`, if it paused and nobody answered it yet."""
    answered = {
        response.id
        for event in events
        if event.author == "user"
        for response in event.get_function_responses()
    }
    for event in reversed(events):
        waiting = set(event.long_running_tool_ids or ())
        for call in event.get_function_calls():
            if call.id in waiting and call.id not in answered:
                kind = "confirmation" if call.name == CONFIRMATION else "long_running"
                return _Pending(call, kind)
    return None


def _final_text(events: Sequence[Event]) -> str:
    for event in reversed(events):
        if event.author != "user" and event.content is not None and event.is_final_response():
            text = "".join(
                part.text or "" for part in event.content.parts or [] if not part.thought
            )
            if text:
                return text
    return ""
