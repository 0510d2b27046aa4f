"""Answers that arrive while their key is parked wait in its buffer, and change nothing."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from beam_agents import AgentConfig, intent_id
from beam_agents.answer_signing import approval_intent_id, signed_answer_bytes
from beam_agents.memory.stores.memory import InMemoryMemoryStore
from beam_agents.model import FakeLLM, Rule
from beam_agents.testing.chaos import fail_park_once
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime import agents

pytestmark = pytest.mark.pipeline

RUNTIME = "beam_agents.runtime"
PARK_RECORDS = ("parked", "buffered")


def _provider(name: str) -> FakeLLM:
    provider = FakeLLM(
        name=name,
        latency_s=0.05,
        default=b"ok",
        rules=(Rule(pattern="ask", response=b"sure"),),
    )
    provider.reset()
    return provider


def _script() -> Script:
    """Answers reach parked keys before any poll fires (the clock stands at 0 until the
    first processing-time move, and every poll is due at 1). The first call of a run
    runs in place (`w`), as the runtime learns whether the model's calls wait.

    b: its first event parks; the next asks for approval behind it, the answer to
    that approval comes next, then one more event: in place the answer resumes the
    approval and the last event runs after it. c: an answer nothing waits on.
    """
    script = Script().events(("w", b"warm up", 500)).watermark(600)
    script.events(("b", b"b1", 1_000), ("b", b"ask-b2", 1_001), ("c", b"c1", 1_000))
    script.answers(
        ("b", intent_id(b"b", 2, 0), b"yes", 1_002),
        ("c", intent_id(b"c", 1, 0), b"late", 1_002),
    )
    script.events(("b", b"b3", 1_003), ("c", b"c2", 1_003))
    script.watermark(2_000).processing_time(1_000)
    return script.events(("b", b"probe", 5_000), ("c", b"probe", 5_000)).watermark(10_000)


Rows = list[tuple[bytes, str, bytes, int, int]]


def _run(
    inflight: int, *, buffer: int = 64, script: Script | None = None, **more: Any
) -> tuple[StreamRun, Rows]:
    """The script through `triage_and_save`; what it emitted, and its long-term rows."""
    namespace = f"parked-answers-{inflight}-{uuid.uuid4().hex}"
    config = AgentConfig(
        provider_factory=_provider(f"parked-answers-{inflight}-{buffer}"),
        longterm_memory=f"memory://{namespace}",
        suspended_event_buffer=buffer,
        max_inflight_calls=inflight,
        **more,
    )
    run = run_script(
        agents.triage_and_save,
        config,
        script or _script(),
        clock_ms=agents.clock_just_ahead,
        lifecycle=True,
    )

    async def scan() -> Rows:
        store = InMemoryMemoryStore.shared(namespace)
        return [(k, r.key, r.value, r.seq, r.updated_at_ms) async for k, r in store.scan()]

    return run, sorted(asyncio.run(scan()))


def _unparked(run: StreamRun) -> list[bytes]:
    """The lifecycle but what parking adds (its records, and `drained` on what waited)."""
    kept = []
    for event in run.lifecycle:
        if event.kind in PARK_RECORDS:
            continue
        record = event.to_proto()
        if record.kind == "activated" and record.detail == "drained":
            record.detail = ""
        kept.append(record.SerializeToString(deterministic=True))
    return sorted(kept)


def _held_answers(run: StreamRun) -> list[tuple[bytes, int]]:
    """(key, time) of the `buffered` records written for answers (at the answers' times)."""
    return [
        (e.entity_key, e.event_time_ms)
        for e in run.lifecycle
        if e.kind == "buffered" and e.event_time_ms == 1_002
    ]


def _assert_same(parked: tuple[StreamRun, Rows], serial: tuple[StreamRun, Rows]) -> None:
    assert parked[0].fingerprint()[:3] == serial[0].fingerprint()[:3]
    assert _unparked(parked[0]) == _unparked(serial[0])
    assert parked[1] == serial[1]


def test_an_answer_for_a_parked_key_waits_in_its_buffer_and_ends_as_in_place() -> None:
    """Outputs, intents, errors, the lifecycle but parking's records, and long-term rows
    are byte-identical to max_inflight_calls=1; the probes' digests cover memory."""
    serial, parked = _run(1), _run(256)

    _assert_same(parked, serial)
    assert sorted(_held_answers(parked[0])) == [(b"b", 1_002), (b"c", 1_002)]
    assert _held_answers(serial[0]) == []
    # What the script meant to exercise did happen: b's approval was resumed by the
    # answer that waited, c's answer was orphaned, b3 ran after the resumption.
    assert "resumed" in serial[0].kinds()
    assert serial[0].reasons() == ["orphaned_answer"]
    outputs = [out for key, out in serial[0].outputs if key == b"b"]
    assert [out.split(b":")[0] for out in outputs] == [b"1", b"2", b"3", b"4"]


def test_a_retried_bundle_that_applied_a_held_answer_converges() -> None:
    """b3's park fails after the held answer resumed b's approval in the same bundle:
    the retry finds the answer still held and ends exactly as the clean run."""
    clean = _run(256)
    with fail_park_once(b"b", 3) as fault:
        faulty = _run(256)

    assert fault.fired == [(b"b", 3)]
    _assert_same(faulty, clean)
    assert faulty[0].fingerprint() == clean[0].fingerprint()


def test_an_answer_for_a_parked_key_with_a_full_buffer_waits_for_it_in_place() -> None:
    """One place in the buffer, taken by the event: the answer polls the key in place."""
    serial, parked = _run(1, buffer=1), _run(256, buffer=1)

    _assert_same(parked, serial)
    assert _held_answers(parked[0]) == [(b"c", 1_002)]  # c's buffer was empty
    assert "resumed" in serial[0].kinds()
    assert parked[0].counter(RUNTIME, "parks") > 0


KEY_ENV = "BEAM_AGENTS_TEST_PARKED_ANSWER_KEY"
KEY = "parked-answer-signing-key-0123456789abcdef"


def _signed_script() -> Script:
    ask = approval_intent_id(
        KEY.encode(),
        b"b",
        2,
        0,
        event=b"ask-b2",
        event_time_ms=1_001,
        prompt=b"sure",
        timeout_ms=60_000,
    )
    good = signed_answer_bytes(
        KEY.encode(),
        intent_id=ask,
        entity_key=b"b",
        answer="approve",
        approver="ada@example.com",
        expires_at_ms=60_000,
    )
    script = Script().events(("w", b"warm up", 500)).watermark(600)
    script.events(("b", b"b1", 1_000), ("b", b"ask-b2", 1_001))
    script.answers(("b", ask, b"forged", 1_002), ("b", ask, good, 1_002))
    script.events(("b", b"b3", 1_003)).watermark(2_000).processing_time(1_000)
    return script.events(("b", b"probe", 5_000)).watermark(10_000)


def test_a_signed_answer_for_a_parked_key_is_checked_on_arrival_and_keeps_its_approver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A forged answer is refused as it arrives; the verified one waits, and the
    `resumed` record still names its approver."""
    monkeypatch.setenv(KEY_ENV, KEY)
    signing = {"answer_signing_key": f"env:{KEY_ENV}"}
    serial = _run(1, script=_signed_script(), **signing)
    parked = _run(256, script=_signed_script(), **signing)

    _assert_same(parked, serial)
    assert serial[0].reasons() == ["unsigned_answer"]
    assert _held_answers(parked[0]) == [(b"b", 1_002)]  # only the verified one waited
    [resumed] = [e for e in parked[0].lifecycle if e.kind == "resumed"]
    assert resumed.detail.endswith(" by ada@example.com")
