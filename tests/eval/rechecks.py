"""Agents that follow their alerts up with wakes, and their configs, for the follow-up tests.

Module level, because RunAgent pickles its agent by reference. `recheck`
and `recheck_v2` differ only in the prompt of the re-check a wake makes, so
a comparison of the two differs in the follow-ups and nowhere else.
`heartbeat` schedules its next wake from every wake: a chain only the
replay's end can stop.
"""

from __future__ import annotations

import json
import threading
from datetime import timedelta

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest
from beam_agents.model.fake import FakeLLM, Rule

MODEL = FakeLLM(
    rules=[Rule("Still open", b'{"escalate": true}')],
    default=b'{"escalate": false}',
    fail_pattern="explode",
    name="eval-follow-ups",
    model_id="fake-1",
)
RECHECK_AFTER = timedelta(minutes=30)

_lock = threading.Lock()
PROVIDERS_BUILT: list[str] = []
"""Every time `Unreachable` was asked for a provider: a fully recorded replay leaves it empty."""


class Unreachable:
    """A provider factory that fails when a provider is built: the replay asked a model."""

    def __call__(self) -> FakeLLM:
        with _lock:
            PROVIDERS_BUILT.append("built")
        raise RuntimeError("the replay asked the model provider instead of the recording")


CONFIG = AgentConfig(provider_factory=MODEL, ttl_ms=600_000, hitl_timeout_ms=120_000)
REPLAY_CONFIG = AgentConfig(provider_factory=Unreachable(), ttl_ms=600_000, hitl_timeout_ms=120_000)


async def _recheck(ctx: ActivationContext, prompt: str) -> Complete:
    wake = ctx.wake
    if wake is None:
        event = json.loads(ctx.event)
        if event.get("ack"):
            ctx.cancel("recheck")
            return Complete(b'{"acknowledged": true}')
        ctx.schedule("recheck", after=RECHECK_AFTER, payload=event["alert"].encode())
        return Complete(json.dumps({"opened": event["alert"]}).encode())
    alert = wake.payload.decode()
    answer = await ctx.call_model(
        LlmRequest(model_id="fake-1", messages=[prompt.format(alert=alert)])
    )
    escalate = json.loads(answer.response)["escalate"]
    if escalate:
        ctx.emit_intent("page", {"alert": alert})
    return Complete(json.dumps({"escalate": escalate, "alert": alert}).encode())


async def recheck(ctx: ActivationContext) -> Complete:
    """An alert not acknowledged within 30 minutes is re-checked, and escalated if still open."""
    return await _recheck(ctx, "Still open after 30 minutes: {alert}. Escalate?")


async def recheck_v2(ctx: ActivationContext) -> Complete:
    """The same, with a re-check prompt the model answers differently."""
    return await _recheck(ctx, "Is {alert} resolved by now?")


async def heartbeat(ctx: ActivationContext) -> Complete:
    """Looks at its key every 10 minutes, for ever."""
    ctx.schedule("beat", after=timedelta(minutes=10))
    wake = ctx.wake
    return Complete(b"beat due=%d" % wake.due_ms if wake is not None else b"started")
