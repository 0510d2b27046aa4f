"""Scorers, bootstrap intervals and gates, one behaviour at a time."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pydantic
import pytest

from beam_agents.eval import (
    EvalInputError,
    FieldMatch,
    GateError,
    LlmJudge,
    TrajectoryMatch,
    UserScorer,
)
from beam_agents.eval.events import Event
from beam_agents.eval.gates import check_gates, evaluate_gates
from beam_agents.eval.recording import save_recording, unload_recording
from beam_agents.eval.scorers import Sample, parse_score
from beam_agents.eval.stats import bootstrap_mean, paired_delta
from beam_agents.eval.typed_values import value_json
from beam_agents.model.fake import FakeLLM, Rule

EVENT = Event("e1", "runtime-e1", "k", b"disk full", 0)


def _sample(
    output_json: Any = None,
    label: Mapping[str, Any] | None = None,
    intents: list[dict[str, Any]] | None = None,
    dead: bool = False,
) -> Sample:
    return Sample(
        event=EVENT,
        output=None if output_json is None else "json",
        output_json=output_json,
        intents=intents or [],
        tool_calls=[],
        label=label,
        dead_letter={"reason": "model_error", "detail": ""} if dead else None,
    )


def test_field_match_is_1_on_equal_0_on_different_or_missing_and_none_without_a_label() -> None:
    scorer = FieldMatch("priority")
    label = {"expected": {"priority": "high"}}

    assert scorer.score(_sample({"priority": "high"}, label)) == 1.0
    assert scorer.score(_sample({"priority": "low"}, label)) == 0.0
    assert scorer.score(_sample("not an object", label)) == 0.0
    assert scorer.score(_sample(None, label, dead=True)) == 0.0
    assert scorer.score(_sample({"priority": "high"}, None)) is None
    assert scorer.score(_sample({"priority": "high"}, {"expected": {"team": "x"}})) is None


class _Ticket(pydantic.BaseModel):
    """A typed result whose `level` is `priority` in JSON."""

    level: str = pydantic.Field(
        validation_alias=pydantic.AliasChoices("priority", "level"), serialization_alias="priority"
    )
    team: str


class _Page(NamedTuple):
    priority: str
    team: str


@dataclass(frozen=True)
class _Note:
    priority: str
    team: str


def _typed(value: Any, label: Mapping[str, Any] | None) -> Sample:
    shown = value_json(value)
    return Sample(
        event=EVENT,
        output=shown,
        output_json=json.loads(shown),
        intents=[],
        tool_calls=[],
        label=label,
        value=value,
        output_type=type(value),
    )


@pytest.mark.parametrize(
    "value",
    [_Ticket(level="high", team="storage"), _Page("high", "storage"), _Note("high", "storage")],
    ids=["pydantic", "namedtuple", "dataclass"],
)
def test_field_match_reads_a_typed_result_by_its_field(value: Any) -> None:
    label = {"expected": {"priority": "high", "team": "db"}}

    assert FieldMatch("priority").score(_typed(value, label)) == 1.0
    assert FieldMatch("team").score(_typed(value, label)) == 0.0


def test_field_match_reads_a_typed_field_by_its_python_name_against_a_json_label() -> None:
    """`level` is written `priority`: a label in JSON applies to `field:level` too."""
    ticket = _Ticket(level="high", team="storage")

    assert FieldMatch("level").score(_typed(ticket, {"expected": {"priority": "high"}})) == 1.0
    assert FieldMatch("level").score(_typed(ticket, {"expected": {"priority": "low"}})) == 0.0
    assert FieldMatch("level").score(_typed(ticket, {"expected": {"team": "x"}})) is None


def test_field_match_reads_fields_never_a_method_of_the_same_name() -> None:
    ticket = _Ticket(level="high", team="storage")
    label = {"expected": {"model_dump": "high"}}

    assert FieldMatch("model_dump").score(_typed(ticket, label)) == 0.0


def test_a_user_scorer_is_handed_a_typed_result_itself() -> None:
    seen: list[Any] = []
    scorer = UserScorer(lambda event, output, intents, label: seen.append(output), "seen")
    ticket = _Ticket(level="high", team="storage")

    assert scorer.score(_typed(ticket, None)) is None
    assert seen == [ticket]


CALLS = [
    {"tool": "lookup", "args": {"id": 1}},
    {"tool": "page", "args": {}},
    {"tool": "close", "args": {}},
]


@pytest.mark.parametrize(
    ("mode", "expected", "score"),
    [
        ("EXACT", [{"tool": "lookup"}, {"tool": "page"}, {"tool": "close"}], 1.0),
        ("EXACT", [{"tool": "lookup"}, {"tool": "page"}], 0.0),  # an extra call
        (
            "EXACT",
            [{"tool": "lookup", "args": {"id": 2}}, {"tool": "page"}, {"tool": "close"}],
            0.0,
        ),
        ("IN_ORDER", [{"tool": "lookup"}, {"tool": "close"}], 1.0),  # others between
        ("IN_ORDER", [{"tool": "close"}, {"tool": "lookup"}], 0.0),  # wrong order
        ("ANY_ORDER", [{"tool": "close"}, {"tool": "lookup", "args": {"id": 1}}], 1.0),
        ("ANY_ORDER", [{"tool": "page"}, {"tool": "page"}], 0.0),  # only one page was made
        ("IN_ORDER", [], 1.0),
    ],
)
def test_trajectory_modes_match_as_adk_defines_them(
    mode: str, expected: list[dict[str, Any]], score: float
) -> None:
    scorer = TrajectoryMatch(mode)  # type: ignore[arg-type]

    assert scorer.score(_sample({}, {"expected_intents": expected}, CALLS)) == score


def test_a_trajectory_without_expected_calls_is_not_scored_and_a_dead_letter_scores_0() -> None:
    scorer = TrajectoryMatch("ANY_ORDER")

    assert scorer.score(_sample({}, {"expected": {}}, CALLS)) is None
    assert scorer.score(_sample(None, {"expected_intents": []}, dead=True)) == 0.0
    assert scorer.name == "intents_any_order"


def test_a_user_scorer_maps_bools_and_refuses_scores_outside_0_1() -> None:
    assert UserScorer(lambda e, o, i, lab: True, "t").score(_sample({})) == 1.0
    assert UserScorer(lambda e, o, i, lab: None, "t").score(_sample({})) is None
    with pytest.raises(EvalInputError, match="'t' returned 2"):
        UserScorer(lambda e, o, i, lab: 2, "t").score(_sample({}))


def test_a_bootstrap_interval_is_seeded_so_reruns_are_identical() -> None:
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0]

    first = bootstrap_mean(values, "v1/priority")
    again = bootstrap_mean(values, "v1/priority")

    assert first == again
    assert first.mean == 0.7
    assert first.n == 10
    assert first.low is not None
    assert first.high is not None
    assert 0.0 <= first.low < 0.7 < first.high <= 1.0


def test_a_constant_metric_has_a_zero_width_interval_and_no_values_have_none() -> None:
    assert bootstrap_mean([1.0] * 5, "x") == bootstrap_mean([1.0] * 5, "x")
    interval = bootstrap_mean([1.0] * 5, "x")
    assert (interval.mean, interval.low, interval.high) == (1.0, 1.0, 1.0)
    empty = bootstrap_mean([], "x")
    assert (empty.mean, empty.low, empty.high, empty.n) == (None, None, None, 0)


def test_a_paired_delta_compares_each_event_with_itself() -> None:
    baseline = [0.0, 0.0, 1.0, None, 1.0]
    candidate = [1.0, 1.0, 1.0, 1.0, None]

    delta = paired_delta(baseline, candidate, "d")

    assert (delta.mean, delta.n) == (pytest.approx(2 / 3, abs=1e-6), 3)
    assert delta.low is not None
    assert delta.low >= 0.0


def test_gates_refuse_unknown_metrics_and_bad_grammar() -> None:
    with pytest.raises(GateError, match="known: priority, dead_letters, cost_usd"):
        check_gates(["accuracy>=0.9"], ["priority"])
    with pytest.raises(GateError, match="does not parse"):
        check_gates(["priority == 1"], ["priority"])
    with pytest.raises(GateError, match="names 'cost_usd'"):
        check_gates(["delta(cost_usd)>=0"], ["priority"])


def test_gates_check_every_candidate_but_the_baseline_and_report_the_worst() -> None:
    gates = check_gates(["priority>=0.8", "delta(priority)>=0", "cost_usd<=1"], ["priority"])
    summary = {
        "baseline": "base",
        "candidates": [
            {
                "name": "base",
                "metrics": {"priority": {"mean": 0.1}},
                "cost_usd": 9.0,
                "dead_letters": {},
            },
            {
                "name": "b",
                "metrics": {"priority": {"mean": 0.9}},
                "cost_usd": 0.5,
                "dead_letters": {},
            },
            {
                "name": "c",
                "metrics": {"priority": {"mean": 0.85}},
                "cost_usd": 0.2,
                "dead_letters": {},
            },
        ],
        "comparisons": [
            {"deltas": {"priority": {"delta": 0.8}}},
            {"deltas": {"priority": {"delta": -0.1}}},
        ],
    }

    results = evaluate_gates(gates, summary)

    assert results == [
        {"expr": "priority>=0.8", "value": 0.85, "passed": True},
        {"expr": "delta(priority)>=0", "value": -0.1, "passed": False},
        {"expr": "cost_usd<=1", "value": 0.5, "passed": True},
    ]


@pytest.mark.parametrize(
    ("answer", "score"),
    [
        (b'{"score": 0.8, "reason": "fine"}', 0.8),
        (b"1", 1.0),
        (b"I would give it 0.25 overall", 0.25),
        (b'{"score": 7}', None),
        (b"no idea", None),
    ],
)
def test_a_judge_answer_is_read_as_a_score_in_0_1(answer: bytes, score: float | None) -> None:
    assert parse_score(answer) == score


def test_a_judges_calls_are_recorded_and_a_rerun_asks_nothing(tmp_path: Path) -> None:
    model = FakeLLM(rules=[Rule("disk", b'{"score": 0.75}')], default=b"0", name="eval-judge")
    model.reset()
    judge = LlmJudge(model, "Is the priority right for the alert?")
    recording = str(tmp_path / "judge.jsonl")
    samples = [_sample({"priority": "high"}), _sample(None, dead=True)]

    first = judge.score_all(samples, recording)
    save_recording(recording)
    unload_recording(recording)
    asked = model.call_count()
    again = judge.score_all(samples, recording)

    assert first == again == [0.75, 0.0]
    assert asked == 1  # the dead-lettered sample is not sent
    assert model.call_count() == 1


def test_a_judge_whose_key_is_unset_is_refused_unless_the_recording_has_answered_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rerun needs no key: only a judge the recording has never answered must ask its model."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rubric = "Is the priority right for the alert?"
    hosted = LlmJudge("openai:gpt-4o-mini", rubric)
    recording = str(tmp_path / "judge.jsonl")
    samples = [_sample({"priority": "high"})]

    with pytest.raises(
        EvalInputError, match=r"scorer 'judge': environment variable OPENAI_API_KEY"
    ):
        hosted.check(recording)
    model = FakeLLM(default=b'{"score": 0.5}', name="eval-judge-stand-in")
    LlmJudge(model, rubric).score_all(samples, recording)
    save_recording(recording)
    unload_recording(recording)

    hosted.check(recording)
    assert hosted.score_all(samples, recording) == [0.5]
    with pytest.raises(EvalInputError, match="OPENAI_API_KEY"):
        LlmJudge("openai:gpt-4o-mini", "Another rubric.").check(recording)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    LlmJudge("openai:gpt-4o-mini", "Another rubric.").check(recording)
