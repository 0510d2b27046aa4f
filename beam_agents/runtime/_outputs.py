"""What an activation emits besides its output: dead letters and lifecycle records.

Every path of the lifecycle (an event, an answer, a poll, an expiry) ends
the same few ways, and each way has the same records when lifecycle records
are on. `Emitter` holds that choice once, so a path asks for a dead letter
or a record without testing whether records are on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, Literal

from apache_beam.pvalue import TaggedOutput

from beam_agents.errors import StateDecodeError
from beam_agents.proto.beam_agents_pb2 import BufferedEvent, MemoryBlob, ToolIntent
from beam_agents.runtime import lifecycle as trace
from beam_agents.runtime._cells import KeyCells, committed_size
from beam_agents.runtime._metrics import count_error
from beam_agents.runtime._paths.run import Run
from beam_agents.runtime._tracebacks import dead_letter_log
from beam_agents.runtime.errors import ActivationError

__all__ = [
    "ERRORS_TAG",
    "INTENTS_TAG",
    "DeadLetter",
    "Emitter",
    "IntentOutput",
    "Output",
    "Tagged",
    "committed_bytes",
    "dead_letter_of",
    "intent_output",
]

ERRORS_TAG: Final = "errors"
INTENTS_TAG: Final = "intents"

# Each tag with the type its output carries. Beam reads these from a DoFn's return
# annotation and types the tagged outputs by them (a tag must be a `Literal`), so the
# strings here are the tags above, written out. They are types only: calling one would
# build the same TaggedOutput through typing's machinery, at twice the cost per output.
DeadLetter = TaggedOutput[Literal["errors"], ActivationError]
IntentOutput = TaggedOutput[Literal["intents"], ToolIntent]
Tagged = DeadLetter | IntentOutput | trace.Record
Output = tuple[bytes, object] | Tagged
"""What a path emits: a tagged output, or a completion's `(entity_key, output)` (bytes, or a
typed RunAgent's validated result)."""


def intent_output(intent: ToolIntent) -> IntentOutput:
    """An intent, tagged for the `.intents` output."""
    return TaggedOutput(INTENTS_TAG, intent)


def committed_bytes(blob: MemoryBlob | None) -> int:
    """Working-memory bytes of a committed blob, as the records report them."""
    return blob.total_value_bytes if blob is not None else 0


def dead_letter_of(out: Sequence[Output]) -> tuple[str, str] | None:
    """The (reason, detail) of the dead letter among an attempt's outputs, if any."""
    for item in out:
        if isinstance(item, TaggedOutput) and item.tag == ERRORS_TAG:
            error: ActivationError = item.value
            return error.reason, error.detail
    return None


class Emitter:
    """Builds dead letters, and the lifecycle records that go with them when records are on."""

    __slots__ = ("hash_key", "lifecycle")

    def __init__(self, *, lifecycle: bool, hash_key: Callable[[bytes], str]) -> None:
        self.lifecycle = lifecycle
        self.hash_key = hash_key
        """How the dead-letter log shows an entity key: as the instance's spans do."""

    def error(
        self, entity_key: bytes, reason: str, detail: str, event_time_ms: int, payload: bytes = b""
    ) -> DeadLetter:
        """A dead letter on the errors output, counted and logged where it is made."""
        count_error(reason)
        error = ActivationError.of(entity_key, reason, detail, event_time_ms, payload)
        dead_letter_log.record(error, self.hash_key)
        return TaggedOutput(ERRORS_TAG, error)

    def dead_letter(self, error: DeadLetter, seq: int = 0, memory_bytes: int = 0) -> list[Output]:
        """`error`, followed with lifecycle records on by its `failed` record."""
        if not self.lifecycle:
            return [error]
        e: ActivationError = error.value
        failed = trace.record(
            e.entity_key, trace.FAILED, e.event_time_ms, seq, memory_bytes, e.reason
        )
        return [error, failed]

    def each_event(
        self,
        error: DeadLetter,
        coalesced: Sequence[BufferedEvent],
        seq: int = 0,
        memory_bytes: int = 0,
        time_ms: int | None = None,
    ) -> list[Output]:
        """`error`, and one like it for each event coalesced with its own (dead letters stay
        per event); each at the event's time, or `time_ms`."""
        out = self.dead_letter(error, seq, memory_bytes)
        e: ActivationError = error.value
        for held in coalesced:
            at = held.event_time_ms if time_ms is None else time_ms
            more = self.error(e.entity_key, e.reason, e.detail, at, held.event)
            out.extend(self.dead_letter(more, seq, memory_bytes))
        return out

    def refusal(
        self, entity_key: bytes, reason: str, detail: str, time_ms: int, payload: bytes = b""
    ) -> list[Output]:
        """A dead letter for an element refused before any activation ran."""
        return self.dead_letter(self.error(entity_key, reason, detail, time_ms, payload))

    def opened(self, run: Run, memory_bytes: int) -> Tagged:
        """The `opened` record of an activation that commits."""
        resumed = run.resumed.intent_id if run.resumed is not None else None
        if resumed is not None and run.approver is not None:
            resumed = f"{resumed} by {run.approver}"
        return trace.opened(
            run.entity_key,
            run.now_ms,
            run.seq,
            memory_bytes,
            resumed_intent=resumed,
            drained=run.drained,
        )

    def coalesced(self, run: Run, memory_bytes: int) -> list[Tagged]:
        """`activated` for each event that ran with the first (detail `coalesced`)."""
        return [
            trace.record(
                run.entity_key,
                trace.ACTIVATED,
                held.event_time_ms,
                run.seq,
                memory_bytes,
                trace.COALESCED_DETAIL,
            )
            for held in run.coalesced
        ]

    def memory_bytes(self, cells: KeyCells) -> int:
        """Committed working-memory size, read only for lifecycle records."""
        if not self.lifecycle:
            return 0
        try:
            return committed_size(cells)
        except StateDecodeError:
            return 0
