"""`beam-agents inspect`: an entity's rows, the store's entity keys, or an entity's follow-ups.

Rows and entity keys come from a store; pending follow-ups from a
pipeline's lifecycle records (`--lifecycle`). Each prints as a table or JSON lines.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from beam_agents._instants import utc_text
from beam_agents.cli import _row_display as display
from beam_agents.cli._store_args import UsageError, open_argument, parse_argument
from beam_agents.memory.stores.uri import redact_uri

if TYPE_CHECKING:
    from beam_agents.runtime.pending_wakes import PendingFollowUp, WakeRecord

__all__ = ["View", "inspect", "inspect_entities", "inspect_follow_ups"]


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


def inspect_follow_ups(path: Path, entity_key: bytes, *, as_json: bool) -> None:
    """The entity's pending follow-ups, derived from a pipeline's lifecycle records.

    Pending wakes live in the pipeline's state, which only the pipeline
    reads; its records say what was scheduled and what fired or was
    cancelled since (`beam_agents.runtime.pending_wakes`).
    """
    from beam_agents.runtime.pending_wakes import WakeLedger, WakeRecordError

    source = _lifecycle_file(path)
    ledger, counts = WakeLedger(), Counter[str]()
    for where, record in _wake_records(source, entity_key.decode("utf-8", "replace")):
        try:
            ledger.take(record)
        except WakeRecordError as exc:
            raise WakeRecordError(f"{where}: {exc}") from None
        counts[record.action] += 1
    pending = ledger.pending
    if not as_json:
        print(
            f"{'name':<32} {'due (UTC)':<19}  {'clock':<10}  {'scheduled at (UTC)':<19}  {'seq':>6}"
        )
    for wake in pending:
        if as_json:
            row = {**display.entity_json(entity_key), **_follow_up_json(wake)}
            print(json.dumps(row, ensure_ascii=False))
        else:
            print(_follow_up_line(wake))
    tally = ", ".join(f"{counts[a]} {a}" for a in ("scheduled", "fired", "cancelled"))
    summary = f"{len(pending)} pending follow-up(s) of entity {entity_key!r} in {source} ({tally})"
    print(summary, file=sys.stderr if as_json else sys.stdout)


def _lifecycle_file(path: Path) -> Path:
    """`--lifecycle`: a JSON-lines file, or a run's records directory holding `lifecycle.jsonl`."""
    if path.is_dir():
        path = path / "lifecycle.jsonl"
        if not path.is_file():
            raise UsageError(f"--lifecycle: no lifecycle.jsonl in the directory {path.parent}")
    elif not path.is_file():
        raise UsageError(f"--lifecycle: no file or directory at {path}")
    return path


def _wake_records(path: Path, entity: str) -> Iterator[tuple[str, WakeRecord]]:
    """The entity's wake records in file order, each refused with its file and line.

    A last line without its newline is still being written (a live run) and
    is left for the next look, as the console leaves it.
    """
    from beam_agents.console.activity import entity_of
    from beam_agents.runtime.pending_wakes import WakeRecordError, wake_record_of_json

    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.endswith(b"\n") or not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                record = None
            if not isinstance(record, dict):
                raise WakeRecordError(f"{where}: not a JSON object")
            if entity_of(record) != entity:
                continue
            try:
                wake = wake_record_of_json(record)
            except WakeRecordError as exc:
                raise WakeRecordError(f"{where}: {exc}") from None
            if wake is not None:
                yield where, wake


def _follow_up_json(wake: PendingFollowUp) -> dict[str, object]:
    return {
        "name": wake.name,
        "due_ms": wake.due_ms,
        "clock": wake.clock,
        "scheduled_ms": wake.scheduled_ms,
        "scheduled_seq": wake.scheduled_seq,
    }


def _follow_up_line(wake: PendingFollowUp) -> str:
    due = utc_text(wake.due_ms, timespec="seconds")
    scheduled = utc_text(wake.scheduled_ms, timespec="seconds")
    name = json.dumps(wake.name, ensure_ascii=False)
    return f"{name:<32} {due:<19}  {wake.clock:<10}  {scheduled:<19}  {wake.scheduled_seq:>6}"
