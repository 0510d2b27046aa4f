"""Plain name/value settings (a server's env, a webhook's headers): pickled, so never secret.

Such a map is pickled into the job graph with the tool that holds it, staged
with it and shown in the Dataflow console, in the clear. Every API that
takes one also takes its secret twin (`secret_env`, `secret_headers`), which
maps the same names to where each value lives and reads it on the worker. So
a plain setting is refused when its name says it holds a secret (the shared
rule of `secret_names`), when its value carries a credential in a URL (the
rule of `url_credentials`: `DATABASE_URL=postgres://u:pw@db/x`), or when its
value is an `Authorization` credential (`Bearer ...`, `Basic ...`).

Errors name the field and the setting's name, never its value, and say
which secret twin the setting belongs in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from beam_agents._connections.secret_names import is_secret_name
from beam_agents._connections.url_credentials import url_credential
from beam_agents.errors import ConfigurationError

__all__ = ["check_plain_settings", "value_credential"]

_URL: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s\"'<>]+")
"""A URL inside text. The scheme is bounded so a long run of letters is never rescanned."""
_AUTH_VALUE: Final = re.compile(r"(?i)\s*(?:bearer|basic)\s+[A-Za-z0-9._~+/-]{8,}=*\s*")
"""A whole value that is an HTTP credential: what goes after `Authorization:`."""


def value_credential(value: str) -> str | None:
    """What credential `value` carries, said without any part of it; None if none."""
    if _AUTH_VALUE.fullmatch(value):
        return "an HTTP credential (Bearer or Basic)"
    for url in _URL.findall(value):
        found = url_credential(url)
        if found is not None:
            return found
    return None


def check_plain_settings(field: str, settings: object, *, twin: str) -> dict[str, str]:
    """`settings` as a dict, or a `ConfigurationError` for the first secret in it.

    `settings` is a str-to-str mapping or None; it is typed `object` because
    this checks what the user passed. `field` names the plain map
    (`McpTools.env`), `twin` its secret twin (`secret_env`), where the error
    sends a secret it finds.
    """
    if settings is None:
        return {}
    if not isinstance(settings, Mapping):
        raise ConfigurationError(field, f"must map names to str, got {type(settings).__name__}")
    plain: dict[str, str] = {}
    for name, value in settings.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ConfigurationError(field, "names and values must be str")
        where = f"{field}[{name!r}]"
        move = (
            f"{field} is pickled into the job graph in the clear: pass it as "
            f"{twin}={{{name!r}: 'env:NAME' or a Secret Manager version}}, "
            "read on the worker"
        )
        if is_secret_name(name):
            raise ConfigurationError(where, f"the name {name!r} says it holds a secret, and {move}")
        found = value_credential(value)
        if found is not None:
            raise ConfigurationError(where, f"the value carries {found}, and {move}")
        plain[name] = value
    return plain
