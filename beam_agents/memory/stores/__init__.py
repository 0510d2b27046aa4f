"""The long-term tier's stores: the contract, the URI grammar and `open_store`.

Nothing here imports a store client library; `open_store` imports a
backend's client only when a URI names it.
"""

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
