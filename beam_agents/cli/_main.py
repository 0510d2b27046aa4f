"""The `beam-agents` parser and dispatch: one function per command, imported once it is chosen.

Exit codes are 0 for success, 2 for a usage or configuration error, 1 for a
store error (or, for `inspect --lifecycle`, records a pipeline did not
write). A message names stores by their redacted URI, never a secret.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence

from beam_agents import __version__
from beam_agents.cli._store_args import UsageError, entity_key_of
from beam_agents.errors import BeamAgentsError, ConfigurationError
from beam_agents.memory.stores.base import MAX_SEARCH_LIMIT
from beam_agents.memory.stores.uri import redact_uri, uri_secrets

__all__ = ["main"]

EXIT_OK, EXIT_STORE_ERROR, EXIT_USAGE = 0, 1, 2
DEFAULT_LIMIT = 100
DESCRIPTION = (
    "Operate beam-agents: provision, migrate-store, inspect and recall work on long-term "
    "memory stores; console serves a run's approvals and activity in a browser; eval "
    "replays recorded events through candidate agents, scores and compares them, and gates."
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="beam-agents", description=DESCRIPTION)
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

    _add_inspect(commands)
    from beam_agents.cli._recall import add_arguments as add_recall  # argparse only

    add_recall(commands.add_parser("recall", help="an entity's records nearest a query"))
    _add_console(commands)
    _add_eval(commands)
    return parser


def _add_inspect(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    inspect = commands.add_parser(
        "inspect", help="list an entity's rows, or the entities; or its pending follow-ups"
    )
    inspect.add_argument("uri", metavar="URI", nargs="?", help="store URI")
    inspect.add_argument(
        "--lifecycle",
        metavar="PATH",
        help="instead of a store: list the entity's pending follow-ups from a pipeline's "
        "lifecycle records (a JSON-lines file, or the records directory holding lifecycle.jsonl)",
    )
    entity = inspect.add_mutually_exclusive_group(required=True)
    entity.add_argument("--entity", help="entity key as UTF-8 text")
    entity.add_argument("--entity-hex", help="entity key as hex bytes")
    entity.add_argument(
        "--entities", action="store_true", help="list the store's entity keys (up to --limit)"
    )
    inspect.add_argument("--prefix", default="", help="only keys starting with this (literal)")
    inspect.add_argument(
        "--limit", type=_limit, help=f"at most this many rows (<= {MAX_SEARCH_LIMIT}; default 100)"
    )
    inspect.add_argument("--full", action="store_true", help="show values whole, not cut")
    inspect.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per line (values as UTF-8 text, else base64 as value_b64)",
    )


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
    if args.command == "inspect":
        problem = _inspect_usage(args)
        if problem:
            _error(problem, [])
            return EXIT_USAGE
        if args.lifecycle is not None:
            return _follow_ups(args)
    if args.command == "console":
        return _console(args)
    if args.command == "eval":
        from beam_agents.eval.cli import run as run_eval

        return run_eval(args)
    uris = [u for u in (getattr(args, n, None) for n in ("uri", "source", "target")) if u]
    import asyncio  # only now: `--help` and `--version` need no event loop

    try:
        asyncio.run(_store_command(args))
    except (ConfigurationError, UsageError) as exc:
        _error(str(exc), uris)
        return EXIT_USAGE
    except BeamAgentsError as exc:
        _error(str(exc), uris)
        return EXIT_STORE_ERROR
    except Exception as exc:  # a client library's own failure: report it, never its secrets
        _error(f"{type(exc).__name__}: {exc}", uris)
        return EXIT_STORE_ERROR
    return EXIT_OK


async def _store_command(args: argparse.Namespace) -> None:
    """The store command `args` chose; its module is imported only now."""
    if args.command == "provision":
        from beam_agents.cli._provision import provision

        await provision(args.uri)
    elif args.command == "migrate-store":
        from beam_agents.cli._migrate import migrate

        await migrate(args.source, args.target, batch_size=args.batch_size)
    elif args.command == "recall":
        from beam_agents.cli._recall import run_recall

        await run_recall(args)
    elif args.entities:
        from beam_agents.cli._inspect import inspect_entities

        await inspect_entities(args.uri, limit=args.limit or DEFAULT_LIMIT, as_json=args.json)
    else:
        from beam_agents.cli._inspect import View, inspect

        entity = entity_key_of(args.entity, args.entity_hex)
        view = View(full=args.full, as_json=args.json)
        limit = args.limit or DEFAULT_LIMIT
        await inspect(args.uri, entity, prefix=args.prefix, limit=limit, view=view)


def _inspect_usage(args: argparse.Namespace) -> str:
    """Why `inspect`'s arguments cannot go together ('' when they can)."""
    if args.lifecycle is None:
        return "" if args.uri else "inspect: give a store URI, or --lifecycle PATH"
    given = [
        name
        for name, on in (
            ("URI", args.uri),
            ("--entities", args.entities),
            ("--prefix", args.prefix),
            ("--limit", args.limit is not None),
            ("--full", args.full),
        )
        if on
    ]
    if given:
        return (
            "inspect --lifecycle lists one entity's pending follow-ups from its records "
            f"(--entity or --entity-hex, and --json): {', '.join(given)} "
            f"{'is' if len(given) == 1 else 'are'} for a store"
        )
    return ""


def _follow_ups(args: argparse.Namespace) -> int:
    """`inspect --lifecycle`: exit 2 for a usage error, 1 for records a pipeline did not write."""
    from pathlib import Path

    from beam_agents.cli._inspect import inspect_follow_ups
    from beam_agents.runtime.pending_wakes import WakeRecordError

    try:
        entity = entity_key_of(args.entity, args.entity_hex)
        inspect_follow_ups(Path(args.lifecycle), entity, as_json=args.json)
    except UsageError as exc:
        _error(str(exc), [])
        return EXIT_USAGE
    except (WakeRecordError, OSError) as exc:
        _error(str(exc), [])
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
