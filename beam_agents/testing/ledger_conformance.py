"""The contract every `ToolLedger` must keep, as a pytest suite you can run on yours.

Every ledger shipped with beam-agents runs this suite against a real server
or the official emulator; a ledger you write yourself can run it too::

    import pytest
    from beam_agents.testing.ledger_conformance import LedgerConformance, LedgerTarget

    @pytest.fixture
    def ledger_target(tmp_path):
        async def open_ledger():
            return MyToolLedger(...)    # a NEW instance over the same rows
        return LedgerTarget(open_ledger=open_ledger)

    class TestMyLedger(LedgerConformance):
        pass

`ledger_target` must give each test an empty ledger. Leases in this suite
are real: the expiry tests sleep past `LedgerTarget.lease_ms` on the
ledger's own clock (the server's, for Redis). Each test's docstring is the
one contract it proves; tests run on plain pytest, each on its own loop.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from beam_agents.tools.errors import InvalidIntentIdError, ToolResultTooLargeError
from beam_agents.tools.ledger.base import MAX_RESULT_BYTES, Busy, Claimed, Recorded, ToolLedger

__all__ = ["LedgerConformance", "LedgerTarget", "execute_once"]

Body = Callable[..., Awaitable[None]]


@dataclass(frozen=True)
class LedgerTarget:
    """How the suite reaches one backend for one test."""

    open_ledger: Callable[[], Awaitable[ToolLedger]]
    """Open a new ledger instance; every instance of one test sees the same claims."""
    lease_ms: int = 400
    """The short lease the expiry tests wait out (keep it well above a round trip)."""
    timeout_s: float = 30.0
    """Upper bound on one test, so a hung server fails the test instead of the run."""


def _contract(body: Body) -> Callable[..., None]:
    """Turn `async def test_x(self, ledger, target)` into a sync pytest test."""

    def test(self: object, ledger_target: LedgerTarget, **params: Any) -> None:
        async def main() -> None:
            async with await ledger_target.open_ledger() as ledger:
                await asyncio.wait_for(
                    body(self, ledger, ledger_target, **params), ledger_target.timeout_s
                )

        asyncio.run(main())

    signature = inspect.signature(body)
    kept = [p for name, p in signature.parameters.items() if name not in ("ledger", "target")]
    target_param = inspect.Parameter("ledger_target", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    test.__name__ = body.__name__
    test.__qualname__ = body.__qualname__
    test.__doc__ = body.__doc__
    test.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[kept[0], target_param, *kept[1:]]
    )
    return test


def _id() -> str:
    return str(uuid.uuid4())


async def execute_once(
    ledger: ToolLedger, intent_id: str, run: Callable[[], Awaitable[bytes]], *, lease_ms: int
) -> bytes:
    """Claim, run, record; or return the recorded result; or wait out a live lease.

    The loop every executor of intents runs, here so the suite can race it.
    """
    while True:
        outcome = await ledger.claim(intent_id, lease_ms=lease_ms)
        if isinstance(outcome, Recorded):
            return outcome.result
        if isinstance(outcome, Busy):
            await asyncio.sleep(min(outcome.retry_after_ms, 50) / 1000)
            continue
        result = await run()
        await ledger.record(outcome, result)
        return result


async def _claimed(ledger: ToolLedger, intent_id: str, lease_ms: int) -> Claimed:
    outcome = await ledger.claim(intent_id, lease_ms=lease_ms)
    assert isinstance(outcome, Claimed), outcome
    return outcome


class LedgerConformance:
    """The ledger contract. Subclass it in a test module that defines `ledger_target`."""

    @_contract
    async def test_first_claim_is_granted(self, ledger: ToolLedger, target: LedgerTarget) -> None:
        """An id never seen before is claimed by its first caller."""
        intent_id = _id()
        outcome = await _claimed(ledger, intent_id, 60_000)
        assert outcome.intent_id == intent_id
        assert outcome.token

    @_contract
    async def test_racing_claimers_exactly_one_wins(
        self, ledger: ToolLedger, target: LedgerTarget
    ) -> None:
        """Of concurrent claims from several ledger instances, exactly one is granted."""
        intent_id = _id()
        others = [await target.open_ledger() for _ in range(3)]
        try:
            claims = [
                instance.claim(intent_id, lease_ms=60_000)
                for instance in (ledger, *others)
                for _ in range(4)
            ]
            outcomes = await asyncio.gather(*claims)
        finally:
            for other in others:
                await other.close()
        assert sum(isinstance(o, Claimed) for o in outcomes) == 1
        busy = [o for o in outcomes if not isinstance(o, Claimed)]
        assert all(isinstance(o, Busy) and 0 < o.retry_after_ms <= 61_000 for o in busy), busy

    @_contract
    async def test_racing_executors_execute_once(
        self, ledger: ToolLedger, target: LedgerTarget
    ) -> None:
        """Executors racing on one id run the tool once and all return its result."""
        intent_id = _id()
        runs: list[int] = []

        async def run() -> bytes:
            runs.append(1)
            await asyncio.sleep(0.05)
            return f"ticket-{len(runs)}".encode()

        others = [await target.open_ledger() for _ in range(3)]
        try:
            results = await asyncio.gather(
                *(
                    execute_once(instance, intent_id, run, lease_ms=60_000)
                    for instance in (ledger, *others)
                    for _ in range(3)
                )
            )
        finally:
            for other in others:
                await other.close()
        assert len(runs) == 1
        assert set(results) == {b"ticket-1"}

    @_contract
    async def test_recorded_result_is_returned_to_every_later_caller(
        self, ledger: ToolLedger, target: LedgerTarget
    ) -> None:
        """A recorded result is final: later claims, from any instance, return it byte for byte."""
        results = {_id(): b"", _id(): bytes(range(256)), _id(): b"R\x00C" * 100}
        for intent_id, result in results.items():
            assert await ledger.record(await _claimed(ledger, intent_id, 60_000), result)
        async with await target.open_ledger() as later:
            for intent_id, result in results.items():
                for instance in (ledger, later):
                    assert await instance.claim(intent_id) == Recorded(intent_id, result)

    @_contract
    async def test_live_lease_keeps_others_out(
        self, ledger: ToolLedger, target: LedgerTarget
    ) -> None:
        """While a lease is live, other claims are Busy for at most the lease's length."""
        intent_id = _id()
        await _claimed(ledger, intent_id, 60_000)
        outcome = await ledger.claim(intent_id, lease_ms=60_000)
        assert isinstance(outcome, Busy)
        assert outcome.intent_id == intent_id
        assert 0 < outcome.retry_after_ms <= 60_000

    @_contract
    async def test_expired_lease_is_taken_over(
        self, ledger: ToolLedger, target: LedgerTarget
    ) -> None:
        """A claim whose lease ran out (its holder died) is granted to the next caller."""
        intent_id = _id()
        first = await _claimed(ledger, intent_id, target.lease_ms)
        await asyncio.sleep(target.lease_ms * 1.5 / 1000)
        second = await _claimed(ledger, intent_id, 60_000)
        assert second.token != first.token

    @_contract
    async def test_expired_holder_cannot_record_over_new_holder(
        self, ledger: ToolLedger, target: LedgerTarget
    ) -> None:
        """After a takeover the old holder's record is refused and the new holder's stands."""
        intent_id = _id()
        stale = await _claimed(ledger, intent_id, target.lease_ms)
        await asyncio.sleep(target.lease_ms * 1.5 / 1000)
        async with await target.open_ledger() as other:
            fresh = await _claimed(other, intent_id, 60_000)
            assert not await ledger.record(stale, b"stale")
            assert await other.record(fresh, b"fresh")
            assert not await ledger.record(stale, b"stale")
        assert await ledger.claim(intent_id) == Recorded(intent_id, b"fresh")

    @_contract
    async def test_record_is_refused_once_recorded(
        self, ledger: ToolLedger, target: LedgerTarget
    ) -> None:
        """A second record, even by the holder that recorded, leaves the first result."""
        intent_id = _id()
        claim = await _claimed(ledger, intent_id, 60_000)
        assert await ledger.record(claim, b"first")
        assert not await ledger.record(claim, b"second")
        assert await ledger.claim(intent_id) == Recorded(intent_id, b"first")

    @_contract
    async def test_released_claim_can_be_claimed_at_once(
        self, ledger: ToolLedger, target: LedgerTarget
    ) -> None:
        """A holder that failed releases its claim, and the next caller is granted it at once."""
        intent_id = _id()
        await ledger.release(await _claimed(ledger, intent_id, 60_000))
        await _claimed(ledger, intent_id, 60_000)

    @_contract
    async def test_stale_release_leaves_the_new_claim(
        self, ledger: ToolLedger, target: LedgerTarget
    ) -> None:
        """A release by a holder whose lease was taken over does not free the new claim."""
        intent_id = _id()
        stale = await _claimed(ledger, intent_id, target.lease_ms)
        await asyncio.sleep(target.lease_ms * 1.5 / 1000)
        fresh = await _claimed(ledger, intent_id, 60_000)
        await ledger.release(stale)
        assert isinstance(await ledger.claim(intent_id, lease_ms=60_000), Busy)
        assert await ledger.record(fresh, b"done")

    @_contract
    async def test_release_after_record_keeps_the_result(
        self, ledger: ToolLedger, target: LedgerTarget
    ) -> None:
        """Releasing a claim that recorded is a no-op: the result stays."""
        intent_id = _id()
        claim = await _claimed(ledger, intent_id, 60_000)
        assert await ledger.record(claim, b"kept")
        await ledger.release(claim)
        assert await ledger.claim(intent_id) == Recorded(intent_id, b"kept")

    @_contract
    async def test_ids_are_independent(self, ledger: ToolLedger, target: LedgerTarget) -> None:
        """Claims and results of one id never affect another, even ids one character apart."""
        first = _id()
        second = first[:-1] + ("0" if first[-1] != "0" else "1")
        claim = await _claimed(ledger, first, 60_000)
        assert await ledger.record(claim, b"one")
        await _claimed(ledger, second, 60_000)
        assert await ledger.claim(first) == Recorded(first, b"one")

    @pytest.mark.parametrize(
        "bad",
        [
            "not-a-uuid",
            "",
            # Fixed values: a suite collected by several workers must collect the same ids.
            "6F1C2B9E-3D4A-4E5B-8C7D-9A0B1C2D3E4F",
            "{6f1c2b9e-3d4a-4e5b-8c7d-9a0b1c2d3e4f}",
            "6f1c2b9e-3d4a-4e5b-8c7d-9a0b1c2d3e4f\n",
            b"00000000-0000-0000-0000-000000000000",
            None,
        ],
    )
    @_contract
    async def test_invalid_intent_id_is_refused(
        self, ledger: ToolLedger, target: LedgerTarget, bad: object
    ) -> None:
        """Anything but a canonical lowercase UUID string is refused before any I/O."""
        with pytest.raises(InvalidIntentIdError):
            await ledger.claim(bad)  # type: ignore[arg-type]

    @_contract
    async def test_oversized_result_is_refused_and_its_claim_released(
        self, ledger: ToolLedger, target: LedgerTarget
    ) -> None:
        """A result over MAX_RESULT_BYTES is refused naming its size, and the id is free at once."""
        intent_id = _id()
        claim = await _claimed(ledger, intent_id, 60_000)
        with pytest.raises(ToolResultTooLargeError) as refused:
            await ledger.record(claim, b"x" * (MAX_RESULT_BYTES + 1))
        assert f"{MAX_RESULT_BYTES + 1} bytes" in str(refused.value).replace(",", "")
        async with await target.open_ledger() as other:
            retry = await _claimed(other, intent_id, 60_000)
            assert not await ledger.record(claim, b"x")
            assert await other.record(retry, b"x" * MAX_RESULT_BYTES)
        assert await ledger.claim(intent_id) == Recorded(intent_id, b"x" * MAX_RESULT_BYTES)
