"""A long-term store that was never provisioned stops the pipeline at worker setup."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from beam_agents import AgentConfig, RunAgent
from beam_agents.errors import ConfigurationError
from beam_agents.memory.stores.errors import InvalidStoreURIError, StoreNotProvisionedError
from beam_agents.memory.stores.preflight import StoreNotReadyError
from beam_agents.model import FakeLLM
from beam_agents.runtime._dofn import AgentDoFn
from tests.runtime import agents

CLOSED_LOOPS: list[asyncio.AbstractEventLoop] = []


class _ConnectionHoldingProvider:
    async def complete(self, request: object) -> object:
        raise AssertionError("never called: setup fails first")

    async def aclose(self) -> None:
        CLOSED_LOOPS.append(asyncio.get_running_loop())


def holding_factory() -> _ConnectionHoldingProvider:
    return _ConnectionHoldingProvider()


def test_a_failed_setup_closes_the_provider_and_the_loop_it_built(tmp_path: Path) -> None:
    CLOSED_LOOPS.clear()
    config = AgentConfig(
        provider_factory=holding_factory,
        longterm_memory=f"sqlite+aiosqlite:///{tmp_path / 'missing.sqlite'}",
    )
    dofn = AgentDoFn(agents.remember, config, token="t")

    with pytest.raises(StoreNotProvisionedError, match="beam-agents provision"):
        dofn.setup()

    (loop,) = CLOSED_LOOPS
    assert loop.is_closed()
    assert not (tmp_path / "missing.sqlite").exists()


def test_an_unprovisioned_store_fails_a_local_pipeline_as_it_is_built(
    tmp_path: Path,
) -> None:
    """One error naming the fix before any bundle runs; no empty SQLite file is left behind."""
    database = tmp_path / "longterm.sqlite"
    config = AgentConfig(
        provider_factory=FakeLLM(), longterm_memory=f"sqlite+aiosqlite:///{database}"
    )
    pipeline = beam.Pipeline(options=PipelineOptions(streaming=True))
    events = pipeline | beam.Create([("k", b"one"), ("k", b"two")])

    with pytest.raises(StoreNotReadyError, match="beam-agents provision") as failure:
        _ = events | RunAgent(agents.remember, config)

    assert isinstance(failure.value, ConfigurationError)
    assert "Traceback" not in str(failure.value.code)
    assert not database.exists()


def test_a_store_whose_client_is_missing_still_closes_the_provider_and_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`open_store` itself fails (the Redis client is not installed) after the provider exists."""
    CLOSED_LOOPS.clear()
    monkeypatch.delitem(sys.modules, "beam_agents.memory.stores.redis", raising=False)
    for module in ("redis", "redis.asyncio", "redis.exceptions"):
        monkeypatch.setitem(sys.modules, module, None)
    config = AgentConfig(provider_factory=holding_factory, longterm_memory="redis://127.0.0.1:9/0")
    dofn = AgentDoFn(agents.remember, config, token="t")

    with pytest.raises(InvalidStoreURIError, match="memory-stores"):
        dofn.setup()

    (loop,) = CLOSED_LOOPS
    assert loop.is_closed()
