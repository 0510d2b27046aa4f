"""`beam-agents recall`: an entity's records nearest a query, scored as an activation scores them.

An operator asking "what would the agent recall for this?" must get the
agent's answer, so the command reads the same candidates (`candidates`,
every record under the prefix, up to `MAX_RECALL_CANDIDATES`) and ranks
them with the same function (`score_records`: exact cosine, ties by key)
that `ctx.memory.longterm.recall` uses. Only the query is embedded, once,
by the embedder `--embedder` names; a record embedded by another model is
never compared, and the summary line says how many were skipped.

Without `--embedder`, the command takes the embedder the records name when
they all name one it can rebuild from that name (the name itself as a spec,
or the fake embedder's `fake-embed-N` as `fake:N`); otherwise it asks for
one rather than guess.

Imports stay inside the functions: the command imports this module to build
its parser, and `beam-agents --help` must not pay for numpy or an SDK.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from beam_agents._instants import utc_text
from beam_agents.cli._store_args import UsageError, open_argument, parse_argument

if TYPE_CHECKING:
    from beam_agents.memory.recall import Scored
    from beam_agents.memory.stores.base import Embedding, MemoryRecord, MemoryStore
    from beam_agents.model.embedders import Embedder

__all__ = [
    "RecallRequest",
    "RecallUsageError",
    "add_arguments",
    "recall",
    "request_from",
    "run_recall",
]

DEFAULT_K = 5
_FAKE_MODEL_ID = re.compile(r"fake-embed-([0-9]+)")


class RecallUsageError(UsageError):
    """A recall command line that parses but cannot be acted on (exit status 2)."""


@dataclass(frozen=True)
class RecallRequest:
    """One `beam-agents recall` invocation, validated."""

    uri: str
    entity_key: bytes
    query: str
    k: int
    prefix: str
    embedder: str | None
    min_score: float | None
    as_json: bool


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`recall`'s arguments."""
    parser.add_argument("uri", metavar="STORE", help="store URI")
    parser.add_argument(
        "entity", metavar="ENTITY", help="entity key as UTF-8 text (hex bytes with --entity-hex)"
    )
    parser.add_argument("query", metavar="QUERY", help="the text to recall by")
    parser.add_argument(
        "--entity-hex", action="store_true", help="ENTITY is the key's bytes in hex"
    )
    parser.add_argument(
        "--k", type=int, default=DEFAULT_K, help=f"how many records (default {DEFAULT_K})"
    )
    parser.add_argument("--prefix", default="", help="only keys starting with this (literal)")
    parser.add_argument(
        "--embedder",
        metavar="SPEC",
        help="embedder spec for the query (fake[:DIMS], local:MODEL, openai:MODEL, "
        "gemini:MODEL); default: the one the records name, when that is a spec",
    )
    parser.add_argument(
        "--min-score", type=float, help="leave out records less similar than this cosine"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per line (values as UTF-8 text, else base64 as value_b64)",
    )


def request_from(args: argparse.Namespace) -> RecallRequest:
    """The request `args` describe; a bad value is a `RecallUsageError` naming its argument."""
    from beam_agents.memory.recall import check_k, check_min_score, check_text
    from beam_agents.memory.stores.base import check_key

    if args.entity_hex:
        try:
            entity_key = bytes.fromhex(args.entity)
        except ValueError:
            raise RecallUsageError(f"ENTITY is not hex: {args.entity!r}") from None
    else:
        entity_key = args.entity.encode("utf-8")
    for what, check, value in (
        ("QUERY", lambda v: check_text(v, "the query"), args.query),
        ("--k", check_k, args.k),
        ("--prefix", check_key, args.prefix),
        ("--min-score", check_min_score, args.min_score),
    ):
        try:
            check(value)
        except ValueError as exc:
            raise RecallUsageError(f"{what}: {exc}") from None
    if not entity_key:
        raise RecallUsageError("ENTITY must not be empty")
    return RecallRequest(
        uri=args.uri,
        entity_key=entity_key,
        query=args.query,
        k=args.k,
        prefix=args.prefix,
        embedder=args.embedder,
        min_score=args.min_score,
        as_json=args.json,
    )


async def run_recall(args: argparse.Namespace) -> None:
    """`beam-agents recall` with `args`: the request checked, then `recall` on the store."""
    from beam_agents.cli._row_display import preview

    request = request_from(args)
    parsed = parse_argument("STORE", request.uri)
    opened = lambda: open_argument("STORE", parsed, must_exist=True)  # noqa: E731
    await recall(request, opened, parsed.redacted, preview)


async def recall(
    request: RecallRequest,
    open_store: Callable[[], MemoryStore],
    redacted_uri: str,
    show: Callable[[bytes], str],
) -> None:
    """Rank the entity's records against the query and print them.

    `open_store` opens the (existing) store, `redacted_uri` names it in
    messages, and `show` previews a value in the table, as `inspect` does.
    """
    from beam_agents.memory.recall import RecallTooLargeError, score_records
    from beam_agents.memory.stores.base import MAX_RECALL_CANDIDATES

    async with open_store() as store:
        records = await store.candidates(
            request.entity_key, request.prefix, MAX_RECALL_CANDIDATES + 1
        )
    if len(records) > MAX_RECALL_CANDIDATES:
        raise RecallUsageError(str(RecallTooLargeError(request.prefix)))
    embedded = [r for r in records if r.embedding is not None]
    spec = request.embedder or _inferred_spec(embedded)
    query = await _embed_query(spec, request.query)
    scored = score_records(query, records, request.k, request.min_score)
    _print(request, scored, query, records, redacted_uri, show)


def _inferred_spec(embedded: Sequence[MemoryRecord]) -> str:
    """The embedder the records name, when they name one and it rebuilds as a spec."""
    from beam_agents.model import embedder_from_spec

    names = sorted({r.embedding.model_id for r in embedded if r.embedding is not None})
    if len(names) != 1:
        found = f"records embedded by {', '.join(names)}" if names else "no embedded records"
        raise RecallUsageError(f"--embedder SPEC is needed: found {found}")
    name = names[0]
    fake = _FAKE_MODEL_ID.fullmatch(name)
    for spec in (name, f"fake:{fake.group(1)}") if fake else (name,):
        try:
            rebuilt = embedder_from_spec(spec)().model_id
        except Exception:  # not a spec: try the next reading, then ask
            rebuilt = None
        if rebuilt == name:
            return spec
    raise RecallUsageError(
        f"--embedder SPEC is needed: the records were embedded by {name!r}, "
        "which names no embedder spec"
    )


async def _embed_query(spec: str, query: str) -> Embedding:
    """The query's embedding by the embedder `spec` names; a bad spec is a usage error."""
    from beam_agents.errors import ConfigurationError
    from beam_agents.memory.stores.base import Embedding
    from beam_agents.model import embedder_from_spec
    from beam_agents.model.embedders import check_embedded, check_embedder, close_embedder

    try:
        embedder: Embedder = check_embedder(embedder_from_spec(spec)())
    except (ConfigurationError, ValueError) as exc:
        raise RecallUsageError(f"--embedder: {exc}") from None
    try:
        embedded = check_embedded(embedder, [query], await embedder.embed([query]))
    finally:
        await close_embedder(embedder)
    return Embedding.of(embedder.model_id, embedded.vectors[0])


def _updated_at(ms: int) -> str:
    """A record's `updated_at_ms` as an ISO 8601 UTC time, to the second.

    Records hold times up to 2**63 - 1 ms (an event at the end of Beam's
    global window): past year 9999 it reads as that year's last second.
    """
    return utc_text(ms, timespec="seconds") + "Z"


def _print(
    request: RecallRequest,
    scored: Scored,
    query: Embedding,
    records: Sequence[MemoryRecord],
    redacted_uri: str,
    show: Callable[[bytes], str],
) -> None:
    import base64

    without = sum(1 for r in records if r.embedding is None)
    summary = (
        f"{len(scored.recalled)} of {scored.compared} record(s) embedded by {query.model_id} "
        f"under prefix {request.prefix!r} of entity {request.entity_key!r} in {redacted_uri} "
        f"({scored.other_embedder} of another embedder skipped, {without} without a vector)"
    )
    if request.as_json:
        for rank, hit in enumerate(scored.recalled, start=1):
            record = hit.record
            try:
                value = {"value": record.value.decode("utf-8")}
            except UnicodeDecodeError:
                value = {"value_b64": base64.b64encode(record.value).decode()}
            row = {
                "rank": rank,
                "key": record.key,
                "score": round(hit.score, 6),
                "seq": record.seq,
                "updated_at_ms": record.updated_at_ms,
                "updated_at": _updated_at(record.updated_at_ms),
                "bytes": len(record.value),
                **value,
            }
            print(json.dumps(row, ensure_ascii=False))
        print(summary, file=sys.stderr)  # stdout stays one JSON object per line
        return
    print(f"{'rank':>4}  {'key':<32} {'score':>9}  {'updated_at':<20}  value")
    for rank, hit in enumerate(scored.recalled, start=1):
        record = hit.record
        key = json.dumps(record.key, ensure_ascii=False)
        print(
            f"{rank:>4}  {key:<32} {hit.score:>9.6f}  {_updated_at(record.updated_at_ms):<20}  "
            f"{show(record.value)}"
        )
    print(summary)
