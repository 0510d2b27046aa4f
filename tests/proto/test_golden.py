"""Old state must still decode: the golden v1 corpus (additive-only schema rule)."""

from __future__ import annotations

from pathlib import Path

import pytest

from beam_agents.errors import StateDecodeError
from beam_agents.memory import Memory
from beam_agents.proto import beam_agents_pb2 as pb

GOLDEN = Path(__file__).parents[1] / "golden" / "v1"


def _read(name: str) -> bytes:
    return (GOLDEN / name).read_bytes()


def test_v1_memory_blob_still_decodes_into_the_facade() -> None:
    blob = pb.MemoryBlob.FromString(_read("memory_blob.bin"))
    memory = Memory(blob, now_ms=1)

    assert memory.keys() == ("profile", "recent", "__langgraph__/ckpt")
    assert memory.get("profile") == b"tier=gold"
    assert memory.ring("recent") == (b"evt-1", b"", b"evt-3")
    assert memory.get("__langgraph__/ckpt") == b""
    assert memory.size_bytes == blob.total_value_bytes == 25
    assert [e.last_access_ms for e in blob.entries] == [
        1_700_000_000_000,
        1_700_000_000_500,
        1_700_000_001_000,
    ]


def test_v1_messages_still_decode_field_by_field() -> None:
    record = pb.LongTermRecord.FromString(_read("longterm_record.bin"))
    assert (record.key, record.value, record.seq, record.updated_at_ms) == (
        "case/2024-11",
        b"summary bytes",
        42,
        1_700_000_002_000,
    )
    assert pb.SeqState.FromString(_read("seq_state.bin")).seq == 7

    call = pb.ReplayCache.FromString(_read("replay_cache.bin")).calls[0]
    assert (call.call_key, call.seq, call.response, call.model_id) == (
        "c0ffee",
        7,
        b"triage: low",
        "fake-1",
    )
    assert (call.input_tokens, call.output_tokens, call.recorded_at_ms) == (
        12,
        3,
        1_700_000_003_000,
    )

    intent = pb.ToolIntent.FromString(_read("tool_intent.bin"))
    assert intent.entity_key == b"ticket-17"
    assert (intent.seq, intent.index, intent.tool) == (7, 1, "page_oncall")
    assert intent.args_json == b'{"severity":"high"}'
    assert intent.awaits_answer is True

    cont = pb.Continuation.FromString(_read("continuation.bin"))
    assert (cont.seq, cont.intent_id, cont.event, cont.prompt) == (
        7,
        intent.intent_id,
        b"disk full",
        b"page?",
    )
    assert cont.deadline_ms == 1_700_000_604_000
    assert list(cont.reserved_indices) == [1]
    assert cont.suspended_at_ms == 1_700_000_004_000
    # Written before the suspension buffer existed: it reads as an empty buffer.
    assert list(cont.buffered) == []

    pending = pb.PendingIntents.FromString(_read("pending_intents.bin"))
    assert list(pending.intents) == [intent]

    error = pb.ErrorRecord.FromString(_read("error_record.bin"))
    assert (error.entity_key, error.reason, error.event_time_ms, error.payload) == (
        b"ticket-17",
        "activation_timeout",
        1_700_000_006_000,
        b"disk full",
    )


@pytest.mark.parametrize("name", sorted(p.name for p in GOLDEN.glob("*.bin")))
def test_v1_bytes_re_encode_identically(name: str) -> None:
    """Deterministic encoding today reproduces the shipped bytes exactly."""
    raw = _read(name)
    message_type = {
        "memory_blob.bin": pb.MemoryBlob,
        "longterm_record.bin": pb.LongTermRecord,
        "seq_state.bin": pb.SeqState,
        "seq_state_clear.bin": pb.SeqState,
        "seq_state_spend.bin": pb.SeqState,
        "seq_state_digest.bin": pb.SeqState,
        "replay_cache.bin": pb.ReplayCache,
        "tool_intent.bin": pb.ToolIntent,
        "continuation.bin": pb.Continuation,
        "continuation_buffered.bin": pb.Continuation,
        "continuation_parked.bin": pb.Continuation,
        "continuation_parked_fresh.bin": pb.Continuation,
        "continuation_parked_answers.bin": pb.Continuation,
        "continuation_parked_digest.bin": pb.Continuation,
        "continuation_wake.bin": pb.Continuation,
        "pending_wakes.bin": pb.PendingWakes,
        "pending_intents.bin": pb.PendingIntents,
        "error_record.bin": pb.ErrorRecord,
    }[name]

    assert message_type.FromString(raw).SerializeToString(deterministic=True) == raw


def test_v1_continuation_with_buffered_events_decodes_field_by_field() -> None:
    """The additive `buffered` field, frozen when it shipped."""
    old = pb.Continuation.FromString(_read("continuation.bin"))
    cont = pb.Continuation.FromString(_read("continuation_buffered.bin"))

    assert [(b.event, b.event_time_ms, b.event_id) for b in cont.buffered] == [
        (b"disk 91%", 1_700_000_005_000, "c07b812a-4b22-5769-8a13-57223d47f686"),
        (b"disk 97%", 1_700_000_006_000, "3e26b688-8870-57ac-949d-a2290c7edf8e"),
    ]
    del cont.buffered[:]
    assert cont == old


def test_v1_continuation_of_a_parked_resumption_decodes_field_by_field() -> None:
    """The additive `parked` field, frozen when it shipped: an answer whose run parked."""
    suspended = pb.Continuation.FromString(_read("continuation_buffered.bin"))
    cont = pb.Continuation.FromString(_read("continuation_parked.bin"))
    parked = cont.parked

    assert (parked.call_key, parked.element_time_ms, parked.answer) == (
        "9" * 64,
        1_700_000_007_000,
        b"yes",
    )
    assert (parked.drained, parked.answered, parked.expire_at_ms) == (True, 1, 1_700_001_000_000)
    assert not parked.HasField("prior_seq")
    assert pb.ReplayCache.FromString(parked.prior_cache) == pb.ReplayCache.FromString(
        _read("replay_cache.bin")
    )
    cont.ClearField("parked")
    assert cont == suspended


def test_v1_continuation_of_a_parked_fresh_event_decodes_field_by_field() -> None:
    """The additive `Parked.cache_clear` flag, frozen when it shipped: a first event's park."""
    cont = pb.Continuation.FromString(_read("continuation_parked_fresh.bin"))
    parked = cont.parked

    assert (cont.seq, cont.event, cont.event_time_ms) == (1, b"disk 99%", 1_700_000_008_000)
    assert [(b.event, b.event_time_ms) for b in cont.buffered] == [(b"disk 91%", 1_700_000_009_000)]
    assert (parked.call_key, parked.element_time_ms) == ("a" * 64, 1_700_000_008_000)
    assert parked.HasField("prior_seq")
    assert parked.prior_seq == b""
    assert parked.cache_clear
    assert not pb.Continuation.FromString(_read("continuation_parked.bin")).parked.cache_clear


def test_v1_continuation_with_answers_held_behind_a_park_decodes_field_by_field() -> None:
    """The additive `BufferedEvent.answer` field, frozen when it shipped: the park above
    with two answers (one signed for an approver) and one more event behind it."""
    fresh = pb.Continuation.FromString(_read("continuation_parked_fresh.bin"))
    cont = pb.Continuation.FromString(_read("continuation_parked_answers.bin"))
    first, second, event = cont.buffered[1:]

    assert [b.HasField("answer") for b in cont.buffered] == [False, True, True, False]
    intent = "9f0c1e5a-6b1d-5c7e-8a2f-3d4b5c6d7e8f"
    assert (first.event_time_ms, first.answer.intent_id) == (1_700_000_010_000, intent)
    assert (first.answer.answer, first.answer.approver) == (b"approve", "ada@example.com")
    assert (second.answer.answer, second.answer.HasField("approver")) == (b"deny", False)
    assert (first.event, first.event_id, second.event) == (b"", "", b"")
    assert (event.event, event.event_time_ms) == (b"disk 80%", 1_700_000_012_000)
    del cont.buffered[1:]
    assert cont == fresh


def test_v1_pending_wakes_decode_field_by_field() -> None:
    """The WAKES cell, frozen when it shipped."""
    wakes = pb.PendingWakes.FromString(_read("pending_wakes.bin")).wakes

    assert [(w.name, w.due_ms, w.processing_time, w.scheduled_seq, w.handed) for w in wakes] == [
        ("page-again", 1_700_000_900_000, True, 7, False),
        ("recheck/a-17", 1_700_000_600_000, False, 6, True),
    ]
    assert [w.payload for w in wakes] == [b"", b'{"alert":"a-17"}']


def test_v1_continuation_of_a_follow_up_decodes_field_by_field() -> None:
    """The additive `Continuation.wake` and `BufferedEvent.wake` fields, frozen when they
    shipped: a follow-up's run that suspended, and a follow-up due behind it."""
    buffered = pb.Continuation.FromString(_read("continuation_buffered.bin"))
    cont = pb.Continuation.FromString(_read("continuation_wake.bin"))

    assert (cont.wake.name, cont.wake.scheduled_seq, cont.wake.processing_time) == (
        "escalate/a-9",
        5,
        False,
    )
    held = cont.buffered[-1]
    assert (held.wake.name, held.wake.scheduled_seq) == ("recheck/a-17", 6)
    assert (held.event, held.event_time_ms) == (b'{"alert":"a-17"}', 1_700_000_600_000)
    assert not any(b.HasField("wake") for b in buffered.buffered)
    del cont.buffered[-1]
    cont.ClearField("wake")
    assert cont == buffered


def test_a_future_schema_version_is_refused_loudly() -> None:
    blob = pb.MemoryBlob.FromString(_read("incompatible/memory_blob_v2.bin"))

    with pytest.raises(StateDecodeError, match="state_schema_version 2"):
        Memory(blob, now_ms=1)


@pytest.mark.parametrize(
    "value",
    [b"", b"\x07junk", b"\x01\x05ab"],
    ids=["no-kind-byte", "unknown-kind", "truncated-ring"],
)
def test_corrupt_entries_are_refused_not_misread(value: bytes) -> None:
    blob = pb.MemoryBlob(state_schema_version=1)
    blob.entries.add(key="k", value=value)

    with pytest.raises(StateDecodeError, match="'k'"):
        Memory(blob, now_ms=1).ring("k")


def test_v1_memory_blob_re_encodes_to_its_golden_bytes() -> None:
    """Splicing unchanged entries writes exactly the bytes the golden blob was committed as."""
    golden = _read("memory_blob.bin")
    memory = Memory(pb.MemoryBlob.FromString(golden), now_ms=1)
    assert memory.to_bytes() == golden
    memory.ring("recent")  # decoding a ring does not change its bytes
    assert memory.to_bytes() == golden


def test_v1_seq_with_the_continuation_flag_decodes_and_old_seq_reads_as_unknown() -> None:
    """The additive `continuation_clear` flag, frozen when it shipped: a
    SEQ written before it reads as "unknown", which makes the next event read
    CONTINUATION as every earlier version did."""
    old = pb.SeqState.FromString(_read("seq_state.bin"))
    new = pb.SeqState.FromString(_read("seq_state_clear.bin"))

    assert (old.seq, old.continuation_clear) == (7, False)
    assert (new.state_schema_version, new.seq, new.continuation_clear) == (1, 8, True)


def test_v1_seq_with_a_token_spend_decodes_and_old_seq_has_none() -> None:
    """The additive `spend` field (per-key token budgets), frozen when it shipped:
    a SEQ written before it reads as a key that spent nothing."""
    old = pb.SeqState.FromString(_read("seq_state_clear.bin"))
    spend = pb.SeqState.FromString(_read("seq_state_spend.bin"))

    assert list(old.spend) == []
    assert (spend.seq, spend.continuation_clear) == (9, True)
    assert [(s.event_time_ms, s.tokens) for s in spend.spend] == [
        (1_700_000_001_000, 120),
        (1_700_000_002_000, 45),
    ]


def test_v1_memory_digest_in_seq_and_in_a_park_decodes_field_by_field() -> None:
    """The additive `memory_digest` fields, frozen when they shipped: SEQ as a commit
    writes it (the digest of the golden memory), and the first event's park carrying it."""
    from beam_agents.memory.resident import whole_digest
    from beam_agents.runtime._cells import encode_seq, encode_ttl_at

    digest = whole_digest(_read("memory_blob.bin"))
    seq = pb.SeqState.FromString(_read("seq_state_digest.bin"))
    assert (seq.seq, seq.continuation_clear, seq.ttl_at_ms) == (10, True, 1_700_001_800_000)
    assert seq.memory_digest == digest
    written = encode_seq(10, True) + encode_ttl_at(1_700_001_800_000) + b"\x3a\x10" + digest
    assert written == _read("seq_state_digest.bin")

    cont = pb.Continuation.FromString(_read("continuation_parked_digest.bin"))
    assert cont.parked.memory_digest == digest
    cont.parked.ClearField("memory_digest")
    assert cont == pb.Continuation.FromString(_read("continuation_parked_fresh.bin"))
    # Written before the field existed: no digest, so the re-run reads MEMORY.
    assert pb.SeqState.FromString(_read("seq_state_spend.bin")).memory_digest == b""
