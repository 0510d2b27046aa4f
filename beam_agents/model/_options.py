"""Provider options, shared by the constructors and the spec parser: checked, and the key read.

Both paths must refuse the same inputs with the same words: a spec typed on
a command line and a provider built in Python name the same option when it
is wrong, and both fail before any pipeline exists. The key the options
name is read on the worker, when the provider is built (in the DoFn's
`setup()`), so it never travels in a pickled factory.
"""

from __future__ import annotations

import math
import re
from urllib.parse import urlsplit

from beam_agents._connections.secret_sources import (
    is_secret_version,
    read_env_secret,
    read_secret_version,
)
from beam_agents._connections.url_credentials import check_url_credentials
from beam_agents.errors import ConfigurationError

__all__ = [
    "check_api_key_env",
    "check_api_key_secret",
    "check_base_url",
    "check_max_retries",
    "check_model",
    "check_name",
    "check_timeout_s",
    "check_vertex_location",
    "read_api_key",
]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_model(model: object) -> str:
    """A model name is a non-empty string without surrounding whitespace."""
    if type(model) is not str or not model or model != model.strip():
        raise ConfigurationError("model", f"must be a non-empty model name, got {model!r}")
    return model


def check_timeout_s(value: object) -> float:
    """Per-request timeout: a positive, finite number of seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigurationError("timeout_s", f"must be a number of seconds, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ConfigurationError(
            "timeout_s", f"must be a positive, finite number of seconds, got {value!r}"
        )
    return float(value)


def check_max_retries(value: object) -> int:
    """Retries after the first attempt: an int from 0 (never retry) up to 10."""
    if type(value) is not int or not 0 <= value <= 10:
        raise ConfigurationError("max_retries", f"must be an int from 0 to 10, got {value!r}")
    return value


def check_api_key_env(value: object) -> str:
    """The name (never the value) of the environment variable holding the key."""
    if type(value) is not str or not _ENV_NAME.fullmatch(value):
        raise ConfigurationError(
            "api_key_env", f"must be an environment variable name, got {value!r}"
        )
    return value


def check_api_key_secret(value: object) -> str | None:
    """A Secret Manager version resource name, or None."""
    if value is None:
        return None
    if type(value) is not str or not is_secret_version(value):
        raise ConfigurationError(
            "api_key_secret",
            f"must be projects/P/secrets/S/versions/V, got {value!r}",
        )
    return value


def check_base_url(value: object) -> str | None:
    """An http(s) URL with a host and no credentials, or None.

    Credentials in the URL would travel inside the pickled factory and into
    every error that names the endpoint; keys belong in `api_key_env` or
    `api_key_secret`. Every request carries a key, so a remote host needs
    https. The value is not echoed back when it carries credentials.
    """
    if value is None:
        return None
    if type(value) is not str:
        raise ConfigurationError("base_url", f"must be a URL string, got {type(value).__name__}")
    hint = "use api_key_env or api_key_secret"
    check_url_credentials("base_url", value, secret_rides=True, hint=hint)
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError("base_url", f"must be an http(s) URL with a host, got {value!r}")
    return value


def check_name(field: str, value: object) -> str | None:
    """A non-empty identifier-like string (a project, a location), or None."""
    if value is None:
        return None
    if type(value) is not str or not value or value != value.strip() or "/" in value:
        raise ConfigurationError(field, f"must be a non-empty name, got {value!r}")
    return value


def check_vertex_location(project: object, location: object) -> None:
    """A Vertex AI location only makes sense with the project it belongs to."""
    if location is not None and project is None:
        raise ConfigurationError("vertex_location", "needs vertex_project")


def read_api_key(env_name: str, secret_version: str | None) -> str:
    """The key from Secret Manager when `secret_version` is set, else from `env_name`.

    Raises ConfigurationError naming the option and where the key was looked
    for, so a worker fails at `setup()` rather than at its first event.
    """
    if secret_version is not None:
        return read_secret_version("api_key_secret", secret_version)
    return read_env_secret("api_key_env", env_name)
