"""Where a secret lives, and reading it there, on the worker.

A provider's key, a webhook's header, a store's password-bearing URI and a
shared rate limit's Redis URL are all configured on the machine that builds
the pipeline, and whatever is configured there is pickled into the job
graph. So configuration carries only a secret's source:

    env:NAME                                   an environment variable of the worker
    projects/P/secrets/S/versions/V            a Secret Manager version
    secretmanager://projects/P/secrets/S/versions/V
                                               a URI held in a Secret Manager version

and the value is read where it is used, in a DoFn's `setup()` or on first
use, as the worker's service account. Sources are checked without any
client library, so a typo fails where the pipeline is built; errors name
the source and the cause, never a value.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Final

from beam_agents._connections.url_credentials import redact_uri
from beam_agents.errors import ConfigurationError, MissingSecretError

if TYPE_CHECKING:
    from google.cloud.secretmanager import SecretManagerServiceClient

__all__ = [
    "SECRET_READ_TIMEOUT_S",
    "SECRET_SCHEME",
    "check_secret_source",
    "check_secret_uri",
    "is_secret_version",
    "read_env_secret",
    "read_secret",
    "read_secret_now",
    "read_secret_version",
    "secret_uri_version",
]

SECRET_SCHEME: Final = "secretmanager"  # noqa: S105 - a URI scheme, not a password
SECRET_READ_TIMEOUT_S: Final = 30.0
"""Bound on one read: a worker's `setup()` should fail, and be retried, rather than hang."""

_ENV: Final = re.compile(r"env:([A-Za-z_][A-Za-z0-9_]*)")
_VERSION: Final = re.compile(r"projects/[^/\s]+/secrets/[^/\s]+/versions/[^/\s]+")
_PINNED_VERSION: Final = re.compile(
    r"projects/[A-Za-z0-9][A-Za-z0-9.:_-]*/secrets/[A-Za-z0-9_-]{1,255}"
    r"/versions/(latest|[1-9][0-9]*)"
)
"""What a `secretmanager://` URI names: a version number or `latest`, no alias. Stricter
than a plain source, because a URI is also parsed where no Secret Manager is asked."""


def is_secret_version(name: object) -> bool:
    """Whether `name` reads as a Secret Manager version, `projects/P/secrets/S/versions/V`."""
    return isinstance(name, str) and _VERSION.fullmatch(name) is not None


def check_secret_source(field: str, source: object) -> str:
    """Validate a secret's source: `env:NAME` or a Secret Manager version name."""
    if isinstance(source, str) and (_ENV.fullmatch(source) or is_secret_version(source)):
        return source
    raise ConfigurationError(
        field,
        "a secret source is 'env:NAME' or 'projects/P/secrets/S/versions/V' "
        f"(the value itself never goes here), got a {type(source).__name__}",
    )


def secret_uri_version(field: str, uri: str) -> str | None:
    """The version a `secretmanager://` URI names; None for a URI of any other scheme.

    Raises `ConfigurationError` naming `field` when the URI is `secretmanager://`
    but names no version of a secret.
    """
    if uri.partition("://")[0] != SECRET_SCHEME:
        return None
    return check_secret_uri(field, uri)


def check_secret_uri(field: str, uri: str) -> str:
    """The version `secretmanager://VERSION` names, or a `ConfigurationError` naming `field`."""
    scheme, _, version = uri.partition("://")
    if scheme != SECRET_SCHEME or _PINNED_VERSION.fullmatch(version) is None:
        raise ConfigurationError(
            field,
            f"{SECRET_SCHEME}:// must be '{SECRET_SCHEME}://projects/<project>/secrets/<secret>"
            f"/versions/<number or latest>' (got {redact_uri(uri)!r})",
        )
    return version


async def read_secret(field: str, source: str) -> str:
    """The secret's value, read now (Secret Manager off the event loop)."""
    if _ENV.fullmatch(source) is not None:
        return read_secret_now(field, source)
    # Imported here: the `beam-agents` command loads this module for its URI
    # grammar, and starts faster without asyncio.
    import asyncio

    return await asyncio.to_thread(read_secret_version, field, source)


def read_secret_now(field: str, source: str) -> str:
    """The secret's value, read on this thread (a DoFn's setup, a command's start)."""
    env = _ENV.fullmatch(source)
    if env is not None:
        return read_env_secret(field, env.group(1))
    return read_secret_version(field, source)


def read_env_secret(field: str, name: str) -> str:
    """The environment variable `name` of this worker, stripped; empty counts as unset."""
    value = os.environ.get(name, "").strip()
    if not value:
        raise MissingSecretError(
            field, name, f"environment variable {name} is not set or empty on this worker"
        )
    return value


def read_secret_version(
    field: str, version: str, *, client: SecretManagerServiceClient | None = None
) -> str:
    """The text the Secret Manager `version` holds, stripped.

    Raises `ConfigurationError` naming `field` and the version when the
    client library is missing, the read fails (no access, no such version,
    no network) or the value is empty or not UTF-8.
    """
    try:
        if client is None:
            client = _default_client(version)
        response: Any = client.access_secret_version(name=version, timeout=SECRET_READ_TIMEOUT_S)
    except ImportError:
        raise ConfigurationError(
            field,
            f"reading {version} needs google-cloud-secret-manager "
            "(pip install google-cloud-secret-manager)",
        ) from None
    except Exception as exc:
        # The client's message names the version and the cause; it never holds the payload.
        raise ConfigurationError(
            field, f"cannot read {version}: {type(exc).__name__}: {exc}"
        ) from None
    try:
        value = bytes(response.payload.data).decode("utf-8").strip()
    except UnicodeDecodeError:
        raise ConfigurationError(field, f"{version} does not hold UTF-8 text") from None
    if not value:
        raise ConfigurationError(field, f"{version} is empty")
    return value


def _default_client(version: str) -> SecretManagerServiceClient:
    """The client for `version`: one place for tests to point every reader at a fake."""
    # Imported here: only a secret held in Secret Manager needs the client library.
    from google.cloud import secretmanager

    return secretmanager.SecretManagerServiceClient()
