"""`beam-agents`: provision, migrate and inspect long-term stores from a shell.

These are operator tasks that must never happen inside a pipeline: creating
tables (nothing is auto-created at runtime), copying rows between backends,
and looking at what an entity has stored. Every message names stores by
their redacted URI; exit codes are 0 for success, 2 for a usage or
configuration error, 1 for a store error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TextIO

from beam_agents.errors import BeamAgentsError, ConfigurationError
from beam_agents.memory.stores import MemoryRecord, MemoryStore, open_store, redact_uri
from beam_agents.memory.stores.base import MAX_SEARCH_LIMIT
from beam_agents.memory.stores.uri import uri_secrets

__all__ = ["main"]

EXIT_OK, EXIT_STORE_ERROR, EXIT_USAGE = 0, 1, 2
_PREVIEW_BYTES = 48
_MAX_BUFFERED_ROWS = 10_000


class _UsageError(Exception):
    """A command line that parses but cannot be acted on."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="beam-agents", description="Operate beam-agents long-term memory stores."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    provision = commands.add_parser(
        "provision", help="create the table/family a store needs (idempotent)"
    )
    provision.add_argument("uri", help="store URI, as in AgentConfig.longterm_memory")

    migrate = commands.add_parser(
        "migrate-store", help="copy every row verbatim; seq-guarded, so safe to re-run"
    )
    migrate.add_argument("source", metavar="FROM", help="store URI to read")
    migrate.add_argument("target", metavar="TO", help="store URI to write (provisioned)")
    migrate.add_argument(
        "--batch-size", type=_positive, default=100, help="rows per upsert_many (default 100)"
    )

    inspect = commands.add_parser("inspect", help="list an entity's rows")
    inspect.add_argument("uri", help="store URI")
    entity = inspect.add_mutually_exclusive_group(required=True)
    entity.add_argument("--entity", help="entity key as UTF-8 text")
    entity.add_argument("--entity-hex", help="entity key as hex bytes")
    inspect.add_argument("--prefix", default="", help="only keys starting with this (literal)")
    inspect.add_argument(
        "--limit", type=_limit, default=100, help=f"at most this many rows (<= {MAX_SEARCH_LIMIT})"
    )
    return parser


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _limit(text: str) -> int:
    value = _positive(text)
    if value > MAX_SEARCH_LIMIT:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_SEARCH_LIMIT}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the process exit code."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    uris = [u for u in (getattr(args, n, None) for n in ("uri", "source", "target")) if u]
    try:
        if args.command == "provision":
            asyncio.run(_provision(args.uri))
        elif args.command == "migrate-store":
            asyncio.run(_migrate(args.source, args.target, batch_size=args.batch_size))
        else:
            entity = _entity_key(args.entity, args.entity_hex)
            asyncio.run(_inspect(args.uri, entity, prefix=args.prefix, limit=args.limit))
    except (ConfigurationError, _UsageError) as exc:
        _error(str(exc), uris)
        return EXIT_USAGE
    except BeamAgentsError as exc:
        _error(str(exc), uris)
        return EXIT_STORE_ERROR
    except Exception as exc:  # a client library's own failure: report it, never its secrets
        _error(f"{type(exc).__name__}: {exc}", uris)
        return EXIT_STORE_ERROR
    return EXIT_OK


def _error(message: str, uris: Iterable[str]) -> None:
    """Print an error, scrubbing any password of the URIs involved from it."""
    for uri in uris:
        message = message.replace(uri, redact_uri(uri))
        for secret in uri_secrets(uri):
            message = message.replace(secret, "***")
    print(f"beam-agents: error: {message}", file=sys.stderr)


def _entity_key(text: str | None, hex_text: str | None) -> bytes:
    if hex_text is None:
        return (text or "").encode("utf-8")
    try:
        return bytes.fromhex(hex_text)
    except ValueError:
        raise _UsageError(f"--entity-hex is not hex: {hex_text!r}") from None


async def _provision(uri: str) -> None:
    store = open_store(uri)
    try:
        await store.provision()
    finally:
        await store.close()
    print(f"provisioned {redact_uri(uri)}")


@dataclass
class _Counts:
    read: int = 0
    applied: int = 0
    skipped: int = 0


async def _migrate(source_uri: str, target_uri: str, *, batch_size: int) -> _Counts:
    """Copy rows with the target's own seq guard, so a re-run or resume is harmless."""
    source, target = open_store(source_uri), open_store(target_uri)
    counts = _Counts()
    progress = _Progress(sys.stderr)
    pending: dict[bytes, list[MemoryRecord]] = {}
    buffered = 0
    try:
        async for entity_key, record in source.scan():
            counts.read += 1
            batch = pending.setdefault(entity_key, [])
            batch.append(record)
            buffered += 1
            if len(batch) >= batch_size:
                buffered -= await _flush(target, entity_key, pending.pop(entity_key), counts)
            if buffered >= _MAX_BUFFERED_ROWS:
                # scan order is unspecified: bound memory when entities interleave.
                for key in list(pending):
                    buffered -= await _flush(target, key, pending.pop(key), counts)
            progress.update(counts.read)
        for key in list(pending):
            await _flush(target, key, pending.pop(key), counts)
    finally:
        await source.close()
        await target.close()
    progress.done(counts.read)
    print(
        f"migrated {redact_uri(source_uri)} -> {redact_uri(target_uri)}: "
        f"rows read {counts.read}, applied {counts.applied}, "
        f"skipped by seq guard {counts.skipped}"
    )
    return counts


async def _flush(
    target: MemoryStore, entity_key: bytes, records: list[MemoryRecord], counts: _Counts
) -> int:
    applied = await target.upsert_many(entity_key, records)
    counts.applied += sum(applied)
    counts.skipped += len(applied) - sum(applied)
    return len(records)


class _Progress:
    """A row counter on stderr, at most a few times a second."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._last = 0.0

    def update(self, rows: int) -> None:
        now = time.monotonic()
        if now - self._last >= 0.5:
            self._last = now
            self._stream.write(f"\rread {rows} rows ...")
            self._stream.flush()

    def done(self, rows: int) -> None:
        self._stream.write(f"\rread {rows} rows, done\n")
        self._stream.flush()


async def _inspect(uri: str, entity_key: bytes, *, prefix: str, limit: int) -> None:
    store = open_store(uri)
    try:
        records = await store.search(entity_key, prefix, limit)
    finally:
        await store.close()
    print(f"{'key':<32} {'seq':>12} {'updated_at_ms':>14} {'bytes':>8}  value")
    for record in records:
        key = json.dumps(record.key, ensure_ascii=False)
        print(
            f"{key:<32} {record.seq:>12} {record.updated_at_ms:>14} "
            f"{len(record.value):>8}  {_preview(record.value)}"
        )
    more = " (limit reached: raise --limit to see more)" if len(records) == limit else ""
    print(f"{len(records)} row(s) of entity {entity_key!r} in {redact_uri(uri)}{more}")


def _preview(value: bytes) -> str:
    """Text when the value's start is printable UTF-8, else hex; marked when cut."""
    head = value[:_PREVIEW_BYTES]
    cut = "…" if len(value) > len(head) else ""
    for trim in range(4):  # a multi-byte character may straddle the cut
        try:
            text = head[: len(head) - trim].decode("utf-8")
        except UnicodeDecodeError:
            continue
        if text.isprintable():
            return json.dumps(text, ensure_ascii=False) + cut
        break
    return (
        "0x" + head[: _PREVIEW_BYTES // 2].hex() + ("…" if len(value) > _PREVIEW_BYTES // 2 else "")
    )


if __name__ == "__main__":
    sys.exit(main())
