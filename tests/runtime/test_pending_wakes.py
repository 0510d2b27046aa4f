"""A key's pending follow-ups, read back from the lifecycle records a real pipeline emitted.

One streaming run (`tests.runtime.follow_up_agents.follow_up`) schedules,
replaces, cancels and re-schedules wakes on two keys; the tests read its
records, or a prefix of them (what a console reading the run part-way has
seen), and compare with what the agent did.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from itertools import groupby

import pytest

from beam_agents import AgentConfig, LifecycleEvent
from beam_agents.runtime import lifecycle
from beam_agents.runtime.pending_wakes import (
    WAKE_KINDS,
    PendingFollowUp,
    WakeLedger,
    WakeRecord,
    WakeRecordError,
    pending_wakes,
    wake_record,
    wake_record_of_json,
)
from beam_agents.runtime.wakes import MAX_PENDING_WAKES
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime.follow_up_agents import command, follow_up

pytestmark = pytest.mark.pipeline

AGAIN = json.dumps({"schedule": [{"name": "recheck", "after_ms": 4_000}]})


@pytest.fixture(scope="module")
def run() -> StreamRun:
    """Key a: three wakes, one replaced, one cancelled, one that schedules itself again.

    Key b: an event-time wake, and a processing-time one that fires once the
    script moves the test clock past it.
    """
    first = [
        {"name": "recheck", "after_ms": 5_000, "payload": AGAIN},
        {"name": "close", "after_ms": 50_000},
        {"name": "drop", "after_ms": 9_000},
    ]
    b_wakes = [
        {"name": "only", "after_ms": 2_000},
        {"name": "nightly", "after_ms": 5_000, "processing_time": True},
    ]
    replace_and_cancel = command(schedule=[{"name": "close", "after_ms": 80_000}], cancel=["drop"])
    script = (
        Script()
        .events(("a", command(schedule=first), 1_000))
        .events(("b", command(schedule=b_wakes), 1_500))
        .events(("a", replace_and_cancel, 2_000))
        .watermark(20_000)
        .processing_time(16_000)
        .events(("a", command(), 20_500))
    )
    done = run_script(follow_up, AgentConfig(), script, lifecycle=True, clock_ms=_ten_seconds)
    assert done.errors == []
    return done


def _ten_seconds() -> int:
    """RunAgent's processing clock at the commit: a processing-time wake is due from it."""
    return 10_000


def _records(run: StreamRun, key: bytes, *, through_seq: int | None = None) -> list[LifecycleEvent]:
    """The key's records in emission order, up to the commit of its activation at `through_seq`."""
    return [
        e
        for e in run.lifecycle
        if e.entity_key == key and (through_seq is None or e.seq <= through_seq)
    ]


def _pending(records: Iterable[LifecycleEvent]) -> list[PendingFollowUp]:
    return pending_wakes(w for w in map(wake_record, records) if w is not None)


def test_a_replaced_wake_is_pending_once_at_its_new_due_time_and_a_cancelled_one_not_at_all(
    run: StreamRun,
) -> None:
    pending = _pending(_records(run, b"a", through_seq=2))

    assert pending == [
        PendingFollowUp("recheck", 6_000, False, scheduled_ms=1_000, scheduled_seq=1),
        PendingFollowUp("close", 82_000, False, scheduled_ms=2_000, scheduled_seq=2),
    ]


def test_a_wake_that_schedules_itself_again_stays_pending_at_its_next_due_time(
    run: StreamRun,
) -> None:
    pending = _pending(_records(run, b"a", through_seq=3))

    assert [(p.name, p.due_ms, p.scheduled_seq) for p in pending] == [
        ("recheck", 10_000, 3),
        ("close", 82_000, 2),
    ]


def test_once_every_event_time_wake_has_run_none_is_pending(run: StreamRun) -> None:
    assert [e.kind for e in _records(run, b"a")].count("wake_fired") == 3
    assert _pending(_records(run, b"a")) == []


def test_a_processing_time_wake_not_yet_due_is_pending_on_its_clock(run: StreamRun) -> None:
    [nightly] = _pending(_records(run, b"b", through_seq=2))

    assert nightly == PendingFollowUp("nightly", 15_000, True, scheduled_ms=1_500, scheduled_seq=1)
    assert nightly.clock == "processing"
    assert _pending(_records(run, b"b")) == []


def test_pending_wakes_are_a_keys_own(run: StreamRun) -> None:
    assert "only" not in {p.name for p in _pending(_records(run, b"a", through_seq=1))}
    assert {p.name for p in _pending(_records(run, b"b", through_seq=1))} == {"only", "nightly"}


def _json_line(event: LifecycleEvent) -> dict[str, object]:
    from app.triage.records import lifecycle_json  # the form the triage app writes

    loaded: dict[str, object] = json.loads(lifecycle_json(event))
    return loaded


@pytest.mark.parametrize(
    ("key", "seq"), [(b"a", 1), (b"a", 2), (b"a", 3), (b"a", None), (b"b", 2), (b"b", None)]
)
def test_the_json_lines_a_pipeline_writes_read_as_its_records_do(
    run: StreamRun, key: bytes, seq: int | None
) -> None:
    records = _records(run, key, through_seq=seq)
    lines = [_json_line(e) for e in records]

    from_json = pending_wakes(w for w in map(wake_record_of_json, lines) if w is not None)

    assert from_json == _pending(records)


@pytest.mark.parametrize("seq", [1, 2, 3, None])
def test_one_activations_records_in_any_order_give_the_same_pending_wakes(
    run: StreamRun, seq: int | None
) -> None:
    """A file sorted by its lines' bytes may put a re-schedule before the firing it follows."""
    records = _records(run, b"a", through_seq=seq)
    shuffled = [
        e
        for _, one_commit in groupby(records, key=lambda e: e.seq)
        for e in reversed(list(one_commit))
    ]

    assert shuffled != records
    assert _pending(shuffled) == _pending(records)


def test_the_history_names_each_wake_and_what_became_of_it(run: StreamRun) -> None:
    history = [w for w in map(wake_record, _records(run, b"a")) if w is not None]

    assert [(w.action, w.name, w.due_ms) for w in history] == [
        ("scheduled", "close", 51_000),
        ("scheduled", "drop", 10_000),
        ("scheduled", "recheck", 6_000),
        ("cancelled", "drop", None),
        ("scheduled", "close", 82_000),
        ("fired", "recheck", 6_000),
        ("scheduled", "recheck", 10_000),
        ("fired", "recheck", 10_000),
        ("fired", "close", 82_000),
    ]
    assert {w.clock for w in history} == {"event", ""}


def test_the_kind_names_are_the_runtimes() -> None:
    assert {lifecycle.WAKE_SCHEDULED, lifecycle.WAKE_FIRED, lifecycle.WAKE_CANCELLED} == WAKE_KINDS


@pytest.mark.parametrize(
    ("detail", "problem"),
    [
        ("not json", "detail is not a JSON object"),
        ('{"due_ms": 5, "time": "event"}', "no wake name"),
        ('{"name": "x", "due_ms": "5", "time": "event"}', "no integer due_ms"),
        ('{"name": "x", "due_ms": 5, "time": "wall"}', "not 'event' or 'processing'"),
    ],
)
def test_a_wake_record_that_is_not_what_a_pipeline_emits_is_refused_naming_the_problem(
    detail: str, problem: str
) -> None:
    record = LifecycleEvent(b"k", lifecycle.WAKE_SCHEDULED, 1_000, 4, 0, detail)

    with pytest.raises(WakeRecordError, match=problem) as refused:
        wake_record(record)

    assert "wake_scheduled record at seq 4" in str(refused.value)


def test_a_json_wake_record_with_a_text_seq_is_refused() -> None:
    line = {"kind": "wake_cancelled", "detail": '{"name": "x"}', "event_time_ms": 1, "seq": "2"}

    with pytest.raises(WakeRecordError, match="integer event_time_ms and seq"):
        wake_record_of_json(line)


def test_records_of_other_kinds_are_not_wake_records(run: StreamRun) -> None:
    others = [e for e in run.lifecycle if e.kind not in WAKE_KINDS]

    assert {e.kind for e in others} >= {"activated", "completed", "ttl_expired"}
    assert [wake_record(e) for e in others] == [None] * len(others)
    assert wake_record_of_json({"kind": "completed", "seq": "not read"}) is None


def test_more_pending_wakes_than_a_key_can_hold_is_refused() -> None:
    ledger = WakeLedger()
    for n in range(MAX_PENDING_WAKES):
        ledger.take(WakeRecord("scheduled", f"w{n}", 1, 1, 10, False))
    ledger.take(WakeRecord("scheduled", "w0", 2, 2, 20, False))  # a replacement is no more

    with pytest.raises(WakeRecordError, match="not one key's records"):
        ledger.take(WakeRecord("scheduled", "one-more", 3, 3, 30, False))
    assert len(ledger) == MAX_PENDING_WAKES


def test_a_cancel_record_carries_no_due_time() -> None:
    with pytest.raises(WakeRecordError, match="cancelled wake record carries no due_ms"):
        WakeRecord("cancelled", "x", 1, 1, 10, False)
    with pytest.raises(WakeRecordError, match="scheduled wake record carries a due_ms"):
        WakeRecord("scheduled", "x", 1, 1)


def test_reading_pending_wakes_does_not_import_apache_beam() -> None:
    """The command line and the console read records without loading Beam."""
    code = (
        "import sys; import beam_agents.runtime.pending_wakes; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'apache_beam'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
