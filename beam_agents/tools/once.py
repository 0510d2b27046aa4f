"""One tool call, executed once, through the ledger: the step every executor shares.

`ExecuteIntents` runs it for each intent; an activation's own tool calls
run the same step, so a call is executed once whichever path sees its id
first. A recorded result is returned without calling anything. Otherwise
the id is claimed, the handler called (the id is its idempotency key), and
the result recorded. A live lease held elsewhere is waited out until its
holder records, or its lease lapses and this caller takes over. A handler
that raises releases the claim, so the next attempt, here or anywhere,
may run at once.
"""

from __future__ import annotations

import asyncio
from typing import Final

from beam_agents.errors import describe_briefly
from beam_agents.memory.stores.errors import StoreError
from beam_agents.tools.calls import ToolCall, ToolHandler, ToolResult, ToolStatus
from beam_agents.tools.errors import ToolCallError
from beam_agents.tools.ledger.base import Busy, Claimed, Recorded, ToolLedger

__all__ = ["call_once"]

_MAX_WAIT_STEP_MS: Final = 1000


async def call_once(
    ledger: ToolLedger,
    handler: ToolHandler,
    call: ToolCall,
    *,
    lease_ms: int,
    max_attempts: int = 1,
    backoff_s: float = 0.1,
) -> ToolResult:
    """The call's result, recorded earlier (`status="recorded"`) or by this call (`"executed"`).

    Raises `ToolCallError` (with `attempts`) once the handler failed
    `max_attempts` times, and the ledger's `StoreError`s as they are: a
    ledger outage is the caller's to retry, not the tool's failure.
    """
    attempts = 0
    while True:
        outcome = await ledger.claim(call.intent_id, lease_ms=lease_ms)
        if isinstance(outcome, Recorded):
            return _result(call, "recorded", outcome.result, attempts)
        if isinstance(outcome, Busy):
            await asyncio.sleep(min(outcome.retry_after_ms, _MAX_WAIT_STEP_MS) / 1000)
            continue
        attempts += 1
        try:
            result = await _run(ledger, handler, call, outcome)
        except StoreError:
            raise
        except Exception as exc:
            if attempts >= max_attempts:
                raise ToolCallError(describe_briefly(exc), attempts=attempts) from exc
            await asyncio.sleep(backoff_s * 2 ** (attempts - 1))
            continue
        return _result(call, "executed", result, attempts)


async def _run(ledger: ToolLedger, handler: ToolHandler, call: ToolCall, claim: Claimed) -> bytes:
    """Call the handler under the claim; record its result, or release the claim."""
    try:
        result = await handler(call)
        if type(result) is not bytes:
            raise ToolCallError(
                f"{call.tool}: a handler returns bytes, got {type(result).__name__}"
            )
    except BaseException:
        await ledger.release(claim)
        raise
    # False means a takeover after this lease lapsed recorded first: this
    # call ran anyway, and its result is what this run reports.
    await ledger.record(claim, result)
    return result


def _result(call: ToolCall, status: ToolStatus, result: bytes, attempts: int) -> ToolResult:
    return ToolResult(call.intent_id, call.tool, call.entity_key, status, result, attempts)
