"""How the `beam-agents` command shows stored rows: previews, JSON lines, memory entries.

`inspect` and `recall` print the same rows, so what a value looks like on a
terminal (printable text, else hex, cut at a preview length) and in `--json`
(UTF-8 text, else base64) is decided once, here.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final, cast

if TYPE_CHECKING:
    from beam_agents.memory.stores.base import MemoryRecord

__all__ = [
    "entity_json",
    "entity_text",
    "entry_line",
    "memory_entries",
    "preview",
    "row_json",
    "shown",
]

PREVIEW_BYTES: Final = 48
RING_PREVIEW_ITEMS: Final = 3
WORKING_MEMORY_KEY: Final = "working_memory"


def entity_text(entity_key: bytes) -> str:
    """An entity as `--entity TEXT` when it is printable UTF-8, else as `--entity-hex HEX`."""
    text = _utf8(entity_key)
    if text is not None and text.isprintable():
        return f"--entity {json.dumps(text, ensure_ascii=False)}"
    return f"--entity-hex {entity_key.hex()}"


def entity_json(entity_key: bytes) -> dict[str, str]:
    text = _utf8(entity_key)
    return {"entity": text} if text is not None else {"entity_hex": entity_key.hex()}


def row_json(entity_key: bytes, record: MemoryRecord) -> dict[str, object]:
    row: dict[str, object] = {
        **entity_json(entity_key),
        "key": record.key,
        "seq": record.seq,
        "updated_at_ms": record.updated_at_ms,
        "bytes": len(record.value),
        **_value_json(record.value),
    }
    entries = memory_entries(record)
    if entries is not None:
        row["entries"] = entries
    return row


def _value_json(value: bytes, name: str = "value") -> dict[str, str]:
    """`{name: text}` for UTF-8 bytes, else `{name_b64: base64}`: the bytes as they are."""
    import base64

    text = _utf8(value)
    return {name: text} if text is not None else {f"{name}_b64": base64.b64encode(value).decode()}


def _utf8(value: bytes) -> str | None:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None


def memory_entries(record: MemoryRecord) -> list[dict[str, object]] | None:
    """The entries of a `working_memory` row (what `FlushToLongterm` writes), or None.

    None for any other row, or when the value is not a working-memory blob.
    """
    # Also a flush under a key of its own, FlushToLongterm(key="x/working_memory").
    if record.key.rpartition("/")[2] != WORKING_MEMORY_KEY:
        return None
    from google.protobuf.message import DecodeError

    from beam_agents.errors import StateDecodeError
    from beam_agents.memory.ring import RING, SCALAR, decode_ring
    from beam_agents.proto import MemoryBlob

    entries: list[dict[str, object]] = []
    try:
        for entry in MemoryBlob.FromString(record.value).entries:
            kind = entry.value[:1]
            shown: dict[str, object] = {"key": entry.key, "last_access_ms": entry.last_access_ms}
            if kind == bytes((RING,)):
                items = decode_ring(entry.key, entry.value)
                shown |= {"kind": "ring", "items": [_value_json(item) for item in items]}
            elif kind == bytes((SCALAR,)):
                shown |= {"kind": "scalar", **_value_json(entry.value[1:])}
            else:
                return None
            entries.append(shown)
    except (DecodeError, StateDecodeError):
        return None
    return entries


def entry_line(entry: dict[str, object], full: bool) -> str:
    """One working-memory entry in the table view: key, kind, value (or ring items)."""
    key = json.dumps(entry["key"], ensure_ascii=False)
    if entry["kind"] == "ring":
        items = cast(list[dict[str, str]], entry["items"])
        cells = [shown(_json_bytes(item), full) for item in items]
        if not full and len(cells) > RING_PREVIEW_ITEMS:
            cells = [*cells[:RING_PREVIEW_ITEMS], f"… {len(items) - RING_PREVIEW_ITEMS} more"]
        return f"{key} ring of {len(items)}: [{', '.join(cells)}]"
    return f"{key} scalar: {shown(_json_bytes(cast(dict[str, str], entry)), full)}"


def _json_bytes(fields: dict[str, str]) -> bytes:
    """Back from `_value_json`'s fields to the bytes."""
    import base64

    if "value" in fields:
        return fields["value"].encode("utf-8")
    return base64.b64decode(fields["value_b64"])


def shown(value: bytes, full: bool) -> str:
    """The whole value with `--full` (text, else hex), else a preview."""
    if not full:
        return preview(value)
    text = _utf8(value)
    if text is not None and text.isprintable():
        return json.dumps(text, ensure_ascii=False)
    return "0x" + value.hex()


def preview(value: bytes) -> str:
    """Text when the value's start is printable UTF-8, else hex; marked when cut."""
    head = value[:PREVIEW_BYTES]
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
        "0x" + head[: PREVIEW_BYTES // 2].hex() + ("…" if len(value) > PREVIEW_BYTES // 2 else "")
    )
