"""ADK's memory service over the long-term tier (`ctx.memory.longterm`).

`add_session_to_memory` stages one record per text event under
`adk/memory/<session id>/<event id>`, flushed only if the activation
commits (the tier's blind upsert: the value is a function of the session,
so a re-run stages the same rows). With `AgentConfig.embedder` set, each
record carries its text's embedding and `search_memory` recalls by
meaning; without one, it matches records whose text holds a word of the
query (case-folded), newest keys last.
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

__all__ = ["MEMORY_PREFIX", "LongtermMemoryService"]

MEMORY_PREFIX = "adk/memory/"
_RECALL_K = 10
_SEARCH_LIMIT = 500
_WORD = re.compile(r"\w+")


class LongtermMemoryService(BaseMemoryService):
    """Saves a session's text events as long-term records and searches them."""

    async def add_session_to_memory(self, session: Session) -> None:
        longterm = bound().ctx.memory.longterm
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
    try:
        body = json.loads(record.value)
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
