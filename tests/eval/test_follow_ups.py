"""An evaluation replays follow-ups (wakes) in event time, from the recording, in their event's row.

Replayed twice: first with a live (fake) model, recording every answer,
then with a provider that fails if it is ever built, so every answer of the
second run, a wake's included, can only have come from the recording.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from beam_agents.cli import main
from beam_agents.eval import Candidate, run_eval
from beam_agents.eval.recording import unload_recording
from tests.eval import rechecks
from tests.eval.logs import write_jsonl
from tests.runtime.follow_up_agents import command, follow_up


@pytest.fixture(autouse=True)
def fresh_model() -> None:
    rechecks.MODEL.reset()
    rechecks.PROVIDERS_BUILT.clear()


def _event(key: str, time_ms: int, event_id: str, **fields: Any) -> dict[str, Any]:
    return {"key": key, "payload": command(**fields).decode(), "time_ms": time_ms, "id": event_id}


def _wake(
    name: str, payload: str, *, after_ms: int | None = None, at_ms: int | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "payload": payload}
    spec.update({"after_ms": after_ms} if after_ms is not None else {"at_ms": at_ms})
    return spec


FOLLOW_UP_LOG = [
    _event("k1", 1_000_000, "k1-a", schedule=[_wake("soon", "ask soon", after_ms=300_000)]),
    _event("k1", 1_400_000, "k1-b"),
    _event("k2", 1_000_000, "k2-a", schedule=[_wake("x", "ask first", after_ms=600_000)]),
    # Replaces k2-a's wake: the one that fires is this event's.
    _event("k2", 1_200_000, "k2-b", schedule=[_wake("x", "ask second", after_ms=120_000)]),
    _event(
        "k3",
        1_000_000,
        "k3-a",
        schedule=[
            _wake("explode", "ask", after_ms=60_000),  # its model call fails
            _wake("gone", "ask gone", at_ms=1_500_000),
        ],
    ),
    _event("k3", 1_200_000, "k3-b", cancel=["gone"]),
]


def _eval(
    directory: Path, candidate: Candidate, out: str, **options: Any
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    result = run_eval(
        directory / "events.jsonl",
        [candidate],
        recording=directory / "recording.jsonl",
        out_dir=directory / out,
        **options,
    )
    rows = [json.loads(line) for line in result.results_path.read_text().splitlines()]
    return rows, result.summary


def _without_recorded(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows as they would be had every call been live: the one field a replay may change."""
    return [
        {
            **{k: v for k, v in row.items() if k != "recorded"},
            "follow_ups": [
                {k: v for k, v in wake.items() if k != "recorded"} for wake in row["follow_ups"]
            ],
        }
        for row in rows
    ]


def test_follow_ups_fire_at_their_due_time_and_replay_from_the_recording_to_the_same_rows(
    tmp_path: Path,
) -> None:
    write_jsonl(tmp_path / "events.jsonl", FOLLOW_UP_LOG)
    recorded, summary = _eval(tmp_path, Candidate("v1", follow_up, rechecks.CONFIG), "first")
    asked = rechecks.MODEL.call_count()
    unload_recording(str(tmp_path / "recording.jsonl"))  # read back, as a new process would
    rechecks.MODEL.reset()

    replayed, replay_summary = _eval(
        tmp_path, Candidate("v1", follow_up, rechecks.REPLAY_CONFIG), "replay"
    )

    rows = {row["event_id"]: row for row in recorded}
    (soon,) = rows["k1-a"]["follow_ups"]
    assert (soon["name"], soon["due_ms"], soon["model_calls"]) == ("soon", 1_300_000, 1)
    assert soon["output"].startswith(
        'woke soon payload=ask soon due=1300000 now=1300000 seq=2 model={"escalate": false}'
    )
    assert rows["k1-b"]["output"].startswith("event {} seq=3 ")  # after the wake, in event time
    assert rows["k2-a"]["follow_ups"] == rows["k2-a"]["follow_ups_not_run"] == []
    (second,) = rows["k2-b"]["follow_ups"]
    assert second["output"].startswith("woke x payload=ask second due=1320000 now=1320000 seq=3")
    (failed,) = rows["k3-a"]["follow_ups"]
    assert (failed["name"], failed["output"]) == ("explode", None)
    assert failed["dead_letter"]["reason"] == "model_error"
    assert rows["k3-a"]["follow_ups_not_run"] == rows["k3-b"]["follow_ups"] == []  # cancelled
    assert asked == 3
    assert summary["candidates"][0]["follow_ups"]["ran"] == 3
    assert summary["candidates"][0]["follow_ups"]["not_run"] == 0
    assert summary["candidates"][0]["dead_letters"] == {"model_error": 1}

    assert _without_recorded(replayed) == _without_recorded(recorded)
    assert rechecks.PROVIDERS_BUILT == []
    assert rechecks.MODEL.call_count() == 0
    (candidate,) = replay_summary["candidates"]
    assert candidate["model_calls"] == candidate["recorded"] == 3
    assert candidate["follow_ups"] == summary["candidates"][0]["follow_ups"]


LATE_LOG = [_event("k", 1_000_000, "k-a", schedule=[_wake("late", "ask late", after_ms=7_200_000)])]


def test_a_follow_up_due_after_the_replay_ends_is_listed_not_run_and_a_longer_drain_runs_it(
    tmp_path: Path,
) -> None:
    """The replay ends a TTL (10 minutes) and a step after the last event's step: 1,680,000 ms."""
    write_jsonl(tmp_path / "events.jsonl", LATE_LOG)
    candidate = Candidate("v1", follow_up, rechecks.CONFIG)

    (row,), summary = _eval(tmp_path, candidate, "default")
    (longer,), _ = _eval(tmp_path, candidate, "longer", drain_ms=7_200_000)

    assert row["follow_ups"] == []
    assert row["follow_ups_not_run"] == [{"name": "late", "due_ms": 8_200_000}]
    (block,) = summary["candidates"]
    assert block["follow_ups"] == {
        "ran": 0,
        "not_run": 1,
        "replay_end_ms": 1_680_000,
        "drain_ms": 660_000,
    }
    assert block["dead_letters"] == {}
    assert block["model_calls"] == 0
    (late,) = longer["follow_ups"]
    assert late["output"].startswith("woke late payload=ask late due=8200000 now=8200000 seq=2")
    assert longer["follow_ups_not_run"] == []


def test_a_processing_time_follow_up_the_replays_clock_never_reaches_is_listed_not_run(
    tmp_path: Path,
) -> None:
    """One due 5 minutes after the commit runs; one due 2 hours after it is never reached."""
    soon = {**_wake("soon", "ask soon", after_ms=300_000), "processing_time": True}
    late = {**_wake("late", "ask late", after_ms=7_200_000), "processing_time": True}
    write_jsonl(
        tmp_path / "events.jsonl",
        [
            _event("k", 1_000_000, "k-a", schedule=[soon]),
            _event("j", 1_000_000, "j-a", schedule=[late]),
        ],
    )

    rows, summary = _eval(tmp_path, Candidate("v1", follow_up, rechecks.CONFIG), "out")

    ran, never = rows
    assert [w["name"] for w in ran["follow_ups"]] == ["soon"]
    assert ran["follow_ups_not_run"] == never["follow_ups"] == []
    assert never["follow_ups_not_run"] == [{"name": "late", "due_ms": None}]
    assert summary["candidates"][0]["follow_ups"]["not_run"] == 1


def test_a_chain_of_follow_ups_that_never_ends_stops_at_the_replays_end(tmp_path: Path) -> None:
    """Each beat schedules the next: those due by the end run, the first one after is listed."""
    write_jsonl(
        tmp_path / "events.jsonl",
        [{"key": "k", "payload": "start", "time_ms": 1_000_000, "id": "k-a"}],
    )

    (row,), _ = _eval(tmp_path, Candidate("v1", rechecks.heartbeat, rechecks.CONFIG), "out")

    assert [(w["name"], w["output"]) for w in row["follow_ups"]] == [("beat", "beat due=1600000")]
    assert row["follow_ups_not_run"] == [{"name": "beat", "due_ms": 2_200_000}]


RECHECK_LOG = [
    {"key": "disk", "payload": '{"alert": "disk full"}', "time_ms": 1_000_000, "id": "disk-1"},
    {"key": "cpu", "payload": '{"alert": "cpu hot"}', "time_ms": 1_000_000, "id": "cpu-1"},
    {"key": "cpu", "payload": '{"ack": true}', "time_ms": 1_500_000, "id": "cpu-2"},
    {"key": "late", "payload": '{"ack": true}', "time_ms": 3_000_000, "id": "late-1"},
]


def test_a_candidate_whose_follow_up_decides_otherwise_is_a_changed_decision(
    tmp_path: Path,
) -> None:
    write_jsonl(tmp_path / "events.jsonl", RECHECK_LOG)

    result = run_eval(
        tmp_path / "events.jsonl",
        [
            Candidate("v1", rechecks.recheck, rechecks.CONFIG),
            Candidate("v2", rechecks.recheck_v2, rechecks.CONFIG),
        ],
        recording=tmp_path / "recording.jsonl",
        out_dir=tmp_path / "out",
    )

    (comparison,) = result.summary["comparisons"]
    (disagreement,) = comparison["disagreements"]
    assert disagreement["event_id"] == "disk-1"
    assert disagreement["differs"] == ["follow_ups[0].intents", "follow_ups[0].output.escalate"]
    assert disagreement["decision_changed"] is True
    assert comparison["decisions_changed"] == 1
    rows = [json.loads(line) for line in result.results_path.read_text().splitlines()]
    v1_disk = next(r for r in rows if r["candidate"] == "v1" and r["event_id"] == "disk-1")
    (recheck,) = v1_disk["follow_ups"]
    assert (recheck["due_ms"], recheck["intents"]) == (
        2_800_000,
        [{"tool": "page", "args": {"alert": "disk full"}}],
    )
    assert all(r["follow_ups"] == [] for r in rows if r["event_id"] != "disk-1")


def test_the_command_says_how_many_follow_ups_did_not_run_and_drain_ms_runs_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = write_jsonl(tmp_path / "events.jsonl", LATE_LOG)
    argv = [
        "eval",
        str(events),
        "--candidate",
        "v1=tests.runtime.follow_up_agents:follow_up?tests.eval.rechecks:CONFIG",
        "--recording",
        str(tmp_path / "recording.jsonl"),
        "--quiet",
    ]

    assert main([*argv, "--out", str(tmp_path / "short")]) == 0
    short = capsys.readouterr().err
    assert main([*argv, "--out", str(tmp_path / "long"), "--drain-ms", "7200000"]) == 0
    long = capsys.readouterr().err

    assert (
        "eval: candidate v1: 1 follow-up(s) did not run (due after the replay ended at "
        "1680000 ms, 660000 ms after the last event's step, or never reached)"
    ) in short
    assert "follow-up" not in long
    summary = json.loads((tmp_path / "long" / "summary.json").read_text())
    assert summary["candidates"][0]["follow_ups"]["ran"] == 1
