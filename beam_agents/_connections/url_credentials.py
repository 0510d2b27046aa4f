"""One rule for credentials in URLs: refused where a URL is pickled, hidden where it is shown.

A URL given to a config, a handler or a pipeline option is pickled into the
job graph, staged with it, shown in the Dataflow console's parameters and
quoted by errors: anything secret inside it has leaked before a worker
starts. So a URL carries no credential at all: no password in its userinfo
(an `http(s)` URL no userinfo whatever, since a bare user there is a token
as often as a name) and no query parameter whose name says it is a secret,
by the rule every pickled name follows (`secret_names`).
Secrets travel by reference instead (`env:NAME`, a Secret Manager version)
and are read on the worker.

A URL that does not carry a secret itself may still have one ride along
with its requests (a header, an API key). Such a request must not cross a
network in clear text, so its URL must be `https://` unless the host is
loopback, where there is no network to cross.

Errors name the field and the offending part (the parameter's name, the
userinfo as `user:***`), never the secret's value. Where a URL that may
hold a password is shown (a store URI read on the worker, a log line),
`redact_uri` hides it by the same reading of what is secret.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Final
from urllib.parse import SplitResult, unquote, urlsplit

from beam_agents._connections.secret_names import (
    REFERENCE_SUFFIX,
    SECRET_NAME_SUFFIXES,
    SECRET_NAMES,
    normal_name,
)
from beam_agents.errors import ConfigurationError

__all__ = [
    "SECRET_QUERY_KEYS",
    "SECRET_QUERY_NAME_REGEX",
    "check_url_credentials",
    "is_loopback_host",
    "is_secret_query_key",
    "redact_uri",
    "uri_secrets",
    "url_credential",
]

SECRET_QUERY_KEYS: Final = SECRET_NAMES
"""Query parameter names that hold a secret on their own (the shared `SECRET_NAMES`)."""

_QUERY_SUFFIXES: Final = tuple(
    suffix for suffix in SECRET_NAME_SUFFIXES if suffix != REFERENCE_SUFFIX
)
_QUERY_SEPARATORS: Final = re.compile(r"[&;]")
_QUERY_PARAM: Final = re.compile(r"([?&;])([^=&;#]*)=([^&;#]*)")


def _name_regex() -> str:
    names = "|".join(sorted(key.replace("_", "[-_]") for key in SECRET_QUERY_KEYS))
    suffixes = "|".join(suffix.replace("_", "[-_]") for suffix in _QUERY_SUFFIXES)
    return f"(?:{names}|[A-Za-z0-9._~-]*(?:{suffixes}))"


SECRET_QUERY_NAME_REGEX: Final = _name_regex()
"""`is_secret_query_key` as a regex (case-insensitive use: `(?i)`), for the checks that
are not Python: Flex Template parameter regexes and Terraform variable validations.
Plain syntax that Python, Java and RE2 all read the same way."""


def is_secret_query_key(name: str) -> bool:
    """Whether a query parameter named `name` carries a secret: the shared name rule,
    but for a `*_secret` parameter, which in a URL names where a secret lives."""
    normal = normal_name(name)
    return normal in SECRET_QUERY_KEYS or normal.endswith(_QUERY_SUFFIXES)


def is_loopback_host(host: str | None) -> bool:
    """`localhost`, 127.0.0.0/8 or ::1: a host whose traffic never leaves the machine."""
    if not host:
        return False
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _split(field: str, url: str) -> SplitResult:
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ConfigurationError(field, "is not a valid URL") from None
    return parts


def check_url_credentials(
    field: str,
    url: str,
    *,
    secret_rides: bool = False,
    hint: str = "pass the secret by reference (env:NAME or a Secret Manager version)",
) -> str:
    """Return `url` unchanged if it carries no credential; else a `ConfigurationError`.

    `secret_rides` says a secret goes with the requests made to `url` (a
    header, an API key): then a non-loopback host needs `https://`. `hint`
    tells the user where the secret belongs instead.
    """
    if not isinstance(url, str):
        raise ConfigurationError(field, f"must be a URL string, got {type(url).__name__}")
    parts = _split(field, url)
    if _userinfo_credential(parts) is not None:
        user = unquote(parts.username or "")
        shown = f"{user}:***@" if parts.password is not None else "***@"
        raise ConfigurationError(
            field, f"must not carry credentials in the URL ({shown} was given); {hint}"
        )
    name = _secret_parameter(parts)
    if name is not None:
        raise ConfigurationError(
            field, f"must not carry the secret query parameter {name!r}; {hint}"
        )
    if secret_rides and parts.scheme == "http" and not is_loopback_host(parts.hostname):
        raise ConfigurationError(
            field,
            f"must be https:// to reach {parts.hostname}: a secret goes with each request, "
            "and plain http:// is allowed only to a loopback host",
        )
    return url


def url_credential(url: str) -> str | None:
    """What credential `url` carries, said without any part of its value; None if none.

    For an error about text that merely contains a URL (an env value), where
    even the user name is not ours to show. A URL too malformed to parse
    counts as carrying one: what it holds cannot be told.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return "a URL that cannot be parsed"
    userinfo = _userinfo_credential(parts)
    if userinfo is not None:
        return userinfo
    name = _secret_parameter(parts)
    return None if name is None else f"the secret query parameter {name!r}"


def _userinfo_credential(parts: SplitResult) -> str | None:
    if parts.password is not None:
        return "a password in a URL's userinfo"
    if parts.scheme in ("http", "https") and parts.username is not None:
        return "a user or token in an http(s) URL's userinfo"
    return None


def _secret_parameter(parts: SplitResult) -> str | None:
    """The name of the first query parameter that holds a secret, unquoted."""
    for pair in _QUERY_SEPARATORS.split(parts.query):
        name = pair.partition("=")[0]
        if name and is_secret_query_key(name):
            return unquote(name)
    return None


def redact_uri(uri: str) -> str:
    """`uri` with every password replaced by `***`: userinfo and `password=`-style params.

    Never raises, so it can render even a malformed URI in an error message.
    It errs on the side of hiding: everything between the first `:` of the
    userinfo and the last `@` is treated as a password, which covers both
    SQLAlchemy's and urllib's readings of an unescaped `@` or `/` in one.
    """
    return _redact(uri)[0]


def uri_secrets(uri: str) -> list[str]:
    """The substrings `redact_uri` hides, so other text (a driver's message) can be scrubbed."""
    return _redact(uri)[1]


def _redact(uri: str) -> tuple[str, list[str]]:
    secrets: list[str] = []
    scheme, sep, rest = uri.partition("://")
    if not sep:
        scheme, rest = "", uri
    head, at, tail = rest.rpartition("@")
    if at:
        user, colon, password = head.partition(":")
        if colon:
            secrets.append(password)
            rest = f"{user}:***@{tail}"

    def _hide(match: re.Match[str]) -> str:
        lead, name, value = match.groups()
        if is_secret_query_key(name) and value:
            secrets.append(value)
            value = "***"
        return f"{lead}{name}={value}"

    rest = _QUERY_PARAM.sub(_hide, rest)
    return f"{scheme}{sep}{rest}", [secret for secret in secrets if secret]
