"""Lifecycle hooks are optional: what a user wrote with only the required methods runs.

A provider is any object with `async complete(request)`; a tool handler any
async callable taking a `ToolCall`; a compactor anything with
`compact(memory)`; a store or a ledger needs no `close` when it holds no
connections. `aclose`/`close` is awaited when present, never required.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence

import pytest

from beam_agents import AgentConfig, LlmRequest, LlmResponse
from beam_agents.memory import Memory, SummarizeCompactor
from beam_agents.memory.stores import InMemoryMemoryStore
from beam_agents.memory.stores.base import MemoryRecord, MemoryStore
from beam_agents.model.provider import check_provider, close_provider
from beam_agents.proto.beam_agents_pb2 import ToolIntent
from beam_agents.runtime._dofn import AgentDoFn
from beam_agents.testing.streaming import Script, run_script
from beam_agents.tools import ToolCall
from beam_agents.tools.executor import IntentExecutor
from beam_agents.tools.ledger.base import Claimed, ClaimOutcome, ToolLedger
from beam_agents.tools.ledger.factory import open_ledger
from tests.runtime import agents
from tests.tools import agents as tool_agents

pytestmark = pytest.mark.pipeline

RUNTIME = "beam_agents.runtime"


class CompleteOnly:
    """A user's two-line provider: `complete`, nothing else. It waits, so calls park."""

    async def complete(self, request: LlmRequest) -> LlmResponse:
        await asyncio.sleep(0.02)
        return LlmResponse(b"S")


def complete_only() -> CompleteOnly:
    return CompleteOnly()


class CallOnly:
    """A user's tool handler: an async callable, no `aclose`."""

    async def __call__(self, call: ToolCall) -> bytes:
        return f"ticket {call.intent_id}".encode()


class CompactOnly:
    """A user's tier-1 compactor: `compact`, nothing else."""

    def compact(self, memory: Memory) -> None:
        for key in memory.keys()[:-1]:
            memory.delete(key)


def _events(keys: int, per_key: int) -> Script:
    script = Script()
    for i in range(keys * per_key):
        t = 1_000 * (i + 1)
        script.events((f"k{i % keys}", b"event-%02d" % i, t)).watermark(t + 1)
    return script


def test_a_provider_with_only_complete_runs_in_a_pipeline_and_parks() -> None:
    run = run_script(agents.ask_model, AgentConfig(provider_factory=complete_only), _events(4, 2))

    assert sorted(run.outputs) == sorted((f"k{i % 4}".encode(), b"S") for i in range(8))
    assert run.errors == []
    assert run.counter(RUNTIME, "parks") > 0  # the call loop builds it too


def test_a_provider_with_only_complete_serves_the_summarizer() -> None:
    summarizer = SummarizeCompactor(
        build_request=agents.summary_request,
        extract_summary=agents.summary_of,
        source_keys=("log",),
        keep_recent=2,
        trigger_bytes=60,
    )
    config = AgentConfig(provider_factory=complete_only, summarizer=summarizer)

    run = run_script(agents.log_events, config, _events(1, 8))

    assert run.errors == []
    assert [o for _, o in run.outputs][-2:] == [b"7:7:-", b"8:3:S"]
    assert run.counter(RUNTIME, "summarizations") == 1


def test_a_tool_handler_without_aclose_runs_and_closes_in_a_pipeline() -> None:
    config = AgentConfig(
        tools={"open_ticket": CallOnly()}, tool_ledger=f"memory://bare-{uuid.uuid4().hex}"
    )

    run = run_script(tool_agents.ticket_by_call, config, _events(2, 2))

    assert run.errors == []
    assert len(run.outputs) == 4
    assert all(output.startswith(b"ticket ") for _, output in run.outputs)


def test_a_compactor_with_only_compact_runs_in_a_pipeline() -> None:
    config = AgentConfig(compactor=CompactOnly())

    run = run_script(agents.remember, config, _events(2, 2))

    assert run.errors == []
    assert len(run.outputs) == 4


def test_teardown_of_a_provider_without_aclose_closes_the_rest() -> None:
    dofn = AgentDoFn(agents.remember, AgentConfig(provider_factory=complete_only), token="t")
    dofn.setup()

    dofn.teardown()  # nothing to await for the provider; the loop still closes


def test_close_provider_awaits_aclose_only_when_there_is_one() -> None:
    closed: list[str] = []

    class Closing(CompleteOnly):
        async def aclose(self) -> None:
            closed.append("closed")

    asyncio.run(close_provider(CompleteOnly()))
    asyncio.run(close_provider(Closing()))

    assert closed == ["closed"]


def test_a_provider_is_refused_only_without_complete() -> None:
    from beam_agents.errors import ConfigurationError

    provider = CompleteOnly()
    assert check_provider(provider) is provider

    class NoComplete:
        async def aclose(self) -> None:
            return None

    with pytest.raises(ConfigurationError, match=r"without complete\(\)"):
        check_provider(NoComplete())

    class BrokenClose(CompleteOnly):
        aclose = 3

    with pytest.raises(ConfigurationError, match="aclose is an async method"):
        check_provider(BrokenClose())


def test_the_intent_executor_closes_handlers_without_aclose() -> None:
    """Handlers given to the executor as they are: the ones without `aclose` are skipped."""

    async def scenario() -> bytes:
        ledger = open_ledger(f"memory://executor-{uuid.uuid4().hex}")
        executor = IntentExecutor({"open_ticket": CallOnly()}, ledger, lease_ms=10_000)
        intent = ToolIntent(
            intent_id=str(uuid.UUID(int=7)), tool="open_ticket", args_json=b"{}", entity_key=b"k"
        )
        try:
            result = await executor.execute(intent)
        finally:
            await executor.aclose()
        return getattr(result, "result", b"")

    assert asyncio.run(scenario()).startswith(b"ticket ")


class _DelegatingStore(MemoryStore):
    """A user's store with the abstract methods only, no `close`."""

    def __init__(self) -> None:
        self._inner = InMemoryMemoryStore()

    async def _load(self, entity_key: bytes, key: str) -> MemoryRecord | None:
        return await self._inner.load(entity_key, key)

    async def _search(self, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        return await self._inner.search(entity_key, prefix, limit)

    async def _upsert_many(self, entity_key: bytes, records: Sequence[MemoryRecord]) -> list[bool]:
        return await self._inner.upsert_many(entity_key, records)

    def scan(self) -> AsyncIterator[tuple[bytes, MemoryRecord]]:
        return self._inner.scan()


def test_a_memory_store_without_close_is_usable_and_closes() -> None:
    async def scenario() -> MemoryRecord | None:
        async with _DelegatingStore() as store:
            record = MemoryRecord(key="a", value=b"v", seq=1, updated_at_ms=5)
            await store.upsert_many(b"k", [record])
            return await store.load(b"k", "a")

    found = asyncio.run(scenario())

    assert found is not None
    assert found.value == b"v"


class _DelegatingLedger(ToolLedger):
    """A user's ledger with the abstract methods only, no `close`."""

    def __init__(self, inner: ToolLedger) -> None:
        super().__init__()
        self._inner = inner

    async def _claim(self, intent_id: str, token: str, lease_ms: int) -> ClaimOutcome:
        return await self._inner._claim(intent_id, token, lease_ms)

    async def _record(self, claim: Claimed, result: bytes) -> bool:
        return await self._inner._record(claim, result)

    async def _release(self, claim: Claimed) -> None:
        await self._inner._release(claim)


def test_a_tool_ledger_without_close_is_usable_and_closes() -> None:
    async def scenario() -> bytes:
        inner = open_ledger(f"memory://ledger-{uuid.uuid4().hex}")
        async with _DelegatingLedger(inner) as ledger:
            executor = IntentExecutor({"open_ticket": CallOnly()}, ledger, lease_ms=10_000)
            intent = ToolIntent(
                intent_id=str(uuid.UUID(int=9)),
                tool="open_ticket",
                args_json=b"{}",
                entity_key=b"k",
            )
            result = await executor.execute(intent)
        await inner.close()
        return getattr(result, "result", b"")

    assert asyncio.run(scenario()).startswith(b"ticket ")
