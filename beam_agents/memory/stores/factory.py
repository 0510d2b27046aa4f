"""`open_store`: from a URI to a backend, importing its client library only then.

Backends are named by dotted path rather than imported here, so importing
`beam_agents` (or validating a URI) never drags in Redis, Google Cloud or
SQLAlchemy, and a machine with only some clients installed can still use
those. Every backend class builds itself with
`@classmethod from_uri(cls, uri: StoreURI) -> Self`; construction must not
perform I/O, since `open_store` runs in a DoFn's `setup()` before its loop
is driven. The one read `open_store` itself makes is of a `secretmanager://`
URI's value, which is why that form exists: it happens there, on the worker.
"""

from __future__ import annotations

import importlib
from typing import Final

from beam_agents.memory.stores.base import MemoryStore
from beam_agents.memory.stores.errors import InvalidStoreURIError
from beam_agents.memory.stores.uri import Backend, StoreURI, parse_store_uri

__all__ = ["BACKENDS", "open_store"]

BACKENDS: Final[dict[Backend, str]] = {
    "memory": "beam_agents.memory.stores.memory:InMemoryMemoryStore",
    "sql": "beam_agents.memory.stores.sql:SqlMemoryStore",
    "redis": "beam_agents.memory.stores.redis:RedisMemoryStore",
    "bigtable": "beam_agents.memory.stores.bigtable:BigtableMemoryStore",
    "firestore": "beam_agents.memory.stores.firestore:FirestoreMemoryStore",
}
"""Backend name -> `module:Class` of its `MemoryStore`."""


def open_store(uri: str | StoreURI) -> MemoryStore:
    """Build the store a URI names; no connection is made until its first call.

    A `secretmanager://` URI is replaced by the URI its version holds, read
    here and now. Raises `InvalidStoreURIError` for a bad URI, an unreadable
    secret, or when the backend's client library is not installed (naming the
    `memory-stores` extra).
    """
    parsed = uri if isinstance(uri, StoreURI) else parse_store_uri(uri)
    if parsed.backend == "secret":
        parsed = _resolve_secret(parsed)
    module_name, _, class_name = BACKENDS[parsed.backend].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        missing = exc.name or "a client library"
        if missing.startswith("beam_agents"):
            if missing != module_name:
                raise
            problem = f"the {parsed.backend} backend is not part of this beam-agents build"
        else:
            problem = (
                f"the {parsed.backend} backend needs {missing!r}: "
                "pip install 'beam-agents[memory-stores]'"
            )
        raise InvalidStoreURIError(f"{problem} (for {parsed.redacted!r})") from None
    store_class = getattr(module, class_name)
    store: MemoryStore = store_class.from_uri(parsed)
    return store


def _resolve_secret(reference: StoreURI) -> StoreURI:
    from beam_agents.memory.stores.secret import read_store_uri

    version = reference.secret_version
    held = read_store_uri(version)
    try:
        parsed = parse_store_uri(held)
    except InvalidStoreURIError as exc:
        # The problem quotes the URI redacted; say where it came from.
        raise InvalidStoreURIError(f"the URI in {version}: {exc.problem}") from None
    if parsed.backend == "secret":
        raise InvalidStoreURIError(
            f"{version} holds another secretmanager:// URI; store the store's own URI there"
        )
    return parsed
