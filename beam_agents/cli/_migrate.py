"""`beam-agents migrate-store`: every row copied verbatim, under the target's own seq guard.

Copying with the seq guard makes a re-run, or a resume after a failure,
harmless: a row the target already holds at that seq or later is skipped.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from beam_agents.cli._progress import Progress
from beam_agents.cli._store_args import UsageError, open_argument, parse_argument
from beam_agents.memory.stores.uri import StoreURI, redact_uri

if TYPE_CHECKING:
    from beam_agents.memory.stores.base import MemoryRecord, MemoryStore

__all__ = ["Counts", "migrate"]

MAX_BUFFERED_ROWS = 10_000
"""Rows held before every entity's batch is flushed: scan order may interleave entities."""


@dataclass
class Counts:
    read: int = 0
    applied: int = 0
    skipped: int = 0


def _migration_endpoints(source_uri: str, target_uri: str) -> tuple[StoreURI, StoreURI]:
    """Parse FROM and TO, refusing pairs that cannot mean a real migration."""
    source, target = parse_argument("FROM", source_uri), parse_argument("TO", target_uri)
    for argument, parsed in (("FROM", source), ("TO", target)):
        if parsed.in_process:
            raise UsageError(
                f"{argument}: {parsed.redacted} lives only inside this beam-agents process, "
                "which starts empty and keeps nothing when it exits; migrate between stores "
                "that outlive the command"
            )
    if _same_store(source, target):
        raise UsageError(
            f"FROM and TO name the same store ({source.redacted}): every row would be read "
            "and written back onto itself"
        )
    return source, target


def _same_store(one: StoreURI, other: StoreURI) -> bool:
    if one.dialect == other.dialect == "sqlite":
        return Path(one.path).resolve() == Path(other.path).resolve()
    return one.uri == other.uri


async def migrate(source_uri: str, target_uri: str, *, batch_size: int) -> Counts:
    """Copy rows with the target's own seq guard, so a re-run or resume is harmless."""
    source_parsed, target_parsed = _migration_endpoints(source_uri, target_uri)
    async with contextlib.AsyncExitStack() as stores:
        # One at a time: when TO cannot be opened, FROM is closed on the way out.
        source = await stores.enter_async_context(
            open_argument("FROM", source_parsed, must_exist=True)
        )
        target = await stores.enter_async_context(
            open_argument("TO", target_parsed, must_exist=True)
        )
        counts = await _copy(source, target, batch_size=batch_size)
    print(
        f"migrated {redact_uri(source_uri)} -> {redact_uri(target_uri)}: "
        f"rows read {counts.read}, applied {counts.applied}, "
        f"skipped by seq guard {counts.skipped}"
    )
    return counts


async def _copy(source: MemoryStore, target: MemoryStore, *, batch_size: int) -> Counts:
    """Every row of `source` upserted into `target` in per-entity batches, with progress."""
    counts = Counts()
    pending: dict[bytes, list[MemoryRecord]] = {}
    buffered = 0
    progress: Progress | None = None
    try:
        progress = Progress(sys.stderr, await source.count_rows())
        async for entity_key, record in source.scan():
            counts.read += 1
            batch = pending.setdefault(entity_key, [])
            batch.append(record)
            buffered += 1
            if len(batch) >= batch_size:
                buffered -= await _flush(target, entity_key, pending.pop(entity_key), counts)
            if buffered >= MAX_BUFFERED_ROWS:
                # scan order is unspecified: bound memory when entities interleave.
                for key in list(pending):
                    buffered -= await _flush(target, key, pending.pop(key), counts)
            progress.update(counts.read)
        for key in list(pending):
            await _flush(target, key, pending.pop(key), counts)
    except BaseException:
        if progress is not None:
            progress.abort()  # end the progress line before the error is printed
        raise
    progress.done(counts.read)
    return counts


async def _flush(
    target: MemoryStore, entity_key: bytes, records: list[MemoryRecord], counts: Counts
) -> int:
    applied = await target.upsert_many(entity_key, records)
    counts.applied += sum(applied)
    counts.skipped += len(applied) - sum(applied)
    return len(records)
