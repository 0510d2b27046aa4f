"""Executing intents through the ledger, without Beam: what `ExecuteIntents` runs.

Each intent becomes a `ToolCall` run by `call_once` (claim, call, record;
or the recorded result). An intent that cannot run (no handler, unreadable
args) or whose handler failed `max_attempts` times becomes a `ToolFailure`
dead letter. Ledger outages are raised, not
dead-lettered: the runner retries the bundle and the ledger keeps the
retry from executing twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from beam_agents._scrub import scrub_secrets
from beam_agents.errors import describe_briefly
from beam_agents.proto.beam_agents_pb2 import ToolIntent
from beam_agents.tools.calls import ToolCall, ToolHandler, ToolResult, as_handler
from beam_agents.tools.errors import ToolCallError
from beam_agents.tools.ledger.base import ToolLedger
from beam_agents.tools.once import call_once

__all__ = [
    "INVALID_INTENT",
    "TOOL_ERROR",
    "UNKNOWN_TOOL",
    "IntentExecutor",
    "ToolFailure",
    "check_handlers",
    "close_tools",
]

UNKNOWN_TOOL: Final = "unknown_tool"
"""No handler is configured under the intent's tool name."""
TOOL_ERROR: Final = "tool_error"
"""The handler failed on every attempt; the claim was released."""
INVALID_INTENT: Final = "invalid_intent"
"""The intent could not be read as a call (its id or args are malformed)."""

_MAX_DETAIL_CHARS: Final = 2000


@dataclass(frozen=True, slots=True)
class ToolFailure:
    """A dead letter of `ExecuteIntents`: the intent, why it was not executed, and how often."""

    intent_id: str
    tool: str
    entity_key: bytes
    reason: str
    detail: str
    attempts: int
    payload: bytes
    """The `ToolIntent`, serialized: fix what was wrong and feed it back in."""


def check_handlers(handlers: object) -> dict[str, ToolHandler]:
    """Validate a `{tool name: handler}` mapping, wrapping plain async functions."""
    if not isinstance(handlers, Mapping):
        raise TypeError(f"handlers must be a mapping of tool name to handler, got {handlers!r:.80}")
    checked: dict[str, ToolHandler] = {}
    for name, handler in handlers.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"a tool name must be a non-empty str, got {name!r}")
        checked[name] = as_handler(handler)
    return checked


class IntentExecutor:
    """Runs intents once each, through `ledger`, with the given handlers."""

    def __init__(
        self,
        handlers: Mapping[str, ToolHandler],
        ledger: ToolLedger,
        *,
        lease_ms: int,
        max_attempts: int = 1,
        backoff_s: float = 0.1,
    ) -> None:
        self.handlers = dict(handlers)
        self.ledger = ledger
        self.lease_ms = lease_ms
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s

    async def execute(self, intent: ToolIntent) -> ToolResult | ToolFailure:
        """The intent's result, recorded or fresh; or why it was not executed."""
        handler = self.handlers.get(intent.tool)
        if handler is None:
            known = ", ".join(sorted(self.handlers)) or "none"
            return _failure(intent, UNKNOWN_TOOL, f"no handler for {intent.tool!r} ({known})", 0)
        try:
            call = _call_of(intent)
        except Exception as exc:
            # Reading an intent is pure: whatever fails here is the intent's
            # fault, and a dead letter, never a bundle retried for ever.
            return _failure(intent, INVALID_INTENT, describe_briefly(exc), 0)
        try:
            return await call_once(
                self.ledger,
                handler,
                call,
                lease_ms=self.lease_ms,
                max_attempts=self.max_attempts,
                backoff_s=self.backoff_s,
            )
        except ToolCallError as exc:
            detail = str((exc.__cause__ and describe_briefly(exc.__cause__)) or exc)
            return _failure(intent, TOOL_ERROR, detail, exc.attempts)

    async def aclose(self) -> None:
        """Close every handler, then the ledger (`close_tools`)."""
        await close_tools(self.handlers, self.ledger)


async def close_tools(handlers: Mapping[str, ToolHandler], ledger: ToolLedger) -> None:
    """Close every handler, then the ledger, even past a failure; the first one is raised.

    A handler that fails to close must not leave the others' sessions, or
    the ledger's connections, open behind it.
    """
    failure: Exception | None = None
    for handler in handlers.values():
        aclose = getattr(handler, "aclose", None)  # optional: a handler may hold nothing
        if aclose is None:
            continue
        try:
            await aclose()
        except Exception as exc:
            failure = failure or exc
    await ledger.close()
    if failure is not None:
        raise failure


def _call_of(intent: ToolIntent) -> ToolCall:
    try:
        args: Any = json.loads(intent.args_json or b"{}")
    except RecursionError:
        raise ValueError("intent args are nested too deeply for JSON") from None
    if not isinstance(args, dict):
        raise TypeError(f"intent args must be a JSON object, got {type(args).__name__}")
    return ToolCall(intent.intent_id, intent.tool, intent.entity_key, args)


def _failure(intent: ToolIntent, reason: str, detail: str, attempts: int) -> ToolFailure:
    detail = scrub_secrets(detail)
    if len(detail) > _MAX_DETAIL_CHARS:
        detail = detail[: _MAX_DETAIL_CHARS - 1] + "…"
    return ToolFailure(
        intent.intent_id,
        intent.tool,
        intent.entity_key,
        reason,
        detail,
        attempts,
        intent.SerializeToString(deterministic=True),
    )
