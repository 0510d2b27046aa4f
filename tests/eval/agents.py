"""A small triage agent and its configurations, for the evaluation tests.

Module level, because RunAgent pickles its agent by reference, as a user's
agent must be. Two versions differ only in the prompt of CPU alerts, so a
replay of version 2 over version 1's recording has exactly the CPU
requests to ask anew.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest, Suspend
from beam_agents.memory.expire import FlushToLongterm, read_expired_memory
from beam_agents.model.fake import FakeLLM, Rule
from beam_agents.tools import ToolCall
from beam_agents.tools.calls import FunctionHandler

PROMPT = "Triage this alert."
CPU_PROMPT_V2 = "Triage this alert; CPU alerts are routine."

MODEL = FakeLLM(
    rules=[Rule("urgent", b'{"priority": "high", "reason": "says urgent"}')],
    default=b'{"priority": "low", "reason": "routine"}',
    fail_pattern="explode",
    name="eval-tests",
    model_id="fake-1",
)

_lock = threading.Lock()
REAL_TOOL_CALLS: list[str] = []
"""Calls that reached the real tool handler: an evaluation must leave it empty."""


async def lookup(call: ToolCall) -> bytes:
    """The production tool: an evaluation must never run it."""
    with _lock:
        REAL_TOOL_CALLS.append(call.intent_id)
    return b"real"


class Verdict(BaseModel):
    """What `triage_typed` completes with: `_triage`'s output, typed.

    The priority is `level` in Python and `priority` in JSON, so the JSON of
    a verdict is the output `triage_v1` writes, and a scorer may name either.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    level: Literal["high", "low"] = Field(
        validation_alias=AliasChoices("priority", "level"), serialization_alias="priority"
    )
    reason: str
    seen: int
    rehydrated: bool
    approved: bool | None
    info: str | None


class Unrowable(BaseModel):
    """A result type RunAgent cannot make Beam rows of: a map has no deterministic encoding."""

    counts: dict[str, int]


async def _triage(
    ctx: ActivationContext,
    cpu_prompt: str,
    *,
    always_high: bool = False,
    typed: bool = False,
    medium_cpu: bool = False,
) -> Complete | Suspend:
    event: dict[str, Any] = json.loads(ctx.event)
    seen = ctx.memory.ring("seen")
    rehydrated = False
    if not seen:
        rehydrated = await read_expired_memory(ctx.memory.longterm) is not None
    if event.get("approve") and ctx.answer is None:
        return Suspend(b"page the on-call team?")
    info = None
    if "lookup" in event:
        info = (await ctx.call_tool("lookup", {"id": event["lookup"]})).decode()
    prompt = cpu_prompt if "cpu" in event["text"] else PROMPT
    response = await ctx.call_model(
        LlmRequest(
            model_id="fake-1",
            messages=[
                {"role": "system", "content": prompt},
                {"role": "user", "content": event["text"]},
            ],
        )
    )
    decision = json.loads(response.response)
    if always_high:
        decision = {"priority": "high", "reason": "pages for everything"}
    approved = None if ctx.answer is None else ctx.answer == b"yes"
    if decision["priority"] == "high" and approved is not False:
        ctx.emit_intent("page", {"team": "oncall"})
    ctx.memory.append("seen", event["text"].encode())
    output = {
        **decision,
        "seen": len(seen) + 1,
        "rehydrated": rehydrated,
        "approved": approved,
        "info": info,
    }
    if medium_cpu and "cpu" in event["text"]:
        return Complete({**output, "priority": "medium"})  # not a Verdict: output_invalid
    if typed:
        return Complete(Verdict.model_validate(output))
    return Complete(json.dumps(output, sort_keys=True).encode())


async def triage_v1(ctx: ActivationContext) -> Complete | Suspend:
    """Version 1: one prompt for every alert."""
    return await _triage(ctx, PROMPT)


async def triage_v2(ctx: ActivationContext) -> Complete | Suspend:
    """Version 2: CPU alerts get a prompt of their own."""
    return await _triage(ctx, CPU_PROMPT_V2)


async def triage_typed(ctx: ActivationContext) -> Complete | Suspend:
    """Version 1, completing with a `Verdict` instead of its JSON bytes."""
    return await _triage(ctx, PROMPT, typed=True)


async def triage_typed_medium_cpu(ctx: ActivationContext) -> Complete | Suspend:
    """The typed version, except that a CPU alert completes with a priority Verdict refuses."""
    return await _triage(ctx, PROMPT, typed=True, medium_cpu=True)


async def triage_paranoid(ctx: ActivationContext) -> Complete | Suspend:
    """Asks the model as version 1 does, then rates every alert high regardless."""
    return await _triage(ctx, PROMPT, always_high=True)


CONFIG = AgentConfig(
    provider_factory=MODEL,
    longterm_memory="memory://production-must-not-be-touched",
    on_expire=FlushToLongterm(),
    ttl_ms=600_000,
    hitl_timeout_ms=120_000,
    tools={"lookup": FunctionHandler(lookup)},
)


SECRET_IN_CONFIG_ERROR = "s3cr3t-catalogue-token"


def broken_config() -> AgentConfig:
    """A config function that fails, quoting a credential as a careless client would."""
    raise RuntimeError(f"model catalogue unreachable (token={SECRET_IN_CONFIG_ERROR})")
