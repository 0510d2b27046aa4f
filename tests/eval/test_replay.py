"""Recorded calls are free and exact; a changed request, and only it, reaches the provider."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from beam_agents.eval import Candidate, FieldMatch, TrajectoryMatch, run_eval
from beam_agents.eval.recording import unload_recording
from tests.eval import agents
from tests.eval.logs import write_log

SCORERS = [FieldMatch("priority"), TrajectoryMatch("EXACT")]


def _run(tmp_path: Path, out: str, *candidates: Candidate) -> tuple[bytes, bytes]:
    events, labels, recording = (
        tmp_path / "events.jsonl",
        tmp_path / "labels.jsonl",
        tmp_path / "recording.jsonl",
    )
    result = run_eval(
        events,
        list(candidates),
        labels=labels,
        scorers=SCORERS,
        recording=recording,
        out_dir=tmp_path / out,
    )
    return result.results_path.read_bytes(), result.summary_path.read_bytes()


def test_a_fully_recorded_run_calls_no_provider_and_repeats_byte_for_byte(tmp_path: Path) -> None:
    write_log(tmp_path)
    v1 = Candidate("v1", agents.triage_v1, agents.CONFIG)
    _run(tmp_path, "first", v1)
    asked = agents.MODEL.call_count()
    recording = (tmp_path / "recording.jsonl").read_bytes()
    unload_recording(
        str(tmp_path / "recording.jsonl")
    )  # read back from the file, as a new process would
    agents.MODEL.reset()

    results, summary = _run(tmp_path, "second", v1)
    again = _run(tmp_path, "third", v1)

    assert asked == 5  # a1, a2, b1 (its resume replays), c1 (a recorded failure), a3
    assert agents.MODEL.call_count() == 0
    assert (results, summary) == again
    assert (tmp_path / "recording.jsonl").read_bytes() == recording
    (candidate,) = json.loads(summary)["candidates"]
    assert candidate["recorded"] == candidate["model_calls"] == 5
    assert agents.REAL_TOOL_CALLS == []


def test_a_changed_prompt_asks_the_provider_only_for_the_changed_requests(tmp_path: Path) -> None:
    write_log(tmp_path)
    _run(tmp_path, "first", Candidate("v1", agents.triage_v1, agents.CONFIG))
    agents.MODEL.reset()

    _, summary = _run(
        tmp_path,
        "second",
        Candidate("v1", agents.triage_v1, agents.CONFIG),
        Candidate("v2", agents.triage_v2, agents.CONFIG),
    )

    (changed,) = agents.MODEL.calls()
    assert changed.messages[0]["content"] == agents.CPU_PROMPT_V2
    v1, v2 = json.loads(summary)["candidates"]
    assert v1["model_calls"] == v1["recorded"] == 5
    assert (v2["model_calls"], v2["recorded"]) == (5, 4)
    lines = (tmp_path / "recording.jsonl").read_text().splitlines()
    assert sum(agents.CPU_PROMPT_V2 in line for line in lines) == 1


def test_a_slow_model_whose_calls_park_gives_the_rows_of_an_immediate_one(tmp_path: Path) -> None:
    """A parked activation re-runs on its answer; the row is the re-run's, counted once."""
    rows = []
    for latency in (0.0, 0.1):
        directory = tmp_path / f"latency-{latency}"
        directory.mkdir()
        events, labels, recording = write_log(directory)
        model = dataclasses.replace(agents.MODEL, latency_s=latency, name=f"eval-slow-{latency}")
        config = dataclasses.replace(agents.CONFIG, provider_factory=model)
        result = run_eval(
            events,
            [Candidate("v1", agents.triage_v1, config)],
            labels=labels,
            scorers=SCORERS,
            recording=recording,
            out_dir=directory / "out",
        )
        model.reset()
        found = [json.loads(line) for line in result.results_path.read_text().splitlines()]
        for row in found:
            del row["model_time_ms"]  # a live call's latency is measured
        rows.append(found)

    assert rows[0] == rows[1]
    assert [row["model_calls"] for row in rows[1]] == [1, 1, 1, 1, 1, 0]
