"""Replays of slices of the bundled data, shared by the end-to-end tests of the triage app.

A module with its own name rather than `conftest`, so test files can import
its helpers without colliding with the other directories' conftest modules.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.triage.alerts import Alert, Answer, read_alerts, read_answers
from app.triage.data import DATA_DIR, START_MS
from app.triage.model import rules_llm
from app.triage.replay import ReplayResult, replay
from beam_agents import LlmRequest, LlmResponse
from beam_agents.memory.stores import open_store

SCENARIOS = ("svc-000", "svc-001", "svc-002", "svc-003")
"""Scripted services: approved, denied and unanswered P1s, a TTL expiry and a return."""
SCENARIO_HOURS = 4


@dataclass
class Replayed:
    """One replay, its store's rows and the slice it ran on."""

    result: ReplayResult
    rows: list[tuple[bytes, str, bytes, int, int]]
    alerts: list[Alert]
    uri: str

    def lifecycle(self, service: str, kind: str | None = None) -> list[dict[str, object]]:
        records = [json.loads(line) for line in self.result.lifecycle]
        return [
            r for r in records if r["service"] == service and (kind is None or r["kind"] == kind)
        ]

    def outputs(self, service: str) -> list[dict[str, object]]:
        records = [json.loads(line) for line in self.result.outputs]
        return [r for r in records if r["service"] == service]

    def intents(self, tool: str) -> list[dict[str, object]]:
        return [r for r in map(json.loads, self.result.intents) if r["tool"] == tool]


async def _provision(uri: str) -> None:
    async with open_store(uri) as store:
        await store.provision()


async def _dump(uri: str) -> list[tuple[bytes, str, bytes, int, int]]:
    async with open_store(uri) as store:
        rows = [(e, r.key, r.value, r.seq, r.updated_at_ms) async for e, r in store.scan()]
    return sorted(rows)


def slice_of(services: tuple[str, ...], hours: float) -> tuple[list[Alert], list[Answer]]:
    """The bundled alerts and answers of `services` in the first `hours` of event time."""
    end = START_MS + int(hours * 3_600_000)
    alerts = [
        a
        for a in read_alerts(DATA_DIR / "alerts.jsonl")
        if a.service in services and a.event_time_ms < end
    ]
    answers = [
        a
        for a in read_answers(DATA_DIR / "answers.jsonl")
        if a.service in services and a.event_time_ms < end
    ]
    return alerts, answers


ReplayFactory = Callable[[tuple[str, ...], float, str], Replayed]


@pytest.fixture(scope="module")
def replay_slice(tmp_path_factory: pytest.TempPathFactory) -> ReplayFactory:
    """Replay a slice into a fresh SQLite store; returns what it emitted and stored."""

    def run(services: tuple[str, ...], hours: float, name: str) -> Replayed:
        path: Path = tmp_path_factory.mktemp(name) / "longterm.sqlite"
        uri = f"sqlite+aiosqlite:///{path}"
        asyncio.run(_provision(uri))
        alerts, answers = slice_of(services, hours)
        result = replay(alerts, answers, longterm_uri=uri)
        return Replayed(result=result, rows=asyncio.run(_dump(uri)), alerts=alerts, uri=uri)

    return run


@dataclass(frozen=True)
class SlowRules:
    """The demo's rules model behind a wait, as a remote model answers: its calls park."""

    latency_s: float = 0.02

    def __call__(self) -> SlowRules:
        return self

    async def complete(self, request: LlmRequest) -> LlmResponse:
        await asyncio.sleep(self.latency_s)
        return await rules_llm.complete(request)

    async def aclose(self) -> None:
        """Rules hold nothing to release."""


slow_rules = SlowRules()
"""Named by the provider spec `py:tests.app.triage_replays:slow_rules`."""


class BrokenModel:
    """A model whose every call fails: each activation dead-letters (`model_error`)."""

    def __call__(self) -> BrokenModel:
        return self

    async def complete(self, request: LlmRequest) -> LlmResponse:
        raise ConnectionError("the model endpoint refused the connection")

    async def aclose(self) -> None:
        """Nothing to release."""


broken_model = BrokenModel()
"""Named by the provider spec `py:tests.app.triage_replays:broken_model`."""
