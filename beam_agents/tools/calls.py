"""What a tool handler receives and what executing an intent produced.

A handler is anything with `async __call__(call) -> bytes`, and optionally
`aclose()`: the runtime and `ExecuteIntents` call it with the intent's id as the
idempotency key, so a target that deduplicates on it sees each decision once
however often a bundle is retried.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal, Protocol, runtime_checkable

from beam_agents.tools.errors import InvalidIntentIdError

__all__ = [
    "INTENT_ID_PATTERN",
    "FunctionHandler",
    "ToolCall",
    "ToolHandler",
    "ToolResult",
    "ToolStatus",
    "as_handler",
    "check_intent_id",
]

INTENT_ID_PATTERN: Final = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
)
"""The canonical lowercase UUID form `beam_agents.intent_id` produces."""


def check_intent_id(intent_id: object) -> str:
    """Refuse anything but a canonical UUID string, before it becomes a row key.

    Ledger keys embed the id verbatim (a SQL primary key, a Redis key, a
    Bigtable row, a Firestore document id); admitting only 36 characters of
    `[0-9a-f-]` keeps every one of those encodings unambiguous and escape-free.
    """
    if type(intent_id) is not str or not INTENT_ID_PATTERN.fullmatch(intent_id):
        shown = intent_id if isinstance(intent_id, str) else type(intent_id).__name__
        raise InvalidIntentIdError(
            f"an intent id must be a lowercase canonical UUID string, got {shown!r:.80}"
        )
    return intent_id


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call of one tool: `intent_id` is its idempotency key."""

    intent_id: str
    tool: str
    entity_key: bytes
    args: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        check_intent_id(self.intent_id)
        if not isinstance(self.tool, str) or not self.tool:
            raise ValueError(f"ToolCall.tool must be a non-empty str, got {self.tool!r}")
        if type(self.entity_key) is not bytes:
            raise TypeError(
                f"ToolCall.entity_key must be bytes, got {type(self.entity_key).__name__}"
            )

    def body(self) -> bytes:
        """The call as canonical JSON (sorted keys), what webhooks and Pub/Sub messages carry.

        `entity_key` is the key as text, or null when it is not UTF-8;
        `entity_key_hex` is always its exact bytes, so no two keys read alike.
        """
        try:
            entity: str | None = self.entity_key.decode("utf-8")
        except UnicodeDecodeError:
            entity = None
        document = {
            "intent_id": self.intent_id,
            "tool": self.tool,
            "entity_key": entity,
            "entity_key_hex": self.entity_key.hex(),
            "args": dict(self.args),
        }
        return json.dumps(document, sort_keys=True, separators=(",", ":")).encode("utf-8")


@runtime_checkable
class ToolHandler(Protocol):
    """An async tool, and its lifecycle on a worker.

    Built on the machine that builds the pipeline and pickled with it, so a
    handler opens connections lazily, on its first call, on the loop that
    calls it; `aclose`, optional, releases them on that same loop. A handler
    that holds nothing leaves it out: a plain async function, or any async
    callable, is wrapped as a handler whose `aclose` does nothing (a
    `ToolHandler` subclass inherits that one). Any exception is a failed
    call; the handler owns its retries.
    """

    async def __call__(self, call: ToolCall) -> bytes:
        """Perform the call once (the target deduplicates on `call.intent_id`)."""
        ...

    async def aclose(self) -> None:
        """Optional: release what the handler holds (sessions, clients)."""
        return None


@dataclass(frozen=True, slots=True)
class FunctionHandler(ToolHandler):
    """A plain `async def handler(call: ToolCall) -> bytes`, given the handler lifecycle."""

    function: Callable[[ToolCall], Awaitable[bytes]]

    async def __call__(self, call: ToolCall) -> bytes:
        return await self.function(call)


def as_handler(handler: object) -> ToolHandler:
    """A `ToolHandler` as given, or a plain async function wrapped as one.

    Raises TypeError naming what is missing, so a mistake surfaces where the
    handlers are configured, not on the first intent.
    """
    if callable(getattr(handler, "aclose", None)) and callable(handler):
        return handler  # type: ignore[return-value]
    if callable(handler):
        return FunctionHandler(handler)
    raise TypeError(
        f"a tool handler is an async callable taking a ToolCall, got {type(handler).__name__}"
    )


ToolStatus = Literal["executed", "recorded"]
"""`executed`: this run performed the call and its result is the one recorded.
`recorded`: the result is another run's, read back from the ledger: an earlier
run's, without calling the handler again, or, when this run's lease lapsed and
another holder recorded first, that holder's (this run's own is discarded)."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What executing one intent produced."""

    intent_id: str
    tool: str
    entity_key: bytes
    status: ToolStatus
    result: bytes
    attempts: int
    """Handler calls this run made (0 when the ledger answered before any call)."""
