"""One tool call, executed once, through the ledger: the step every executor shares.

`ExecuteIntents` runs it for each intent; an activation's own tool calls
run the same step, so a call is executed once whichever path sees its id
first. A recorded result is returned without calling anything. Otherwise
the id is claimed, the handler called (the id is its idempotency key), and
the result recorded. A live lease held elsewhere is waited out until its
holder records, or its lease lapses and this caller takes over. A handler
that raises, or a result the ledger refuses (too large), releases the
claim, so the next attempt, here or anywhere, may run at once.

Every caller of one id reports the result the ledger keeps. A holder that
outlived its lease and finds its record refused has run the handler, but
another holder's result stands: it reads that one back and reports it,
never its own (it records its own only if the id turns out free again).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

from beam_agents.errors import describe_briefly
from beam_agents.memory.stores.errors import StoreError
from beam_agents.tools.calls import ToolCall, ToolHandler, ToolResult, ToolStatus
from beam_agents.tools.errors import ToolCallError, ToolResultTooLargeError
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
    `max_attempts` times or its result was too large for the ledger, and the
    ledger's `StoreError`s as they are: a ledger outage is the caller's to
    retry, not the tool's failure.
    """
    attempts = 0
    unkept: bytes | None = None
    """A result this call produced whose record was refused: never reported as it is."""
    while True:
        outcome = await ledger.claim(call.intent_id, lease_ms=lease_ms)
        if isinstance(outcome, Recorded):
            return _result(call, "recorded", outcome.result, attempts)
        if isinstance(outcome, Busy):
            await asyncio.sleep(min(outcome.retry_after_ms, _MAX_WAIT_STEP_MS) / 1000)
            continue
        if unkept is not None:
            # The id is free again, and this call's result is in hand: record it
            # rather than run the handler a further time.
            if await _record(ledger, call, outcome, unkept, attempts):
                return _result(call, "executed", unkept, attempts)
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
        if await _record(ledger, call, outcome, result, attempts):
            return _result(call, "executed", result, attempts)
        # A takeover after this lease lapsed holds the id: its result, once
        # recorded, is the one that stands, so ask the ledger for it.
        unkept = result


async def _run(ledger: ToolLedger, handler: ToolHandler, call: ToolCall, claim: Claimed) -> bytes:
    """Call the handler under the claim; its result, or the claim released."""
    try:
        result = await handler(call)
        if type(result) is not bytes:
            raise ToolCallError(
                f"{call.tool}: a handler returns bytes, got {type(result).__name__}"
            )
    except GeneratorExit:
        # Closed, not cancelled: a call the runtime abandoned, finalised later by
        # the garbage collector, when nothing may be awaited and its ledger may
        # be closed. The claim's lease lapses and the next attempt takes over.
        raise
    except BaseException:
        await ledger.release(claim)
        raise
    return result


async def _record(
    ledger: ToolLedger, call: ToolCall, claim: Claimed, result: bytes, attempts: int
) -> bool:
    """Record under the claim: whether it stands. A refused or failed record releases it.

    A result too large for any ledger fails the call at once (running the
    handler again would only produce another); an outage is raised as it is,
    after a best-effort release so the id is not held until the lease ends.
    """
    try:
        return await ledger.record(claim, result)
    except ToolResultTooLargeError as exc:
        await _release_quietly(ledger, claim)
        raise ToolCallError(f"{call.tool}: {exc}", attempts=attempts) from exc
    except BaseException:
        await _release_quietly(ledger, claim)
        raise


async def _release_quietly(ledger: ToolLedger, claim: Claimed) -> None:
    """Release after a failed record; a release that fails too leaves the lease to lapse."""
    with contextlib.suppress(StoreError):
        await ledger.release(claim)


def _result(call: ToolCall, status: ToolStatus, result: bytes, attempts: int) -> ToolResult:
    return ToolResult(call.intent_id, call.tool, call.entity_key, status, result, attempts)
