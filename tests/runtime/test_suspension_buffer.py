"""Events that arrive during a suspension are buffered, bounded, and run in order."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter

import pytest

from beam_agents import AgentConfig, FlushToLongterm, intent_id
from beam_agents.memory.stores import InMemoryMemoryStore, open_store
from beam_agents.model import FakeLLM
from beam_agents.proto import MemoryBlob
from beam_agents.runtime.intents import event_id_for
from beam_agents.testing.chaos import fail_commit_once
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime import agents

pytestmark = pytest.mark.pipeline

RUNTIME = "beam_agents.runtime"
ASK_1 = intent_id(b"k", 1, 0)  # hold_the_line stages nothing before it suspends


def _suspend_then_three_events() -> Script:
    script = Script().events(("k", b"ask-1", 1_000)).watermark(1_001)
    for i, t in enumerate((2_000, 3_000, 4_000), start=1):
        script.events(("k", b"e%d" % i, t)).watermark(t + 1)
    return script


def _run(script: Script, **config: int) -> StreamRun:
    return run_script(
        agents.hold_the_line,
        AgentConfig(**config),  # type: ignore[arg-type]
        script,
        clock_ms=agents.clock_at_zero,
        lifecycle=True,
    )


def _outputs(run: StreamRun) -> list[bytes]:
    return [output for _, output in run.outputs]


def test_events_held_behind_a_suspension_run_in_arrival_order_after_the_answer() -> None:
    run = _run(_suspend_then_three_events().answers(("k", ASK_1, b"yes", 10_000)))

    assert _outputs(run) == [
        b"1|ask-1|1000|yes|ask-1",
        b"2|e1|2000|-|ask-1,e1",
        b"3|e2|3000|-|ask-1,e1,e2",
        b"4|e3|4000|-|ask-1,e1,e2,e3",
    ]
    assert run.errors == []
    handled = [i for i in run.intents if i.tool == "handled"]
    # Each drained event keeps the event_id it would have had running at once.
    assert [i.args_json.decode().split('"event_id":"')[1][:36] for i in handled[1:]] == [
        event_id_for(b"k", t, b"e%d" % n) for n, t in ((1, 2_000), (2, 3_000), (3, 4_000))
    ]
    buffered = [e for e in run.lifecycle if e.kind == "buffered"]
    assert [(e.event_time_ms, e.seq, e.detail) for e in buffered] == [
        (2_000, 1, "1"),
        (3_000, 1, "2"),
        (4_000, 1, "3"),
    ]
    drained = [e for e in run.lifecycle if e.kind == "activated" and e.detail == "drained"]
    assert [(e.seq, e.event_time_ms) for e in drained] == [(2, 2_000), (3, 3_000), (4, 4_000)]
    assert run.counter(RUNTIME, "suspension_buffered") == 3
    assert run.counter(RUNTIME, "suspension_drained") == 3


def test_buffer_and_suspension_records_agree_with_the_pipeline_metrics() -> None:
    run = _run(_suspend_then_three_events().answers(("k", ASK_1, b"yes", 10_000)))

    kinds = Counter(run.kinds())
    drained = sum(1 for e in run.lifecycle if e.kind == "activated" and e.detail == "drained")
    assert kinds["buffered"] == run.counter(RUNTIME, "suspension_buffered") == 3
    assert drained == run.counter(RUNTIME, "suspension_drained") == 3
    assert kinds["suspended"] == run.counter(RUNTIME, "suspensions") == 1
    assert kinds["resumed"] == run.counter(RUNTIME, "resumptions") == 1
    assert kinds["activated"] + kinds["resumed"] == run.counter(RUNTIME, "activations") == 5
    assert kinds["completed"] == len(run.outputs) == 4


def test_a_denied_answer_resolves_the_suspension_and_drains_too() -> None:
    run = _run(_suspend_then_three_events().answers(("k", ASK_1, b"no", 10_000)))

    assert _outputs(run)[0] == b"1|ask-1|1000|no|ask-1"
    assert [o.split(b"|")[0] for o in _outputs(run)] == [b"1", b"2", b"3", b"4"]


def test_a_suspension_timeout_is_dead_lettered_then_the_held_events_run() -> None:
    script = _suspend_then_three_events().processing_time(61_000).watermark(5_000)

    run = _run(script)

    assert run.reasons() == ["suspension_timeout"]
    assert run.errors[0].payload == b"ask-1"
    # The suspension committed no memory; seq 1 was its own.
    assert _outputs(run) == [
        b"2|e1|2000|-|e1",
        b"3|e2|3000|-|e1,e2",
        b"4|e3|4000|-|e1,e2,e3",
    ]


def test_a_buffer_of_one_holds_one_event_and_dead_letters_the_rest_with_payloads() -> None:
    run = _run(
        _suspend_then_three_events().answers(("k", ASK_1, b"yes", 10_000)),
        suspended_event_buffer=1,
    )

    assert _outputs(run) == [b"1|ask-1|1000|yes|ask-1", b"2|e1|2000|-|ask-1,e1"]
    assert run.reasons() == ["event_while_suspended", "event_while_suspended"]
    assert [e.payload for e in run.errors] == [b"e2", b"e3"]
    assert "buffer is full (1 events" in run.errors[0].detail
    assert run.counter(RUNTIME, "suspension_buffer_overflows") == 2
    failed = [e.detail for e in run.lifecycle if e.kind == "failed"]
    assert failed == ["event_while_suspended", "event_while_suspended"]


def test_the_byte_bound_dead_letters_the_event_that_would_pass_it() -> None:
    run = _run(
        _suspend_then_three_events().answers(("k", ASK_1, b"yes", 10_000)),
        suspended_buffer_bytes=4,
    )

    assert [e.payload for e in run.errors] == [b"e3"]
    assert "AgentConfig.suspended_buffer_bytes" in run.errors[0].detail
    assert [o.split(b"|")[1] for o in _outputs(run)] == [b"ask-1", b"e1", b"e2"]


def test_a_drained_event_that_suspends_keeps_the_rest_buffered_until_its_answer() -> None:
    ask_2 = intent_id(b"k", 3, 0)
    script = (
        Script()
        .events(("k", b"ask-1", 1_000))
        .watermark(1_001)
        .events(("k", b"e1", 2_000))
        .watermark(2_001)
        .events(("k", b"ask-2", 3_000))
        .watermark(3_001)
        .events(("k", b"e3", 4_000))
        .watermark(4_001)
        .answers(("k", ASK_1, b"yes", 10_000))
        .watermark(10_001)
        .events(("k", b"e4", 11_000))
        .watermark(11_001)
        .answers(("k", ask_2, b"ok", 12_000))
    )

    run = _run(script)

    assert _outputs(run) == [
        b"1|ask-1|1000|yes|ask-1",
        b"2|e1|2000|-|ask-1,e1",
        b"3|ask-2|3000|ok|ask-1,e1,ask-2",
        b"4|e3|4000|-|ask-1,e1,ask-2,e3",
        b"5|e4|11000|-|ask-1,e1,ask-2,e3,e4",
    ]
    assert run.errors == []
    approvals = [i for i in run.intents if i.awaits_answer]
    assert [(i.intent_id, i.seq) for i in approvals] == [(ASK_1, 1), (ask_2, 3)]


def test_a_ttl_wipe_dead_letters_each_held_event_and_flushes_only_committed_memory() -> None:
    uri = f"memory://buffer-ttl-{uuid.uuid4().hex}"
    config = AgentConfig(longterm_memory=uri, on_expire=FlushToLongterm(), ttl_ms=1_000)
    script = (
        Script()
        .events(("k", b"warm", 500))
        .watermark(501)
        .events(("k", b"ask-1", 1_000))
        .watermark(1_001)
        .events(("k", b"e1", 2_000))
        .watermark(2_001)
        .events(("k", b"e2", 3_000))
        .watermark(200_000)
    )

    run = run_script(
        agents.hold_the_line, config, script, clock_ms=agents.clock_at_zero, lifecycle=True
    )

    assert _outputs(run) == [b"1|warm|500|-|warm"]
    assert run.reasons() == ["ttl_wiped_suspension"] * 3
    assert [e.payload for e in run.errors] == [b"ask-1", b"e1", b"e2"]
    # TTL fires at the suspension's event time + its timeout + ttl_ms.
    assert {e.event_time_ms for e in run.errors} == {1_000 + 60_000 + 1_000}
    assert "buffered event 2 of 2" in run.errors[2].detail
    # on_expire demoted the committed memory only: no buffered event ever ran.
    store = open_store(uri)
    assert isinstance(store, InMemoryMemoryStore)
    record = asyncio.run(store.load(b"k", "working_memory"))
    assert record is not None
    assert record.seq == 2
    (entry,) = MemoryBlob.FromString(record.value).entries
    assert (entry.key, entry.value) == ("log", b"\x01\x04warm")
    assert [e.kind for e in run.lifecycle][-5:] == [
        "failed",
        "failed",
        "failed",
        "expire_flushed",
        "ttl_expired",
    ]


@pytest.mark.parametrize("resolution", ["answer", "timeout"])
def test_a_bundle_retry_during_a_drain_converges_on_identical_results(resolution: str) -> None:
    """The commit of the second drained event (seq 3) fails once; everything the
    run emitted and every long-term row is byte-identical to a run without it."""

    def run(name: str, fault_seq: int | None) -> tuple[StreamRun, dict[object, object]]:
        uri = f"memory://buffer-chaos-{name}-{uuid.uuid4().hex}"
        provider = FakeLLM(name=f"buffer-chaos-{name}", default=b"answer-{n}")
        provider.reset()
        script = _suspend_then_three_events()
        if resolution == "answer":
            script.answers(("k", ASK_1, b"yes", 10_000))
        else:
            script.processing_time(61_000).watermark(5_000)
        script.watermark(20_000).events(("k", b"probe", 20_000))
        config = AgentConfig(provider_factory=provider, longterm_memory=uri)
        stream = run_script(
            agents.triage_and_save, config, script, clock_ms=agents.clock_at_zero, lifecycle=True
        )
        store = open_store(uri)
        assert isinstance(store, InMemoryMemoryStore)
        written = {(e, k) for op, e, k in store.operations if op == "upsert"}
        return stream, {row: asyncio.run(store.read_raw(*row)) for row in sorted(written)}

    clean, clean_rows = run(f"{resolution}-clean", None)
    with fail_commit_once(b"k", 3) as fault:
        faulty, faulty_rows = run(f"{resolution}-faulty", 3)

    assert fault.fired == [(b"k", 3)]
    assert faulty.fingerprint() == clean.fingerprint()
    assert faulty_rows == clean_rows
    assert len(clean.outputs) == (5 if resolution == "answer" else 4)


def test_a_drained_suspension_gets_its_own_deadline_whichever_way_the_first_resolved() -> None:
    """The HITL timer is cleared by the resolved suspension and re-armed by the drained
    one in the same callback (an answer's, or the timer's own)."""
    ask_2 = intent_id(b"k", 2, 0)
    script = (
        Script()
        .events(("k", b"ask-1", 1_000))
        .watermark(1_001)
        .events(("k", b"ask-2", 2_000))
        .watermark(2_001)
        .events(("k", b"e3", 3_000))
        .watermark(3_001)
        .processing_time(61_000)
        .watermark(4_000)
        .processing_time(61_000)
        .watermark(5_000)
    )

    by_timeout = _run(script)

    assert by_timeout.reasons() == ["suspension_timeout", "suspension_timeout"]
    assert [e.payload for e in by_timeout.errors] == [b"ask-1", b"ask-2"]
    assert _outputs(by_timeout) == [b"3|e3|3000|-|e3"]
    approvals = [i.intent_id for i in by_timeout.intents if i.awaits_answer]
    assert approvals == [ASK_1, ask_2]

    answered_then_timed_out = _run(
        Script()
        .events(("k", b"ask-1", 1_000))
        .watermark(1_001)
        .events(("k", b"ask-2", 2_000))
        .watermark(2_001)
        .events(("k", b"e3", 3_000))
        .watermark(3_001)
        .answers(("k", ASK_1, b"yes", 4_000))
        .watermark(4_001)
        .processing_time(61_000)
        .watermark(5_000)
    )

    assert answered_then_timed_out.reasons() == ["suspension_timeout"]
    assert answered_then_timed_out.errors[0].payload == b"ask-2"
    assert _outputs(answered_then_timed_out) == [
        b"1|ask-1|1000|yes|ask-1",
        b"3|e3|3000|-|ask-1,e3",
    ]
