"""`open_ledger`: the tool ledger a store URI names, beside that store.

A ledger takes the same URI as the long-term store (the same grammar, the
same validation, the same `secretmanager://` indirection) and lives beside
the store's rows: its own SQL table, Redis keys, Bigtable family, Firestore
collection. It is built by opening the store and sharing its client, so
credentials, TLS options and emulator hosts work exactly as they do for the
store, and closing the ledger closes that client.
"""

from __future__ import annotations

import importlib
from typing import Final

from beam_agents.memory.stores.base import MemoryStore
from beam_agents.memory.stores.factory import open_store
from beam_agents.memory.stores.uri import Backend, StoreURI, parse_store_uri
from beam_agents.tools.ledger.base import Clock, ToolLedger, wall_clock_ms

__all__ = ["LEDGER_BACKENDS", "open_ledger"]

LEDGER_BACKENDS: Final[dict[Backend, str]] = {
    "sql": "beam_agents.tools.ledger.sql:SqlToolLedger",
    "redis": "beam_agents.tools.ledger.redis:RedisToolLedger",
    "bigtable": "beam_agents.tools.ledger.bigtable:BigtableToolLedger",
    "firestore": "beam_agents.tools.ledger.firestore:FirestoreToolLedger",
}
"""Backend name -> `module:Class` of its ledger, built from the opened store."""


def open_ledger(uri: str | StoreURI, *, clock: Clock = wall_clock_ms) -> ToolLedger:
    """Build the ledger a store URI names; no connection is made until its first call.

    `memory://NAME` is the process-wide in-memory ledger NAME. `clock` is the
    lease clock (milliseconds since the epoch) of every backend but Redis,
    whose leases expire on the server. Raises `InvalidStoreURIError` as
    `open_store` does.
    """
    parsed = uri if isinstance(uri, StoreURI) else parse_store_uri(uri)
    if parsed.backend == "memory":
        from beam_agents.tools.ledger.memory import InMemoryToolLedger

        return InMemoryToolLedger.shared(parsed.namespace, clock=clock)
    store: MemoryStore = open_store(parsed)  # resolves a secretmanager:// URI
    backend = type(store).__module__.rpartition(".")[2]
    if backend == "memory":
        from beam_agents.tools.ledger.memory import InMemoryToolLedger

        namespace = getattr(store, "namespace", None) or ""
        return InMemoryToolLedger.shared(namespace, clock=clock)
    module_name, _, class_name = LEDGER_BACKENDS[backend].partition(":")  # type: ignore[index]
    ledger_class = getattr(importlib.import_module(module_name), class_name)
    if backend == "redis":
        ledger: ToolLedger = ledger_class(store)
    else:
        ledger = ledger_class(store, clock=clock)
    return ledger
