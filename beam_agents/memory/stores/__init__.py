"""The long-term tier's stores: the contract, the URI grammar and `open_store`.

Nothing here imports a store client library; `open_store` imports a
backend's client only when a URI names it. Names are imported lazily
(PEP 562, as in `beam_agents`), so the CLI can validate a URI without
loading the protobuf envelope or the in-memory store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from beam_agents import _lazy_attribute

_LAZY: Final[dict[str, str]] = {
    "InMemoryMemoryStore": "beam_agents.memory.stores.memory",
    "InvalidRecordError": "beam_agents.memory.stores.errors",
    "InvalidStoreURIError": "beam_agents.memory.stores.errors",
    "MemoryRecord": "beam_agents.memory.stores.base",
    "MemoryStore": "beam_agents.memory.stores.base",
    "StoreError": "beam_agents.memory.stores.errors",
    "StoreNotProvisionedError": "beam_agents.memory.stores.errors",
    "StoreURI": "beam_agents.memory.stores.uri",
    "StoreUnavailableError": "beam_agents.memory.stores.errors",
    "open_store": "beam_agents.memory.stores.factory",
    "parse_store_uri": "beam_agents.memory.stores.uri",
    "redact_uri": "beam_agents.memory.stores.uri",
}

__all__ = [
    "InMemoryMemoryStore",
    "InvalidRecordError",
    "InvalidStoreURIError",
    "MemoryRecord",
    "MemoryStore",
    "StoreError",
    "StoreNotProvisionedError",
    "StoreURI",
    "StoreUnavailableError",
    "open_store",
    "parse_store_uri",
    "redact_uri",
]

if TYPE_CHECKING:
    from beam_agents.memory.stores.base import MemoryRecord, MemoryStore
    from beam_agents.memory.stores.errors import (
        InvalidRecordError,
        InvalidStoreURIError,
        StoreError,
        StoreNotProvisionedError,
        StoreUnavailableError,
    )
    from beam_agents.memory.stores.factory import open_store
    from beam_agents.memory.stores.memory import InMemoryMemoryStore
    from beam_agents.memory.stores.uri import StoreURI, parse_store_uri, redact_uri


def __getattr__(name: str) -> object:
    return _lazy_attribute(__name__, _LAZY, globals(), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
