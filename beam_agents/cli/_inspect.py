"""`beam-agents inspect`: an entity's rows, or the store's entity keys, as a table or JSON lines."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from beam_agents.cli import _row_display as display
from beam_agents.cli._store_args import open_argument, parse_argument
from beam_agents.memory.stores.uri import redact_uri

__all__ = ["View", "inspect", "inspect_entities"]


@dataclass(frozen=True)
class View:
    """How `inspect` prints rows: cut or whole values, a table or JSON lines."""

    full: bool = False
    as_json: bool = False


async def inspect(
    uri: str, entity_key: bytes, *, prefix: str, limit: int, view: View = View()
) -> None:
    """The entity's rows under `prefix`, with the working-memory row's entries decoded."""
    async with open_argument("URI", parse_argument("URI", uri), must_exist=True) as store:
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


async def inspect_entities(uri: str, *, limit: int, as_json: bool) -> None:
    """Distinct entity keys, from a scan that stops once `limit` of them are seen."""
    seen: dict[bytes, None] = {}
    async with open_argument("URI", parse_argument("URI", uri), must_exist=True) as store:
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
