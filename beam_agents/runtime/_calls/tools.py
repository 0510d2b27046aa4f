"""The tools one DoFn instance offers its activations, and the ledger they run through.

Built in the DoFn's `setup()` from `AgentConfig.tools` and the ledger URI
(`tool_ledger`, else `longterm_memory`), closed in `teardown()` on the loop
that opened them. A call goes through `call_once`: a recorded result comes
back without running the handler; otherwise the id is claimed under a lease
as long as the activation may run, the handler runs, and its result is
recorded before the agent sees it. With parking on, calls run on the call
loop instead, through this object's `copy()`, and park when they are slow.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from beam_agents.errors import describe_briefly
from beam_agents.memory.stores.errors import StoreError
from beam_agents.tools.calls import ToolCall, ToolHandler, ToolResult
from beam_agents.tools.errors import ToolError, UnknownToolError
from beam_agents.tools.executor import close_tools
from beam_agents.tools.ledger.base import MAX_LEASE_MS, ToolLedger
from beam_agents.tools.ledger.factory import open_ledger
from beam_agents.tools.once import call_once

__all__ = ["ActivationTools"]

_LEASE_MARGIN_MS = 5_000
"""Added to the activation timeout: a lease outlives the longest call that holds it."""


class ActivationTools:
    """Configured handlers and their ledger; `call` runs one call once."""

    __slots__ = ("handlers", "lease_ms", "ledger", "ledger_uri")

    def __init__(self, handlers: Mapping[str, ToolHandler], ledger_uri: str, lease_ms: int) -> None:
        self.handlers = dict(handlers)
        self.ledger_uri = ledger_uri
        self.ledger: ToolLedger = open_ledger(ledger_uri)
        self.lease_ms = lease_ms

    @classmethod
    def open(
        cls,
        handlers: Mapping[str, ToolHandler],
        ledger_uri: str | None,
        activation_timeout_s: float,
    ) -> ActivationTools | None:
        """The tools, or None without any (or without a ledger). No connection is made yet.

        Leases last as long as an activation may run, plus a margin.
        """
        if not handlers or ledger_uri is None:
            return None
        lease_ms = min(int(activation_timeout_s * 1000) + _LEASE_MARGIN_MS, MAX_LEASE_MS)
        return cls(handlers, ledger_uri, lease_ms)

    def copy(self) -> ActivationTools:
        """The same tools with their own handlers and ledger, for another event loop.

        The call loop runs parked tool calls through such a copy: a handler's
        session and the ledger's connections belong to the loop that opened
        them. Handlers are copied as Beam ships them, by their pickled state.
        """
        return ActivationTools(copy.deepcopy(self.handlers), self.ledger_uri, self.lease_ms)

    async def call(self, call: ToolCall) -> ToolResult:
        """The call's result, from the ledger or from its handler (recorded first).

        Raises `UnknownToolError` for a name without a handler, `ToolCallError`
        once the handler failed, and `ToolError` when the ledger cannot be
        reached: the activation fails as `tool_error` and commits nothing.
        """
        handler = self.handlers.get(call.tool)
        if handler is None:
            known = ", ".join(sorted(self.handlers)) or "none"
            raise UnknownToolError(f"no handler for tool {call.tool!r} (configured: {known})")
        try:
            result = await call_once(self.ledger, handler, call, lease_ms=self.lease_ms)
        except StoreError as exc:
            raise ToolError(f"tool ledger: {describe_briefly(exc)}") from exc
        return result

    async def aclose(self) -> None:
        """Close every handler, then the ledger, even past a failure; the first one is raised."""
        await close_tools(self.handlers, self.ledger)
