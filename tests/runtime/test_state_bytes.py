"""What the runtime writes by hand is exactly what Beam and protobuf would have built."""

from __future__ import annotations

import pytest
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP, Timestamp

from beam_agents.coders import STATE_SCHEMA_VERSION, encode_deterministic
from beam_agents.proto.beam_agents_pb2 import SeqState
from beam_agents.runtime import _timestamps as timestamps
from beam_agents.runtime._cells import encode_seq, write_seq

_SEQS = [
    *range(0, 3_000),
    *(2**bits + step for bits in range(7, 63) for step in (-1, 0, 1)),
    2**63 - 1,
    -1,
    -(2**63),
]


@pytest.mark.parametrize("continuation_clear", [False, True])
def test_the_seq_cell_holds_protobufs_deterministic_bytes(continuation_clear: bool) -> None:
    for seq in _SEQS:
        message = SeqState(
            state_schema_version=STATE_SCHEMA_VERSION,
            seq=seq,
            continuation_clear=continuation_clear,
        )
        raw = encode_seq(seq, continuation_clear)
        assert raw == encode_deterministic(message), seq
        assert SeqState.FromString(raw) == message


@pytest.mark.parametrize("ttl_at_ms", [1, 127, 128, 1_796_028_951_000, 2**62, -5])
def test_a_seq_with_its_ttl_time_holds_protobufs_deterministic_bytes(ttl_at_ms: int) -> None:
    """SEQ as a commit writes it, spend and TTL time included, is protobuf's own encoding."""
    from beam_agents.proto.beam_agents_pb2 import TokenSpend
    from tests.runtime.recording import recording_cells

    spend = SeqState(spend=[TokenSpend(event_time_ms=5, tokens=7)])
    for continuation_clear in (False, True):
        cells = recording_cells()
        write_seq(
            cells,
            42,
            continuation_clear=continuation_clear,
            spend=encode_deterministic(spend),
            ttl_at_ms=ttl_at_ms,
        )
        message = SeqState(
            state_schema_version=STATE_SCHEMA_VERSION,
            seq=42,
            continuation_clear=continuation_clear,
            spend=spend.spend,
            ttl_at_ms=ttl_at_ms,
        )
        assert cells.seq.value == encode_deterministic(message)  # type: ignore[attr-defined]


_MILLIS = [0, 1, -1, 999, 1_000, -1_001, 1_700_000_000_123, 10**15, -(10**15), 2**62]


@pytest.mark.parametrize("assembled", [True, False])
def test_timer_timestamps_are_the_ones_beams_constructor_builds(
    assembled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Clamped to the global window either way; assembled only where Beam's fields match."""
    monkeypatch.setattr(
        timestamps, "_ASSEMBLES_EXACTLY", assembled and timestamps._ASSEMBLES_EXACTLY
    )
    low, high = MIN_TIMESTAMP.micros, GlobalWindow().max_timestamp().micros
    for ms in _MILLIS:
        built = timestamps.timer_timestamp(ms)
        expected = Timestamp(micros=min(max(ms * 1000, low), high))
        assert type(built) is Timestamp
        assert (built, vars(built)) == (expected, vars(expected)), ms
        assert built.micros == expected.micros


def test_this_beams_timestamps_are_assembled_directly() -> None:
    """The Beam pinned here keeps the fields the shortcut fills (else it falls back)."""
    assert timestamps._ASSEMBLES_EXACTLY
