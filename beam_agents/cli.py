"""`beam-agents`: provision, migrate, inspect and recall from long-term stores; serve the console.

These are operator tasks that must never happen inside a pipeline: creating
tables (nothing is auto-created at runtime), copying rows between backends,
and looking at what an entity has stored. Every message names stores by
their redacted URI and problems by the argument that caused them (`URI`,
`FROM`, `TO`); exit codes are 0 for success, 2 for a usage or configuration
error, 1 for a store error.

The command never builds a pipeline, so it never imports Apache Beam, and it
imports asyncio and the store modules only once a command is chosen:
`beam-agents --help` answers in a fraction of a second
(`benchmarks/bench_cli.py`). `console` imports its web framework only when
it runs (`beam_agents.console`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO

from beam_agents import __version__
from beam_agents import row_display as display
from beam_agents.errors import BeamAgentsError, ConfigurationError
from beam_agents.memory.stores.base import MAX_SEARCH_LIMIT
from beam_agents.memory.stores.errors import StoreNotProvisionedError
from beam_agents.memory.stores.uri import (
    StoreURI,
    parse_store_uri,
    redact_uri,
    refuse_in_memory_sqlite,
    uri_secrets,
)

if TYPE_CHECKING:
    from beam_agents.memory.stores.base import MemoryRecord, MemoryStore

__all__ = ["main"]

EXIT_OK, EXIT_STORE_ERROR, EXIT_USAGE = 0, 1, 2
#: The row `FlushToLongterm` writes by default; `inspect` shows its entries decoded.
_MAX_BUFFERED_ROWS = 10_000
_TTY_INTERVAL_S: Final = 0.2
_PLAIN_INTERVAL_S: Final = 5.0
_BAR_WIDTH: Final = 30


class _UsageError(Exception):
    """A command line that parses but cannot be acted on."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="beam-agents", description="Operate beam-agents long-term memory stores."
    )
    parser.add_argument("--version", action="version", version=f"beam-agents {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    provision = commands.add_parser(
        "provision",
        help="create the tables/families a store and its tool ledger need (idempotent)",
    )
    provision.add_argument(
        "uri", metavar="URI", help="store URI, as in AgentConfig.longterm_memory"
    )

    migrate = commands.add_parser(
        "migrate-store", help="copy every row verbatim; seq-guarded, so safe to re-run"
    )
    migrate.add_argument("source", metavar="FROM", help="store URI to read")
    migrate.add_argument("target", metavar="TO", help="store URI to write (provisioned)")
    migrate.add_argument(
        "--batch-size", type=_positive, default=100, help="rows per upsert_many (default 100)"
    )

    inspect = commands.add_parser("inspect", help="list an entity's rows, or the entities")
    inspect.add_argument("uri", metavar="URI", help="store URI")
    entity = inspect.add_mutually_exclusive_group(required=True)
    entity.add_argument("--entity", help="entity key as UTF-8 text")
    entity.add_argument("--entity-hex", help="entity key as hex bytes")
    entity.add_argument(
        "--entities", action="store_true", help="list the store's entity keys (up to --limit)"
    )
    inspect.add_argument("--prefix", default="", help="only keys starting with this (literal)")
    inspect.add_argument(
        "--limit", type=_limit, default=100, help=f"at most this many rows (<= {MAX_SEARCH_LIMIT})"
    )
    inspect.add_argument("--full", action="store_true", help="show values whole, not cut")
    inspect.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per line (values as UTF-8 text, else base64 as value_b64)",
    )
    from beam_agents.recall_command import add_arguments as add_recall  # argparse only

    add_recall(commands.add_parser("recall", help="an entity's records nearest a query"))
    _add_console(commands)
    _add_eval(commands)
    return parser


def _add_console(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from beam_agents.console.serve import add_arguments  # argparse only: no web framework

    add_arguments(
        commands.add_parser(
            "console", help="approvals and activity of a run in a browser (console extra)"
        )
    )


def _add_eval(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from beam_agents.eval.cli import add_arguments  # argparse only: no Apache Beam

    add_arguments(
        commands.add_parser(
            "eval", help="replay recorded events through candidate agents; score, compare, gate"
        )
    )


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
    if args.command == "console":
        return _console(args)
    if args.command == "eval":
        from beam_agents.eval.cli import run as run_eval

        return run_eval(args)
    uris = [u for u in (getattr(args, n, None) for n in ("uri", "source", "target")) if u]
    import asyncio  # only now: `--help` and `--version` need no event loop

    try:
        if args.command == "provision":
            asyncio.run(_provision(args.uri))
        elif args.command == "migrate-store":
            asyncio.run(_migrate(args.source, args.target, batch_size=args.batch_size))
        elif args.command == "recall":
            asyncio.run(_recall(args))
        elif args.entities:
            asyncio.run(_inspect_entities(args.uri, limit=args.limit, as_json=args.json))
        else:
            entity = _entity_key(args.entity, args.entity_hex)
            view = _View(full=args.full, as_json=args.json)
            asyncio.run(_inspect(args.uri, entity, prefix=args.prefix, limit=args.limit, view=view))
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


def _console(args: argparse.Namespace) -> int:
    from beam_agents.console.serve import run

    try:
        run(args)
    except ConfigurationError as exc:
        _error(str(exc), [args.longterm] if args.longterm else [])
        return EXIT_USAGE
    except KeyboardInterrupt:
        pass
    return EXIT_OK


def _error(message: str, uris: Iterable[str]) -> None:
    """Print an error, scrubbing any password of the URIs involved from it."""
    for uri in uris:
        message = message.replace(uri, redact_uri(uri))
        for secret in uri_secrets(uri):
            message = message.replace(secret, "***")
    print(f"beam-agents: error: {message}", file=sys.stderr)


def _parse(argument: str, uri: str) -> StoreURI:
    """Validate a URI argument; a problem names the argument, not `AgentConfig`."""
    try:
        return parse_store_uri(uri)
    except ConfigurationError as exc:
        raise _UsageError(f"{argument}: {exc.problem}") from None


def _open(argument: str, parsed: StoreURI, *, must_exist: bool) -> MemoryStore:
    """Open a store; with `must_exist`, a SQLite file that is not there is an error.

    SQLite creates a missing database file on connect: a typo in a path given
    to `inspect` or `migrate-store` would otherwise leave an empty file behind
    and report "no rows" or "not provisioned" about the wrong thing.
    """
    from beam_agents.memory.stores.factory import open_store

    missing = parsed.dialect == "sqlite" and parsed.path and not Path(parsed.path).is_file()
    if must_exist and missing:
        raise StoreNotProvisionedError(
            f"{argument}: no SQLite database at {parsed.path!r} (nothing was created); "
            f"check the path, or create it with `beam-agents provision {parsed.redacted}`"
        )
    try:
        return open_store(parsed)
    except ConfigurationError as exc:
        raise _UsageError(f"{argument}: {exc.problem}") from None


def _entity_key(text: str | None, hex_text: str | None) -> bytes:
    if hex_text is None:
        return (text or "").encode("utf-8")
    try:
        return bytes.fromhex(hex_text)
    except ValueError:
        raise _UsageError(f"--entity-hex is not hex: {hex_text!r}") from None


async def _provision(uri: str) -> None:
    parsed = _parse("URI", uri)
    try:
        refuse_in_memory_sqlite(
            parsed, "provision would create its table in a database that vanishes when it exits"
        )
    except ConfigurationError as exc:
        raise _UsageError(f"URI: {exc.problem}") from None
    async with _open("URI", parsed, must_exist=False) as store:
        await store.provision()
    # The tool ledger lives beside the store's rows and takes the same URI.
    from beam_agents.tools.ledger.factory import open_ledger

    async with open_ledger(parsed) as ledger:
        await ledger.provision()
    print(f"provisioned {redact_uri(uri)} (store and tool ledger)")


async def _recall(args: argparse.Namespace) -> None:
    from beam_agents.recall_command import RecallUsageError, recall, request_from

    try:
        request = request_from(args)
        parsed = _parse("STORE", request.uri)
        opened = lambda: _open("STORE", parsed, must_exist=True)  # noqa: E731
        await recall(request, opened, parsed.redacted, display.preview)
    except RecallUsageError as exc:
        raise _UsageError(str(exc)) from None


@dataclass
class _Counts:
    read: int = 0
    applied: int = 0
    skipped: int = 0


def _migration_endpoints(source_uri: str, target_uri: str) -> tuple[StoreURI, StoreURI]:
    """Parse FROM and TO, refusing pairs that cannot mean a real migration."""
    source, target = _parse("FROM", source_uri), _parse("TO", target_uri)
    for argument, parsed in (("FROM", source), ("TO", target)):
        if parsed.in_process:
            raise _UsageError(
                f"{argument}: {parsed.redacted} lives only inside this beam-agents process, "
                "which starts empty and keeps nothing when it exits; migrate between stores "
                "that outlive the command"
            )
    if _same_store(source, target):
        raise _UsageError(
            f"FROM and TO name the same store ({source.redacted}): every row would be read "
            "and written back onto itself"
        )
    return source, target


def _same_store(one: StoreURI, other: StoreURI) -> bool:
    if one.dialect == other.dialect == "sqlite":
        return Path(one.path).resolve() == Path(other.path).resolve()
    return one.uri == other.uri


async def _migrate(source_uri: str, target_uri: str, *, batch_size: int) -> _Counts:
    """Copy rows with the target's own seq guard, so a re-run or resume is harmless."""
    source_parsed, target_parsed = _migration_endpoints(source_uri, target_uri)
    async with contextlib.AsyncExitStack() as stores:
        # One at a time: when TO cannot be opened, FROM is closed on the way out.
        source = await stores.enter_async_context(_open("FROM", source_parsed, must_exist=True))
        target = await stores.enter_async_context(_open("TO", target_parsed, must_exist=True))
        counts = await _copy(source, target, batch_size=batch_size)
    print(
        f"migrated {redact_uri(source_uri)} -> {redact_uri(target_uri)}: "
        f"rows read {counts.read}, applied {counts.applied}, "
        f"skipped by seq guard {counts.skipped}"
    )
    return counts


async def _copy(source: MemoryStore, target: MemoryStore, *, batch_size: int) -> _Counts:
    """Every row of `source` upserted into `target` in per-entity batches, with progress."""
    counts = _Counts()
    pending: dict[bytes, list[MemoryRecord]] = {}
    buffered = 0
    progress: _Progress | None = None
    try:
        progress = _Progress(sys.stderr, await source.count_rows())
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
    except BaseException:
        if progress is not None:
            progress.abort()  # end the progress line before the error is printed
        raise
    progress.done(counts.read)
    return counts


async def _flush(
    target: MemoryStore, entity_key: bytes, records: list[MemoryRecord], counts: _Counts
) -> int:
    applied = await target.upsert_many(entity_key, records)
    counts.applied += sum(applied)
    counts.skipped += len(applied) - sum(applied)
    return len(records)


class _Progress:
    """Migration progress on stderr: a bar on a terminal, plain lines otherwise.

    On a terminal the line is redrawn in place (with a bar and a percentage
    when the source could count its rows) a few times a second; into a file
    or pipe it writes a whole line every few seconds, never a carriage
    return. Either way the line is ended before anything else is printed.
    """

    def __init__(
        self,
        stream: TextIO,
        total: int | None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._total = total
        self._clock = clock
        self._tty = stream.isatty()
        self._interval = _TTY_INTERVAL_S if self._tty else _PLAIN_INTERVAL_S
        # A terminal shows the first row at once; a log gets its first line after an interval.
        self._last = float("-inf") if self._tty else clock()
        self._open_line = False

    def update(self, rows: int) -> None:
        now = self._clock()
        if now - self._last < self._interval:
            return
        self._last = now
        if self._tty:
            self._stream.write(f"\r{self._bar(rows)}\x1b[K")
            self._open_line = True
        else:
            self._stream.write(f"{self._plain(rows)}\n")
        self._stream.flush()

    def done(self, rows: int) -> None:
        lead = "\r" if self._open_line else ""
        tail = "\x1b[K" if self._tty else ""
        self._stream.write(f"{lead}read {rows} rows, done{tail}\n")
        self._open_line = False
        self._stream.flush()

    def abort(self) -> None:
        if self._open_line:
            self._stream.write("\n")
            self._open_line = False
            self._stream.flush()

    def _bar(self, rows: int) -> str:
        if not self._total:
            return f"read {rows} rows ..."
        fraction = min(rows / self._total, 1.0)
        filled = round(fraction * _BAR_WIDTH)
        bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
        return f"[{bar}] {fraction:4.0%} {rows}/{self._total} rows"

    def _plain(self, rows: int) -> str:
        if not self._total:
            return f"read {rows} rows ..."
        return f"read {rows} of {self._total} rows ({min(rows / self._total, 1.0):.0%})"


@dataclass(frozen=True)
class _View:
    """How `inspect` prints rows: cut or whole values, a table or JSON lines."""

    full: bool = False
    as_json: bool = False


async def _inspect(
    uri: str, entity_key: bytes, *, prefix: str, limit: int, view: _View = _View()
) -> None:
    async with _open("URI", _parse("URI", uri), must_exist=True) as store:
        records = await store.search(entity_key, prefix, limit)
    more = " (limit reached: raise --limit to see more)" if len(records) == limit else ""
    summary = f"{len(records)} row(s) of entity {entity_key!r} in {redact_uri(uri)}{more}"
    if view.as_json:
        for record in records:
            print(json.dumps(display.row_json(entity_key, record), ensure_ascii=False))
        print(summary, file=sys.stderr)  # stdout stays one JSON object per line
        return
    print(f"{'key':<32} {'seq':>12} {'updated_at_ms':>14} {'bytes':>8}  value")
    for record in records:
        key = json.dumps(record.key, ensure_ascii=False)
        print(
            f"{key:<32} {record.seq:>12} {record.updated_at_ms:>14} "
            f"{len(record.value):>8}  {display.shown(record.value, view.full)}"
        )
        for entry in display.memory_entries(record) or []:
            print(f"    {display.entry_line(entry, view.full)}")
    print(summary)


async def _inspect_entities(uri: str, *, limit: int, as_json: bool) -> None:
    """Distinct entity keys, from a scan that stops once `limit` of them are seen."""
    seen: dict[bytes, None] = {}
    async with _open("URI", _parse("URI", uri), must_exist=True) as store:
        rows = store.scan()
        try:
            async for entity_key, _ in rows:
                seen.setdefault(entity_key)
                if len(seen) >= limit:
                    break
        finally:
            aclose = getattr(rows, "aclose", None)
            if aclose is not None:
                await aclose()
    more = " (limit reached: raise --limit to see more)" if len(seen) >= limit else ""
    for entity_key in sorted(seen):
        if as_json:
            print(json.dumps(display.entity_json(entity_key), ensure_ascii=False))
        else:
            print(display.entity_text(entity_key))
    print(
        f"{len(seen)} entity key(s) in {redact_uri(uri)}{more}",
        file=sys.stderr if as_json else sys.stdout,
    )


if __name__ == "__main__":
    sys.exit(main())
