"""The bundled data: deterministic, shaped as the demo needs, in agreement with the model."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from app.triage.alerts import read_alerts, read_answers
from app.triage.data import (
    DATA_DIR,
    DURATION_MS,
    NOISY_SERVICE,
    START_MS,
    activation_seqs,
    read_labels,
    write_data,
)
from app.triage.model import classify
from beam_agents import intent_id


def test_generating_twice_gives_identical_bytes_equal_to_the_bundled_files(tmp_path: Path) -> None:
    first = write_data(tmp_path / "a")
    second = write_data(tmp_path / "b")

    bundled_files = (
        DATA_DIR / "alerts.jsonl",
        DATA_DIR / "answers.jsonl",
        DATA_DIR / "labels.jsonl",
    )
    for one, two, bundled in zip(first, second, bundled_files, strict=True):
        assert one.read_bytes() == two.read_bytes()
        assert one.read_bytes() == bundled.read_bytes(), (
            f"{bundled} is stale: run `python -m app.triage generate`"
        )


def test_bundled_data_has_the_shape_the_demo_needs() -> None:
    alerts = read_alerts(DATA_DIR / "alerts.jsonl")
    answers = read_answers(DATA_DIR / "answers.jsonl")
    per_service = Counter(a.service for a in alerts)

    assert len(alerts) >= 3000
    assert len(per_service) == 150
    assert per_service.most_common(1)[0][0] == NOISY_SERVICE
    assert all(START_MS <= a.event_time_ms < START_MS + DURATION_MS for a in alerts)
    assert sum(p.stat().st_size for p in DATA_DIR.iterdir()) < 2_000_000
    verdicts = Counter(a.answer.split()[0] for a in answers)
    p1 = sum(1 for a in alerts if classify(a.message)[0] == "P1")
    assert verdicts["approve"] > 0
    assert verdicts["deny"] > 0
    assert p1 > len(answers), "some approvals are never answered"


def test_answers_are_keyed_by_the_approval_intent_of_the_alert_they_answer() -> None:
    """A P1 by its message asks, unless history lowers it; a recurrence history raises does.

    The approval is its activation's first intent, at the alert's activation
    seq: its position among its service's alerts, plus the rechecks that ran
    before it.
    """
    alerts = read_alerts(DATA_DIR / "alerts.jsonl")
    expected = {x.alert_id: x.expected_class for x in read_labels(DATA_DIR / "labels.jsonl")}
    seqs = activation_seqs()
    ordinal: dict[str, int] = Counter()
    approvals: dict[str, str] = {}
    for alert in alerts:
        ordinal[alert.service] += 1
        assert seqs[alert.alert_id] >= ordinal[alert.service]
        if expected.get(alert.alert_id, classify(alert.message)[0]) == "P1":
            approvals[intent_id(alert.service.encode(), seqs[alert.alert_id], 0)] = alert.alert_id

    for answer in read_answers(DATA_DIR / "answers.jsonl"):
        assert answer.intent_id in approvals


def test_the_same_rechecks_run_before_every_alert_with_recall_on_and_off() -> None:
    """A recurrence recall re-classes settles the case before it either way, on this data.

    So the answers' intent ids, which count the rechecks, hold for both
    evaluation candidates (with and without recall) as well as for the demo.
    """
    with_recall = activation_seqs(recall=True)
    positions = {
        a.alert_id: int(a.alert_id.rsplit("-", 1)[1])
        for a in read_alerts(DATA_DIR / "alerts.jsonl")
    }

    assert activation_seqs(recall=False) == with_recall
    assert any(with_recall[a] > positions[a] for a in positions), "no recheck ran before an alert"
