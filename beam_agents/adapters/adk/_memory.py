"""ADK's memory service over the long-term tier (`ctx.memory.longterm`).

`add_session_to_memory` stages one record per text event under
`adk/memory/<session id>/<event id>`, flushed only if the activation
commits (the tier's blind upsert: the value is a function of the session,
so a re-run stages the same rows). With `AgentConfig.embedder` set, each
record carries its text's embedding and `search_memory` recalls by
meaning; without one, it matches records whose text holds a word of the
query (case-folded), newest keys last.

Trust: a record is read back as JSON of which only the text fields are
used, so a row someone else wrote can put words in front of the model and
nothing more. Under the job's signing key even that is refused: records
are sealed when saved and verified when recalled
(`beam_agents.state_signing`), and one that fails raises
`StateSignatureError` naming its key. ADK's `preload_memory` logs a failed
search and preloads nothing; `load_memory` hands the failure to the agent.
"""

from __future__ import annotations

import json
import re
from typing import Any

from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types

from beam_agents.adapters.adk._binding import bound
from beam_agents.memory.longterm import EmbedderNotConfigured
from beam_agents.memory.stores.base import MemoryRecord
from beam_agents.state_signing import open_sealed, seal

__all__ = ["MEMORY_PREFIX", "LongtermMemoryService"]

MEMORY_PREFIX = "adk/memory/"
_RECALL_K = 10
_SEARCH_LIMIT = 500
_WORD = re.compile(r"\w+")


class LongtermMemoryService(BaseMemoryService):
    """Saves a session's text events as long-term records and searches them."""

    async def add_session_to_memory(self, session: Session) -> None:
        ctx = bound().ctx
        longterm = ctx.memory.longterm
        for event in session.events:
            text = _text(event.content)
            if not text:
                continue
            key = f"{MEMORY_PREFIX}{session.id}/{event.id}"
            value = json.dumps(
                {"author": event.author, "text": text, "timestamp": event.timestamp},
                sort_keys=True,
                separators=(",", ":"),
                ensure_ascii=False,
            ).encode()
            value = seal(key, ctx.entity_key, value)
            try:
                longterm.save(key, value, text=text)
            except EmbedderNotConfigured:
                longterm.save(key, value)

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        longterm = bound().ctx.memory.longterm
        try:
            recalled = await longterm.recall(query, _RECALL_K, prefix=MEMORY_PREFIX)
            records = [found.record for found in recalled]
        except EmbedderNotConfigured:
            words = {word.casefold() for word in _WORD.findall(query)}
            records = [
                record
                for record in await longterm.search(MEMORY_PREFIX, _SEARCH_LIMIT)
                if words & {w.casefold() for w in _WORD.findall(_stored(record).get("text", ""))}
            ]
        return SearchMemoryResponse(memories=[_entry(record) for record in records])


def _text(content: types.Content | None) -> str:
    if content is None:
        return ""
    return "".join(part.text or "" for part in content.parts or [] if not part.thought)


def _stored(record: MemoryRecord) -> dict[str, Any]:
    """The record's fields, once its seal verifies (`StateSignatureError` else)."""
    value = open_sealed(record.key, bound().ctx.entity_key, record.value)
    try:
        body = json.loads(value)
    except (ValueError, RecursionError):
        return {}
    return body if isinstance(body, dict) else {}


def _entry(record: MemoryRecord) -> MemoryEntry:
    body = _stored(record)
    author = body.get("author")
    role = "user" if author == "user" else "model"
    return MemoryEntry(
        id=record.key,
        author=author if isinstance(author, str) else None,
        content=types.Content(role=role, parts=[types.Part(text=str(body.get("text", "")))]),
    )
