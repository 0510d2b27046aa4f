"""Agents that schedule, replace and cancel their own follow-ups, for the wake tests.

An event is a small JSON command (`schedule`, `cancel`, `suspend`, `ask`);
every activation outputs one line saying what it ran for, what it saw and
what memory held, so a lost, doubled or misplaced wake changes the outputs.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

from beam_agents import ActivationContext, Complete, LlmRequest, Suspend


async def follow_up(ctx: ActivationContext) -> Complete | Suspend:
    """Runs the event's commands; on a wake, says which and asks the model about it."""
    wake = ctx.wake
    if wake is not None:
        ctx.memory.append("woke", wake.name.encode(), max_items=100)
        longterm = ctx.memory.longterm_or_none
        if longterm is not None:
            longterm.save(f"woke/{wake.name}/{ctx.seq}", wake.payload)
        said = b""
        if wake.payload.startswith(b"ask"):
            answer = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[wake.name]))
            said = b" model=" + answer.response
        again = json.loads(wake.payload) if wake.payload.startswith(b"{") else None
        if again is not None:
            _commands(ctx, again)
        return Complete(
            b"woke %s payload=%s due=%d now=%d seq=%d%s %s"
            % (
                wake.name.encode(),
                wake.payload,
                wake.due_ms,
                ctx.now_ms,
                ctx.seq,
                said,
                _digest(ctx),
            )
        )
    command = json.loads(ctx.event)
    if command.get("suspend") and ctx.answer is None:
        return Suspend(prompt=b"ok?", timeout_ms=600_000)
    _commands(ctx, command)
    ctx.memory.append("events", ctx.event, max_items=100)
    return Complete(b"event %s seq=%d %s" % (ctx.event, ctx.seq, _digest(ctx)))


def _commands(ctx: ActivationContext, command: dict[str, object]) -> None:
    for name in command.get("cancel", []):  # type: ignore[attr-defined]
        ctx.cancel(name)
    for spec in command.get("schedule", []):  # type: ignore[attr-defined]
        after = spec.get("after_ms")
        ctx.schedule(
            spec["name"],
            after=timedelta(milliseconds=after) if after is not None else None,
            at_ms=spec.get("at_ms"),
            payload=spec.get("payload", "").encode(),
            processing_time=spec.get("processing_time", False),
        )


def _digest(ctx: ActivationContext) -> bytes:
    """The memory the activation commits, in 12 hex digits."""
    blob = ctx.memory.to_blob().SerializeToString(deterministic=True)
    return hashlib.sha256(blob).hexdigest()[:12].encode()


def command(**fields: object) -> bytes:
    """One event: a JSON command for `follow_up`."""
    return json.dumps(fields, sort_keys=True).encode()
