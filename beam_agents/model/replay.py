"""The replay cache: how a re-executed activation gets its model answers back.

Every `ctx.call_model` is keyed by a content hash of (request, entity key,
seq, call index). Two places remember answers:

- the LLM_CACHE state cell, committed atomically with the activation. Only a
  suspended activation's calls are kept there: its resume re-runs the agent
  at the same seq, and those calls must hit. After a Complete nothing at that
  seq or older can hit again, so the cell is pruned to empty;
- a bounded process-wide attempt memo. A bundle that failed after its model
  calls (a commit failure, a crashed flush) is retried by the runner against
  rolled-back state, so LLM_CACHE never saw those calls; the memo serves them
  when the retry lands in the same worker process. A retry on another worker
  calls the provider again, which is why agents must tolerate re-asking.

Keys include a per-transform token so two pipelines in one process (tests)
never share answers.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

from beam_agents.model.messages import LlmResponse
from beam_agents.proto.beam_agents_pb2 import CachedModelCall
from beam_agents.proto.beam_agents_pb2 import ReplayCache as ReplayCacheBlob

__all__ = ["ReplayCache", "ReplayLimits", "attempt_memo", "call_key"]

STATE_SCHEMA_VERSION: Final = 1


def call_key(request_bytes: bytes, entity_key: bytes, seq: int, index: int) -> str:
    """Content hash identifying one model call of one activation."""
    digest = hashlib.sha256()
    for part in (request_bytes, entity_key, str(seq).encode(), str(index).encode()):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class ReplayLimits:
    """Bounds on what LLM_CACHE keeps for a live suspension."""

    max_entries: int = 256
    max_bytes: int = 512 * 1024
    max_age_ms: int = 7 * 24 * 3_600_000


class ReplayCache:
    """One activation's view: committed calls first, then calls made this attempt."""

    __slots__ = ("_committed", "_new")

    def __init__(self, blob: ReplayCacheBlob | None) -> None:
        self._committed: dict[str, CachedModelCall] = {}
        if blob is not None:
            for call in blob.calls:
                self._committed[call.call_key] = call
        self._new: list[CachedModelCall] = []

    def lookup(self, key: str) -> LlmResponse | None:
        """A recorded answer for `key` from committed state, or None."""
        call = self._committed.get(key)
        if call is None:
            return None
        return LlmResponse(
            response=call.response,
            model_id=call.model_id,
            input_tokens=call.input_tokens,
            output_tokens=call.output_tokens,
            stop_reason=call.stop_reason,
        )

    def record(self, key: str, seq: int, response: LlmResponse, now_ms: int) -> None:
        """Stage a provider answer; it is committed only with the activation."""
        self._new.append(
            CachedModelCall(
                call_key=key,
                seq=seq,
                response=response.response,
                model_id=response.model_id,
                input_tokens=response.input_tokens,
                output_tokens=response.output_tokens,
                recorded_at_ms=now_ms,
                stop_reason=response.stop_reason,
            )
        )

    @property
    def had_committed(self) -> bool:
        """Whether LLM_CACHE held anything when the activation started."""
        return bool(self._committed)

    def for_commit(
        self, keep_seq: int | None, now_ms: int, limits: ReplayLimits
    ) -> ReplayCacheBlob:
        """What LLM_CACHE should hold after this activation commits.

        Only calls at `keep_seq` (a live suspension's seq) can ever hit again;
        everything else is pruned. Within that, the newest calls win the
        entry, byte and age bounds; a pruned call is simply asked again.
        """
        blob = ReplayCacheBlob(state_schema_version=STATE_SCHEMA_VERSION)
        if keep_seq is None:
            return blob
        merged: dict[str, CachedModelCall] = {}
        for call in (*self._committed.values(), *self._new):
            if call.seq == keep_seq and now_ms - call.recorded_at_ms <= limits.max_age_ms:
                merged[call.call_key] = call
        kept: list[CachedModelCall] = []
        size = 0
        for call in reversed(list(merged.values())):
            size += len(call.response) + len(call.call_key)
            if len(kept) >= limits.max_entries or size > limits.max_bytes:
                break
            kept.append(call)
        blob.calls.extend(reversed(kept))
        return blob


class _AttemptMemo:
    """Process-wide, bounded memory of recent answers, keyed by (token, call key)."""

    def __init__(self, max_entries: int = 4096, max_bytes: int = 64 * 1024 * 1024) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, str], LlmResponse] = OrderedDict()
        self._bytes = 0
        self._max_entries = max_entries
        self._max_bytes = max_bytes

    def get(self, token: str, key: str) -> LlmResponse | None:
        with self._lock:
            return self._entries.get((token, key))

    def put(self, token: str, key: str, response: LlmResponse) -> None:
        with self._lock:
            old = self._entries.pop((token, key), None)
            if old is not None:
                self._bytes -= len(old.response)
            self._entries[(token, key)] = response
            self._bytes += len(response.response)
            while self._entries and (
                len(self._entries) > self._max_entries or self._bytes > self._max_bytes
            ):
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= len(dropped.response)


attempt_memo: Final = _AttemptMemo()
