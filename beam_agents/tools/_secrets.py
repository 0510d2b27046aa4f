"""Reading a handler's secret header values on the worker: env or Secret Manager.

A handler is pickled into the job graph, so it carries only where a secret
lives (`env:NAME` or `projects/P/secrets/S/versions/V`) and reads the value
on the worker, on first use. Errors name the source, never the value.
"""

from __future__ import annotations

import asyncio
import os
import re
from typing import Final

from beam_agents.errors import ConfigurationError

__all__ = ["check_secret_source", "read_secret", "read_secret_now"]

_ENV: Final = re.compile(r"env:([A-Za-z_][A-Za-z0-9_]*)")
_RESOURCE: Final = re.compile(r"projects/[^/\s]+/secrets/[^/\s]+/versions/[^/\s]+")


def check_secret_source(field: str, source: object) -> str:
    """Validate a secret's source: `env:NAME` or a Secret Manager version name."""
    if isinstance(source, str) and (_ENV.fullmatch(source) or _RESOURCE.fullmatch(source)):
        return source
    raise ConfigurationError(
        field,
        "a secret source is 'env:NAME' or 'projects/P/secrets/S/versions/V' "
        f"(the value itself never goes here), got a {type(source).__name__}",
    )


async def read_secret(field: str, source: str) -> str:
    """The secret's value, read now (Secret Manager off the event loop)."""
    if _ENV.fullmatch(source) is not None:
        return read_secret_now(field, source)
    return await asyncio.to_thread(_read_version, field, source)


def read_secret_now(field: str, source: str) -> str:
    """The secret's value, read on this thread (a DoFn's setup, a command's start)."""
    env = _ENV.fullmatch(source)
    if env is not None:
        value = os.environ.get(env.group(1), "").strip()
        if not value:
            raise ConfigurationError(
                field, f"environment variable {env.group(1)} is not set or empty on this worker"
            )
        return value
    return _read_version(field, source)


def _read_version(field: str, resource: str) -> str:
    try:
        from google.cloud import secretmanager
    except ImportError:
        raise ConfigurationError(
            field, f"reading {resource} needs google-cloud-secret-manager"
        ) from None
    try:
        client = secretmanager.SecretManagerServiceClient()
        payload = client.access_secret_version(name=resource, timeout=30.0).payload.data
        value = payload.decode("utf-8").strip()
    except Exception as exc:
        raise ConfigurationError(field, f"cannot read {resource}: {type(exc).__name__}") from None
    if not value:
        raise ConfigurationError(field, f"{resource} is empty")
    return value
