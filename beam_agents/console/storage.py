"""An entity's long-term rows, read-only, through the store's public API.

The console never writes to the store: it opens it per page view, lists at
most `ROW_LIMIT` rows of one entity, and shows a failure as text on the
page rather than failing the page (the store may be down while the run is
fine).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ROW_LIMIT", "longterm_rows"]

ROW_LIMIT = 100


async def longterm_rows(uri: str | None, entity: str) -> tuple[list[dict[str, Any]], str]:
    """The entity's rows as `{key, seq, updated_at_ms, value}` and an error text ('' if none)."""
    if uri is None:
        return [], ""
    from beam_agents.errors import BeamAgentsError
    from beam_agents.memory.stores import open_store

    try:
        async with open_store(uri) as store:
            records = await store.search(entity.encode(), "", ROW_LIMIT)
    except (BeamAgentsError, OSError) as exc:
        return [], f"{type(exc).__name__}: the long-term store could not be read"
    return [
        {
            "key": r.key,
            "seq": r.seq,
            "updated_at_ms": r.updated_at_ms,
            "value": r.value.decode("utf-8", "replace"),
        }
        for r in records
    ], ""
