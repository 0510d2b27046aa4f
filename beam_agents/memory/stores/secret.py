"""Reading a store URI that carries a credential from Secret Manager, where the store opens.

A URI with a password must not travel inside the pipeline: whatever the
launcher puts into a DoFn's configuration is pickled into the job graph,
staged in a bucket and kept there, out of reach of Secret Manager's audit
log and of any rotation. So the pipeline holds `secretmanager://` and the
version's name only, and `open_store` calls `read_store_uri` in the DoFn's
`setup()`, on the worker, as the worker's service account. The reading is
every secret's (`beam_agents._connections.secret_sources`); what is the
store's own is that a failure is an `InvalidStoreURIError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from beam_agents._connections.secret_sources import SECRET_READ_TIMEOUT_S, read_secret_version
from beam_agents.errors import ConfigurationError
from beam_agents.memory.stores.errors import InvalidStoreURIError

if TYPE_CHECKING:
    from google.cloud.secretmanager import SecretManagerServiceClient

__all__ = ["SECRET_READ_TIMEOUT_S", "read_store_uri"]


def read_store_uri(version: str, *, client: SecretManagerServiceClient | None = None) -> str:
    """The store URI held by the Secret Manager `version` (`projects/P/secrets/S/versions/V`).

    Raises `InvalidStoreURIError` naming the version when the client library
    is missing, the read fails (no access, no such version, no network) or
    the value is empty or not UTF-8.
    """
    try:
        return read_secret_version("AgentConfig.longterm_memory", version, client=client)
    except ConfigurationError as exc:
        raise InvalidStoreURIError(f"the store URI: {exc.problem}") from None
