"""Reading a provider's API key on the worker, from the environment or Secret Manager.

The key is read when the provider is built (in the DoFn's `setup()`), never
on the machine that builds the pipeline, so it never travels in a pickled
factory. Errors name where the key was looked for, never what was found.
"""

from __future__ import annotations

import os

from beam_agents.errors import ConfigurationError

__all__ = ["read_api_key"]


def read_api_key(env_name: str, secret_resource: str | None) -> str:
    """The key from Secret Manager when `secret_resource` is set, else from `env_name`.

    Raises ConfigurationError naming the variable or the secret when there is
    no usable key, so a worker fails at `setup()` rather than at its first event.
    """
    if secret_resource is not None:
        return _read_secret(secret_resource)
    value = os.environ.get(env_name, "").strip()
    if not value:
        raise ConfigurationError(
            "api_key_env", f"environment variable {env_name} is not set or empty on this worker"
        )
    return value


def _read_secret(resource: str) -> str:
    try:
        # Imported here: only users of api_key_secret need the client library.
        from google.cloud import secretmanager
    except ImportError:
        raise ConfigurationError(
            "api_key_secret",
            f"reading {resource} needs google-cloud-secret-manager "
            "(pip install 'beam-agents[providers]')",
        ) from None
    try:
        client = secretmanager.SecretManagerServiceClient()
        payload = client.access_secret_version(name=resource, timeout=30.0).payload.data
    except Exception as exc:
        # The client's own message names the resource and the cause, not the payload.
        raise ConfigurationError(
            "api_key_secret", f"cannot read {resource}: {type(exc).__name__}: {exc}"
        ) from None
    try:
        value = payload.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise ConfigurationError("api_key_secret", f"{resource} is not UTF-8 text") from None
    if not value:
        raise ConfigurationError("api_key_secret", f"{resource} is empty")
    return value
