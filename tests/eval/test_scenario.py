"""A log with approvals, TTL flushes, a tool call and a model error, scored against hand labels.

Every expected score below was worked out by hand from `tests/eval/logs.py`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from beam_agents.eval import Candidate, FieldMatch, TrajectoryMatch, UserScorer, run_eval
from beam_agents.eval.events import Event
from beam_agents.memory.stores import open_store
from tests.eval import agents
from tests.eval.logs import write_log


def _rehydrated(
    event: Event, output: Any, intents: Sequence[Mapping[str, Any]], label: Mapping[str, Any] | None
) -> bool | None:
    """Only the late alert applies: it must see the memory the TTL flushed, and no more."""
    if b"late routine" not in event.payload:
        return None
    return isinstance(output, dict) and output["rehydrated"] is True and output["seen"] == 1


SCORERS = [
    FieldMatch("priority"),
    TrajectoryMatch("EXACT"),
    TrajectoryMatch("IN_ORDER", "tool_calls"),
    UserScorer(_rehydrated, "rehydrated"),
]


@pytest.fixture(scope="module")
def evaluated(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    tmp_path = tmp_path_factory.mktemp("scenario")
    events, labels, recording = write_log(tmp_path)
    agents.MODEL.reset()
    result = run_eval(
        events,
        [Candidate("v1", agents.triage_v1, agents.CONFIG)],
        labels=labels,
        scorers=SCORERS,
        recording=recording,
        prices={"fake-1": (1.0, 2.0)},
        out_dir=tmp_path / "out",
    )
    rows = [json.loads(line) for line in result.results_path.read_text().splitlines()]
    return result.summary, rows


def test_each_event_gets_the_output_and_dead_letter_of_its_last_activation(
    evaluated: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    _, rows = evaluated
    by_id = {row["event_id"]: row for row in rows}

    assert [row["event_id"] for row in rows] == ["a1", "a2", "b1", "c1", "a3", "d1"]
    assert by_id["a1"]["output_json"]["priority"] == "high"
    assert by_id["a2"]["output_json"]["info"] == "account 7"  # the recorded tool result
    assert by_id["a2"]["tool_calls"] == [{"name": "lookup", "args": {"id": "7"}}]
    assert by_id["b1"]["output_json"]["approved"] is True  # resumed by the answer
    assert by_id["b1"]["intents"] == [{"tool": "page", "args": {"team": "oncall"}}]
    assert by_id["c1"]["dead_letter"]["reason"] == "model_error"
    assert by_id["c1"]["output"] is None
    assert by_id["a3"]["output_json"] == {
        "approved": None,
        "info": None,
        "priority": "low",
        "reason": "routine",
        "rehydrated": True,
        "seen": 1,
    }
    assert by_id["d1"]["dead_letter"]["reason"] == "suspension_timeout"
    assert agents.REAL_TOOL_CALLS == []
    assert asyncio.run(_production_rows()) == 0  # a3's flush went to the run's private store


async def _production_rows() -> int | None:
    assert agents.CONFIG.longterm_memory is not None
    async with open_store(agents.CONFIG.longterm_memory) as store:
        return await store.count_rows()


def test_outputs_and_trajectories_score_as_worked_out_by_hand(
    evaluated: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    summary, rows = evaluated
    scores = {row["event_id"]: row["scores"] for row in rows}

    assert [scores[e]["priority"] for e in ("a1", "a2", "b1", "c1", "a3", "d1")] == [
        1.0,
        1.0,
        1.0,
        0.0,
        0.0,
        0.0,
    ]
    assert [scores[e]["intents_exact"] for e in ("a1", "a2", "b1", "c1", "a3", "d1")] == [
        1.0,
        1.0,
        1.0,
        0.0,
        None,
        None,
    ]
    assert [scores[e]["tool_calls_in_order"] for e in ("a1", "a2")] == [1.0, 1.0]
    assert scores["a3"]["rehydrated"] == 1.0
    (candidate,) = summary["candidates"]
    metrics = candidate["metrics"]
    assert (metrics["priority"]["mean"], metrics["priority"]["n"]) == (0.5, 6)
    assert (metrics["intents_exact"]["mean"], metrics["intents_exact"]["n"]) == (0.75, 4)
    assert (metrics["tool_calls_in_order"]["mean"], metrics["tool_calls_in_order"]["n"]) == (1.0, 2)
    assert metrics["priority"]["low"] <= 0.5 <= metrics["priority"]["high"]
    assert candidate["dead_letters"] == {"model_error": 1, "suspension_timeout": 1}


def test_the_confusion_matrix_counts_expected_against_predicted(
    evaluated: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    summary, _ = evaluated

    assert summary["candidates"][0]["confusion"] == {
        "field": "priority",
        "labels": ["(none)", "high", "low"],
        # rows: expected (none), high, low; columns: predicted, same order
        "matrix": [[0, 0, 0], [0, 2, 1], [2, 0, 1]],
    }


def test_cost_is_tokens_priced_by_the_table(
    evaluated: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    summary, rows = evaluated
    (candidate,) = summary["candidates"]
    tokens_in = sum(row["tokens"]["input"] for row in rows)
    tokens_out = sum(row["tokens"]["output"] for row in rows)

    assert candidate["tokens"] == {"input": tokens_in, "output": tokens_out}
    assert tokens_in > 0
    assert candidate["cost_usd"] == pytest.approx((tokens_in * 1.0 + tokens_out * 2.0) / 1e6)


@pytest.mark.parametrize(
    ("tools", "stubs", "info", "reason"),
    [
        ("stub", {"lookup": b"stubbed"}, "stubbed", None),
        ("fail", {}, None, "tool_error"),
        ("stub", {}, None, "tool_error"),
    ],
)
def test_tool_calls_answer_from_the_mode_the_user_chose(
    tmp_path: Path, tools: str, stubs: dict[str, bytes], info: str | None, reason: str | None
) -> None:
    events, labels, recording = write_log(tmp_path)

    result = run_eval(
        events,
        [Candidate("v1", agents.triage_v1, agents.CONFIG)],
        labels=labels,
        scorers=[FieldMatch("priority")],
        recording=recording,
        tools=tools,
        stubs=stubs,
        out_dir=tmp_path / "out",
    )

    rows = {r["event_id"]: r for r in map(json.loads, result.results_path.read_text().splitlines())}
    a2 = rows["a2"]
    assert (a2["dead_letter"] or {}).get("reason") == reason
    assert (a2["output_json"] or {}).get("info") == info
    assert agents.REAL_TOOL_CALLS == []


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The summary of v1 against `paranoid`, which rates every alert high."""
    tmp_path = tmp_path_factory.mktemp("compared")
    events, labels, recording = write_log(tmp_path)
    result = run_eval(
        events,
        [
            Candidate("v1", agents.triage_v1, agents.CONFIG),
            Candidate("paranoid", agents.triage_paranoid, agents.CONFIG),
        ],
        labels=labels,
        scorers=SCORERS[:2],
        recording=recording,
        out_dir=tmp_path / "out",
    )
    return result.summary


def test_a_comparison_lists_the_events_decided_differently_and_the_paired_change(
    compared: dict[str, Any],
) -> None:
    (comparison,) = compared["comparisons"]
    assert (comparison["baseline"], comparison["candidate"]) == ("v1", "paranoid")
    # a2: 1 -> 0 and a3: 0 -> 1 on priority; a2 also pages now, which its label forbids.
    assert comparison["deltas"]["priority"]["delta"] == 0.0
    assert comparison["deltas"]["intents_exact"]["delta"] == -0.25
    differing = comparison["disagreements"]
    # a1 and b1 keep their priority but give another reason; c1 and d1 fail alike.
    assert [d["event_id"] for d in differing] == ["a1", "a2", "b1", "a3"]
    a2 = differing[1]
    assert a2["outputs"]["v1"]["priority"] == "low"
    assert a2["outputs"]["paranoid"]["reason"] == "pages for everything"
    assert a2["scores"] == {
        "v1": {"priority": 1.0, "intents_exact": 1.0},
        "paranoid": {"priority": 0.0, "intents_exact": 0.0},
    }
    assert a2["dead_letters"] == {"v1": None, "paranoid": None}


def test_a_changed_wording_is_a_difference_shown_but_not_a_changed_decision(
    compared: dict[str, Any],
) -> None:
    """The field the scorer compares decides (priority), with the intents and dead letters."""
    (comparison,) = compared["comparisons"]
    differing = {d["event_id"]: d for d in comparison["disagreements"]}

    assert compared["decision_fields"] == ["priority"]
    # a1 and b1 keep their priority and page as before: only the reason reads differently.
    assert differing["a1"]["differs"] == ["output.reason"]
    assert differing["b1"]["differs"] == ["output.reason"]
    assert differing["a2"]["differs"] == ["intents", "output.priority", "output.reason"]
    assert differing["a3"]["differs"] == ["intents", "output.priority", "output.reason"]
    assert {k: d["decision_changed"] for k, d in differing.items()} == {
        "a1": False,
        "a2": True,
        "b1": False,
        "a3": True,
    }
    assert comparison["decisions_changed"] == 2
