"""Agents for the tool tests (module level: pickled by reference)."""

from __future__ import annotations

import asyncio
import json
import threading

from beam_agents import ActivationContext, Complete, LlmRequest, Suspend
from beam_agents.tools import ToolCall


async def file_ticket(ctx: ActivationContext) -> Complete:
    """One ticket per event, and a page for events marked urgent."""
    text = ctx.event.decode()
    ctx.emit_intent("open_ticket", {"title": text})
    if text.startswith("urgent"):
        ctx.emit_intent("page_oncall", {"reason": text})
    return Complete(b"filed")


async def ticket_by_call(ctx: ActivationContext) -> Complete:
    """Open a ticket with `ctx.call_tool` and answer with what the target said."""
    ctx.emit_intent("audit", {"event": ctx.event.decode()})
    ticket = await ctx.call_tool("open_ticket", {"title": ctx.event.decode()})
    return Complete(ticket)


async def ticket_then_approval(ctx: ActivationContext) -> Complete | Suspend:
    """Open a ticket, then wait for a human; the resumed run opens the same ticket again."""
    ticket = await ctx.call_tool("open_ticket", {"title": ctx.event.decode()})
    if ctx.answer is None:
        return Suspend(prompt=b"close it?")
    return Complete(ticket + b" " + ctx.answer)


async def tool_then_model(ctx: ActivationContext) -> Complete:
    """A tool call before a model call that parks: the re-run must replay the tool call."""
    ticket = await ctx.call_tool("open_ticket", {"title": ctx.event.decode()})
    answer = await ctx.call_model(
        LlmRequest(model_id="fake-1", messages=[{"role": "user", "content": ctx.event.decode()}])
    )
    return Complete(ticket + b" " + answer.response)


tool_threads: list[str] = []
"""Where `slow_ticket` ran, one name per execution (the handler is pickled by reference)."""


async def slow_ticket(call: ToolCall) -> bytes:
    """A target slow enough that, once the first call shows it, its calls park."""
    await asyncio.sleep(0.05)
    tool_threads.append(threading.current_thread().name)
    return f"ticket {call.intent_id}".encode()


async def quick_ticket(call: ToolCall) -> bytes:
    """A target that answers at once: parking its calls would cost more than waiting."""
    tool_threads.append(threading.current_thread().name)
    return f"ticket {call.intent_id}".encode()


async def react(tools_schema: list[dict[str, object]], ctx: ActivationContext) -> Complete:
    """Ask the model with the tools offered; run the calls it chooses; let it see the results.

    Bound to the listed schema with `functools.partial` where the pipeline is built.
    """
    messages: list[dict[str, object]] = [{"role": "user", "content": ctx.event.decode()}]
    request = LlmRequest(model_id="fake-1", messages=messages, tools_schema=tools_schema)
    chosen = json.loads((await ctx.call_model(request)).response)["tool_calls"]
    for call in chosen:
        result = await ctx.call_tool(call["name"], call["arguments"])
        # A new list: the first request keeps the messages it was asked with.
        messages = [*messages, {"role": "tool", "name": call["name"], "content": result.decode()}]
    final = await ctx.call_model(
        LlmRequest(model_id="fake-1", messages=messages, tools_schema=tools_schema)
    )
    return Complete(final.response)


OVERSIZED = b"x" * (512 * 1024 + 1)
"""One byte over the ledger's result limit."""


async def oversized_ticket(call: ToolCall) -> bytes:
    """A target whose answer is too large for any ledger."""
    return OVERSIZED


slow_runs: list[str] = []
"""`slow_numbered_ticket`'s executions, in the order they started."""


async def slow_numbered_ticket(call: ToolCall) -> bytes:
    """A target that outlives short leases and numbers its executions."""
    slow_runs.append(call.intent_id)
    number = len(slow_runs)
    await asyncio.sleep(1.2)
    return f"run-{number}".encode()


takeover_ledger: list[str] = []
"""The ledger URI `taken_over_ticket` takes its own call over in (set by the test)."""


async def taken_over_ticket(call: ToolCall) -> bytes:
    """A call whose lease another holder takes over, and records first, while it runs.

    The other holder is a ledger whose clock runs an hour ahead, so the
    running call's lease has lapsed for it: what a slow call meets when its
    lease ends before it answers.
    """
    from beam_agents.tools import open_ledger
    from beam_agents.tools.ledger.base import Claimed, wall_clock_ms

    async with open_ledger(takeover_ledger[-1], clock=lambda: wall_clock_ms() + 3_600_000) as other:
        claim = await other.claim(call.intent_id, lease_ms=60_000)
        assert isinstance(claim, Claimed), claim
        assert await other.record(claim, b"the other holder's ticket")
    return b"this holder's ticket"


async def deeply_nested_call(ctx: ActivationContext) -> Complete:
    """Pass the tool args nested far deeper than any JSON reader recurses."""
    args: dict[str, object] = {}
    inner = args
    for _ in range(100_000):
        inner["a"] = {}
        inner = inner["a"]  # type: ignore[assignment]
    await ctx.call_tool("open_ticket", args)
    return Complete(b"never")
