"""The public names of `beam_agents.memory.stores`: the one list (see `beam_agents._lazy`)."""

from beam_agents.memory.stores.base import Embedding as Embedding
from beam_agents.memory.stores.base import MemoryRecord as MemoryRecord
from beam_agents.memory.stores.base import MemoryStore as MemoryStore
from beam_agents.memory.stores.base import Neighbour as Neighbour
from beam_agents.memory.stores.errors import InvalidRecordError as InvalidRecordError
from beam_agents.memory.stores.errors import InvalidStoreURIError as InvalidStoreURIError
from beam_agents.memory.stores.errors import StoreError as StoreError
from beam_agents.memory.stores.errors import StoreNotProvisionedError as StoreNotProvisionedError
from beam_agents.memory.stores.errors import StoreUnavailableError as StoreUnavailableError
from beam_agents.memory.stores.factory import open_store as open_store
from beam_agents.memory.stores.memory import InMemoryMemoryStore as InMemoryMemoryStore
from beam_agents.memory.stores.uri import StoreURI as StoreURI
from beam_agents.memory.stores.uri import parse_store_uri as parse_store_uri
from beam_agents.memory.stores.uri import redact_uri as redact_uri
