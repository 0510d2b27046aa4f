"""Reading a store URI that carries a credential from Secret Manager, where the store opens.

A URI with a password must not travel inside the pipeline: whatever the
launcher puts into a DoFn's configuration is pickled into the job graph,
staged in a bucket and kept there, out of reach of Secret Manager's audit
log and of any rotation. So the pipeline holds `secretmanager://` and the
version's name only, and `open_store` calls `read_store_uri` in the DoFn's
`setup()`, on the worker, as the worker's service account. Errors name the
version and the cause, never the value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from beam_agents.memory.stores.errors import InvalidStoreURIError

if TYPE_CHECKING:
    from google.cloud.secretmanager import SecretManagerServiceClient

__all__ = ["SECRET_READ_TIMEOUT_S", "read_store_uri"]

SECRET_READ_TIMEOUT_S = 30.0
"""Bound on one read: a worker's `setup()` should fail, and be retried, rather than hang."""


def read_store_uri(version: str, *, client: SecretManagerServiceClient | None = None) -> str:
    """The store URI held by the Secret Manager `version` (`projects/P/secrets/S/versions/V`).

    Raises `InvalidStoreURIError` naming the version when the client library
    is missing, the read fails (no access, no such version, no network) or
    the value is empty or not UTF-8.
    """
    try:
        if client is None:
            client = _default_client(version)
        response: Any = client.access_secret_version(name=version, timeout=SECRET_READ_TIMEOUT_S)
    except InvalidStoreURIError:
        raise
    except Exception as exc:
        # No credentials, no access, no such version: the message names the cause, never a value.
        raise InvalidStoreURIError(
            f"cannot read the store URI from {version}: {type(exc).__name__}: {exc}"
        ) from None
    try:
        uri = bytes(response.payload.data).decode("utf-8").strip()
    except UnicodeDecodeError:
        raise InvalidStoreURIError(f"{version} does not hold UTF-8 text") from None
    if not uri:
        raise InvalidStoreURIError(f"{version} is empty: add the store URI as its value")
    return uri


def _default_client(version: str) -> SecretManagerServiceClient:
    try:
        # Imported here: only a URI held in Secret Manager needs the client library.
        from google.cloud import secretmanager
    except ImportError:
        raise InvalidStoreURIError(
            f"reading {version} needs google-cloud-secret-manager: "
            "pip install 'beam-agents[memory-stores]'"
        ) from None
    return secretmanager.SecretManagerServiceClient()
