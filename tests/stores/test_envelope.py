"""The shared row envelope: deterministic bytes, exact round trip, loud refusal."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from beam_agents.errors import StateDecodeError
from beam_agents.memory.stores import MemoryRecord
from beam_agents.memory.stores.envelope import STATE_SCHEMA_VERSION, decode_record, encode_record
from beam_agents.proto import LongTermRecord

GOLDEN = Path(__file__).parents[1] / "golden" / "v1" / "longterm_record.bin"

records = st.builds(
    MemoryRecord,
    key=st.text(),
    value=st.binary(max_size=512),
    seq=st.integers(min_value=0, max_value=2**63 - 1),
    updated_at_ms=st.integers(min_value=0, max_value=2**63 - 1),
)


@given(records)
def test_decode_inverts_encode(record: MemoryRecord) -> None:
    assert decode_record(encode_record(record)) == record


@given(records)
def test_encoding_is_deterministic(record: MemoryRecord) -> None:
    copy = MemoryRecord(record.key, bytes(record.value), record.seq, record.updated_at_ms)
    assert encode_record(record) == encode_record(copy)


def test_envelope_is_a_version_1_long_term_record() -> None:
    record = MemoryRecord(key="case/2024-11", value=b"summary", seq=42, updated_at_ms=7)
    message = LongTermRecord.FromString(encode_record(record))

    assert message.state_schema_version == STATE_SCHEMA_VERSION == 1
    assert (message.key, message.value, message.seq, message.updated_at_ms) == (
        "case/2024-11",
        b"summary",
        42,
        7,
    )
    assert encode_record(record) == message.SerializeToString(deterministic=True)


def test_golden_version_1_row_still_decodes() -> None:
    record = decode_record(GOLDEN.read_bytes())

    assert record.key == "case/2024-11"
    assert record.seq == 42
    assert encode_record(record) == GOLDEN.read_bytes()


def test_unknown_schema_version_is_refused_not_misread() -> None:
    future = LongTermRecord(state_schema_version=2, key="k", value=b"v", seq=1)

    with pytest.raises(StateDecodeError, match="state_schema_version 2"):
        decode_record(future.SerializeToString(deterministic=True))


def test_missing_schema_version_is_refused() -> None:
    with pytest.raises(StateDecodeError):
        decode_record(LongTermRecord(key="k").SerializeToString())


@pytest.mark.parametrize("garbage", [b"\xff\xff\xff", b"\x0a\x05ab", b"\x12\x02\xc3\x28"])
def test_bytes_that_are_not_an_envelope_raise_state_decode_error(garbage: bytes) -> None:
    with pytest.raises(StateDecodeError):
        decode_record(garbage)
