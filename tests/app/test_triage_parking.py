"""The triage replay gives the same files with calls parked as with every call in place."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from app.triage.replay import ReplayResult, replay
from app.triage.summary import count_rows, summarize
from tests.app.triage_replays import SCENARIO_HOURS, SCENARIOS, _dump, _provision, slice_of

pytestmark = pytest.mark.pipeline

SLOW_RULES = "py:tests.app.triage_replays:slow_rules"
LIFECYCLE_FIGURES = ("buffered", "lifecycle_by_kind", "cache_hits")
"""Summary figures parking adds to by design: the `parked` and `buffered`
records of a parked key, and the replays of a re-run's own earlier calls."""


def _replay(tmp_path: Path, name: str, inflight: int, model: str) -> tuple[dict[str, Any], float]:
    uri = f"sqlite+aiosqlite:///{tmp_path / name}.sqlite"
    asyncio.run(_provision(uri))
    alerts, answers = slice_of(SCENARIOS, SCENARIO_HOURS)
    started = time.perf_counter()
    result: ReplayResult = replay(
        alerts, answers, longterm_uri=uri, model_spec=model, max_inflight_calls=inflight
    )
    seconds = time.perf_counter() - started
    files = {
        "outputs.jsonl": result.outputs,
        "intents.jsonl": result.intents,
        "errors.jsonl": result.errors,
        "lifecycle.jsonl": result.lifecycle,
        "summary.json": summarize(result, asyncio.run(count_rows(uri))),
        "longterm rows": asyncio.run(_dump(uri)),
        "parks": result.counter("beam_agents.runtime/parks"),
    }
    return files, seconds


def test_the_demo_writes_the_same_files_with_the_default_and_with_one_call_in_flight(
    tmp_path: Path,
) -> None:
    serial, serial_s = _replay(tmp_path, "serial", 1, "rules")
    default, default_s = _replay(tmp_path, "default", 256, "rules")

    for name, content in serial.items():
        assert default[name] == content, name
    # The demo's rules answer without waiting: nothing parks, nothing costs more.
    assert default["parks"] == 0
    assert default_s < serial_s * 1.5 + 1.0


def test_a_model_that_waits_parks_and_the_triage_results_do_not_change(tmp_path: Path) -> None:
    serial, _ = _replay(tmp_path, "slow-serial", 1, SLOW_RULES)
    parked, _ = _replay(tmp_path, "slow-parked", 256, SLOW_RULES)

    assert parked["parks"] > 0
    for name in ("outputs.jsonl", "intents.jsonl", "errors.jsonl", "longterm rows"):
        assert parked[name] == serial[name], name
    figures = {k: v for k, v in serial["summary.json"].items() if k not in LIFECYCLE_FIGURES}
    assert {k: parked["summary.json"][k] for k in figures} == figures
