"""A key's three memory cells in a test, committed to as the runtime commits to them.

`beam_agents.runtime._paths.commit` writes what `ResidentMemory.commit`
decides: a delta appended to MEMORY_LOG or a new MEMORY (the log cleared),
and the new MEMORY_HEAD. These tests drive the memory layer without a
runner, so this does the same with plain values. Beside it, the random
facade operations the property tests run on it and on a reference facade.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from beam_agents.coders import encode_deterministic
from beam_agents.memory import Memory, MemoryOverflow
from beam_agents.memory.compaction import Compactor
from beam_agents.memory.delta import fold_blob
from beam_agents.memory.resident import ResidentMemory, Stored
from beam_agents.proto import MemoryBlob

__all__ = ["KEYS", "OPS", "StoredMemory", "apply_op"]

KEYS = st.sampled_from(["a", "b", "c", "log", "é/ü", "", "k" * 200])
OPS = st.one_of(
    st.tuples(st.just("set"), KEYS, st.integers(0, 300)),
    st.tuples(st.just("append"), KEYS, st.integers(0, 300), st.integers(1, 4)),
    st.tuples(st.just("delete"), KEYS),
    st.tuples(st.just("get"), KEYS),
    st.tuples(st.just("ring"), KEYS),
)
"""One facade operation: a write, an append to a ring, a delete or a read."""


def apply_op(memory: Memory, op: tuple[object, ...]) -> None:
    """Run one of `OPS`; what the facade refuses (a kind mismatch, the hard cap) is skipped."""
    kind, key = op[0], str(op[1])
    try:
        if kind == "set":
            memory.set(key, b"s" * int(str(op[2])))
        elif kind == "append":
            memory.append(key, b"i" * int(str(op[2])), max_items=int(str(op[3])))
        elif kind == "delete":
            memory.delete(key)
        elif kind == "get":
            memory.get(key)
        else:
            memory.ring(key)
    except (TypeError, MemoryOverflow):
        pass


@dataclass
class _Value:
    value: bytes | None = None

    def read(self) -> bytes | None:
        return self.value


@dataclass
class _Values:
    values: list[bytes] = field(default_factory=list)

    def read(self) -> list[bytes]:
        return list(self.values)


@dataclass
class StoredMemory:
    """MEMORY, MEMORY_LOG and MEMORY_HEAD of one key, and how often each commit path ran."""

    scope: str = "t"
    key: bytes = b"k"
    memory: _Value = field(default_factory=_Value)
    log: _Values = field(default_factory=_Values)
    head: _Value = field(default_factory=_Value)
    appends: int = 0
    rewrites: int = 0
    stored: Stored = field(default_factory=lambda: Stored(None, None))
    """What the last open read, which the next commit builds on."""

    def open(
        self, resident: ResidentMemory, now_ms: int, compactor: Compactor | None = None
    ) -> Memory:
        memory, self.stored = resident.open(
            self.scope,
            self.key,
            self.memory,
            self.head,
            self.log,
            now_ms=now_ms,
            compactor=compactor,
        )
        return memory

    def give_back(self, resident: ResidentMemory, memory: Memory) -> None:
        """End an activation that commits no memory (a park, a failure), as the runtime does."""
        resident.give_back(self.scope, self.key, memory)

    def commit(self, resident: ResidentMemory, memory: Memory) -> None:
        if not memory.dirty:
            self.give_back(resident, memory)
            return
        if not len(memory):
            resident.forget(self.scope, self.key)
            self.memory.value, self.log.values, self.head.value = None, [], None
            return
        write = resident.commit(self.scope, self.key, memory, self.stored)
        if write.appended:
            self.log.values.append(write.value)
            self.appends += 1
        else:
            self.memory.value = write.value
            if write.clear_log:
                self.log.values = []
            self.rewrites += 1
        self.head.value = write.head

    def folded(self) -> MemoryBlob | None:
        base = MemoryBlob.FromString(self.memory.value) if self.memory.value else None
        return fold_blob(base, self.log.values)

    def folded_bytes(self) -> bytes:
        blob = self.folded()
        return encode_deterministic(blob) if blob is not None else b""
