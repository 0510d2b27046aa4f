"""Deterministic protobuf coders."""

from __future__ import annotations

import pickle

from beam_agents.coders import DeterministicProtoCoder
from beam_agents.proto import beam_agents_pb2 as pb


def test_proto_coder_round_trips_and_is_deterministic() -> None:
    coder = DeterministicProtoCoder(pb.ToolIntent)
    intent = pb.ToolIntent(intent_id="i", entity_key=b"k", seq=3, tool="t", args_json=b"{}")

    encoded = coder.encode(intent)

    assert coder.decode(encoded) == intent
    assert encoded == intent.SerializeToString(deterministic=True)
    assert coder.is_deterministic()
    assert coder.to_type_hint() is pb.ToolIntent


def test_proto_coders_compare_by_message_type_and_pickle() -> None:
    coder = DeterministicProtoCoder(pb.MemoryBlob)

    assert coder == DeterministicProtoCoder(pb.MemoryBlob)
    assert coder != DeterministicProtoCoder(pb.SeqState)
    assert hash(coder) == hash(DeterministicProtoCoder(pb.MemoryBlob))
    assert pickle.loads(pickle.dumps(coder)) == coder
