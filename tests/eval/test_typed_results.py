"""Typed candidates: run as `RunAgent(..., output_type=...)` runs them, scored field by field."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from beam_agents.cli import main as beam_agents_main
from beam_agents.eval import Candidate, EvalInputError, FieldMatch, UserScorer, run_eval
from beam_agents.eval.events import Event
from tests.eval import agents
from tests.eval.logs import write_log

SEEN: list[Any] = []
"""What `_seen_as` was handed, in the order the samples were scored."""


def _seen_as(
    event: Event, output: Any, intents: Sequence[Mapping[str, Any]], label: Mapping[str, Any] | None
) -> None:
    SEEN.append(output)


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The bytes agent, its typed twin and a typed one whose CPU result is no `Verdict`."""
    tmp_path = tmp_path_factory.mktemp("typed")
    events, labels, recording = write_log(tmp_path)
    agents.MODEL.reset()
    SEEN.clear()
    result = run_eval(
        events,
        [
            Candidate("bytes", agents.triage_v1, agents.CONFIG),
            Candidate("typed", agents.triage_typed, agents.CONFIG, output_type=agents.Verdict),
            Candidate(
                "medium",
                "tests.eval.agents:triage_typed_medium_cpu",
                agents.CONFIG,
                output_type="tests.eval.agents:Verdict",
            ),
        ],
        labels=labels,
        scorers=[FieldMatch("priority"), FieldMatch("level"), UserScorer(_seen_as, "seen_as")],
        recording=recording,
        out_dir=tmp_path / "out",
        decision_fields=["level"],
    )
    rows = [json.loads(line) for line in result.results_path.read_text().splitlines()]
    by = {(row["candidate"], row["event_id"]): row for row in rows}
    return {"summary": result.summary, "rows": by, "seen": list(SEEN)}


def test_a_typed_candidates_rows_read_like_the_bytes_agent_it_replaces(
    evaluated: dict[str, Any],
) -> None:
    """Its results are shown as their JSON: the same objects the bytes agent wrote."""
    rows = evaluated["rows"]
    typed = rows[("typed", "a1")]

    assert typed["output_json"] == rows[("bytes", "a1")]["output_json"]
    assert typed["output_json"]["priority"] == "high"
    assert "level" not in typed["output_json"]
    (typed_vs_bytes,) = [
        c for c in evaluated["summary"]["comparisons"] if c["candidate"] == "typed"
    ]
    assert typed_vs_bytes["disagreements"] == []


def test_field_match_reads_a_typed_result_by_its_python_or_its_json_name(
    evaluated: dict[str, Any],
) -> None:
    """`level` is `priority` in JSON: the labels, written in JSON, apply to both names."""
    by_name = {c["name"]: c for c in evaluated["summary"]["candidates"]}
    rows = evaluated["rows"]

    typed, by_bytes = by_name["typed"]["metrics"], by_name["bytes"]["metrics"]
    assert typed["priority"] == typed["level"] == by_bytes["priority"]
    assert typed["level"]["n"] > 0
    for event_id in ("a1", "a2", "b1", "c1", "a3", "d1"):
        scores = rows[("typed", event_id)]["scores"]
        assert (
            scores["level"] == scores["priority"] == rows[("bytes", event_id)]["scores"]["priority"]
        )
    assert by_name["typed"]["confusion"] == by_name["bytes"]["confusion"]
    assert by_bytes["level"]["n"] == 0  # JSON has no field `level`: no label applies


def test_a_user_scorer_is_handed_the_typed_result_itself(evaluated: dict[str, Any]) -> None:
    verdicts = [seen for seen in evaluated["seen"] if isinstance(seen, agents.Verdict)]

    assert verdicts
    assert {verdict.level for verdict in verdicts} == {"high", "low"}
    assert any(isinstance(seen, dict) for seen in evaluated["seen"])  # the bytes candidate's


def test_a_typed_result_that_is_not_its_type_is_an_output_invalid_dead_letter_scoring_0(
    evaluated: dict[str, Any],
) -> None:
    rows = evaluated["rows"]
    cpu = rows[("medium", "a2")]

    assert cpu["dead_letter"]["reason"] == "output_invalid"
    assert "medium" in cpu["dead_letter"]["detail"]
    assert cpu["output"] is None
    assert cpu["scores"]["priority"] == 0.0
    assert rows[("typed", "a2")]["scores"]["priority"] == 1.0
    assert rows[("medium", "a1")]["output_json"] == rows[("typed", "a1")]["output_json"]


def test_a_decision_field_named_by_its_python_name_counts_as_its_json_field(
    evaluated: dict[str, Any],
) -> None:
    summary = evaluated["summary"]
    (medium,) = [c for c in summary["comparisons"] if c["candidate"] == "medium"]

    assert summary["decision_fields"] == ["priority"]
    assert medium["decisions_changed"] == 1
    assert [d["event_id"] for d in medium["disagreements"]] == ["a2"]


def _cli(tmp_path: Path, *extra: str) -> int:
    events, labels, recording = write_log(tmp_path)
    return beam_agents_main(
        ["eval", str(events), "--quiet", "--labels", str(labels), "--recording", str(recording),
         "--candidate", "bytes=tests.eval.agents:triage_v1?tests.eval.agents:CONFIG",
         "--candidate", "typed=tests.eval.agents:triage_typed?tests.eval.agents:CONFIG",
         "--scorer", "field:level", "--out", str(tmp_path / "out"), *extra]
    )  # fmt: skip


def test_the_command_line_types_one_candidate_by_name(tmp_path: Path) -> None:
    code = _cli(
        tmp_path, "--output-type", "typed=tests.eval.agents:Verdict", "--gate", "level>=0.5"
    )

    assert code == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    by_name = {c["name"]: c for c in summary["candidates"]}
    # a1, a2 and b1 right; c1 and d1 dead letters, a3 labelled against the agent: 3 of 6.
    assert by_name["typed"]["metrics"]["level"]["mean"] == 0.5
    assert by_name["bytes"]["metrics"]["level"]["n"] == 0


def test_a_typed_candidate_given_no_output_type_dead_letters_every_decision(
    tmp_path: Path,
) -> None:
    """Without `--output-type`, the typed agent runs untyped, as a RunAgent without one would."""
    assert _cli(tmp_path) == 0

    rows = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").open()]
    typed = [row for row in rows if row["candidate"] == "typed" and row["output"] is not None]
    assert typed == []
    reasons = {row["dead_letter"]["reason"] for row in rows if row["candidate"] == "typed"}
    assert "output_invalid" in reasons


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("nobody=tests.eval.agents:Verdict", "no candidate is named 'nobody'"),
        ("tests.eval.agents:Unrowable", "candidate bytes: RunAgent.output_type"),
        ("tests.eval.agents:PROMPT", "output_type must be a pydantic model"),
        ("tests.eval.agents:NoSuchType", "has no 'NoSuchType'"),
    ],
)
def test_a_bad_output_type_is_a_usage_error_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, said: str
) -> None:
    code = _cli(tmp_path, "--output-type", spec)

    assert code == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert agents.MODEL.call_count() == 0


def test_two_output_types_for_the_same_candidates_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = "tests.eval.agents:Verdict"
    assert _cli(tmp_path, "--output-type", spec, "--output-type", spec) == 2
    assert "a second type for the same candidates" in capsys.readouterr().err


def test_a_candidate_output_type_that_is_not_a_class_is_refused() -> None:
    with pytest.raises(EvalInputError, match="output_type must be a pydantic model"):
        Candidate("x", agents.triage_v1, agents.CONFIG, output_type=agents.Verdict(
            priority="high", reason="", seen=1, rehydrated=False, approved=None, info=None
        ))  # type: ignore[arg-type]  # fmt: skip
