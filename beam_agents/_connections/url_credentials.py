"""One rule for credentials in URLs: refused where a URL is pickled, hidden where it is shown.

A URL given to a config, a handler or a pipeline option is pickled into the
job graph, staged with it, shown in the Dataflow console's parameters and
quoted by errors: anything secret inside it has leaked before a worker
starts. So a URL carries no credential at all: no password in its userinfo
(an `http(s)` URL no userinfo whatever, since a bare user there is a token
as often as a name) and no query parameter whose name says it is a secret.
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

from beam_agents.errors import ConfigurationError

__all__ = [
    "SECRET_QUERY_KEYS",
    "SECRET_QUERY_NAME_REGEX",
    "check_url_credentials",
    "is_loopback_host",
    "is_secret_query_key",
    "redact_uri",
    "uri_secrets",
]

SECRET_QUERY_KEYS: Final = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "pass",
        "token",
        "access_token",
        "auth_token",
        "id_token",
        "refresh_token",
        "api_key",
        "apikey",
        "key",
        "secret",
        "client_secret",
        "sig",
        "signature",
        "credential",
        "credentials",
        "auth",
        "authorization",
        "x_goog_signature",
        "x_goog_credential",
        "x_amz_signature",
        "x_amz_credential",
        "x_amz_security_token",
    }
)
"""Query parameter names that hold a secret, compared case-insensitively with `-` as `_`."""

_SECRET_SUFFIXES: Final = ("_token", "password", "_signature", "_api_key", "apikey")
"""A name ending so (`private_token`, `sslpassword`) holds a secret too. Not `_secret`:
`api_key_secret=` names where a secret lives, which is what a URL may carry."""

_QUERY_SEPARATORS: Final = re.compile(r"[&;]")
_QUERY_PARAM: Final = re.compile(r"([?&;])([^=&;#]*)=([^&;#]*)")


def _name_regex() -> str:
    names = "|".join(sorted(key.replace("_", "[-_]") for key in SECRET_QUERY_KEYS))
    suffixes = "|".join(suffix.replace("_", "[-_]") for suffix in _SECRET_SUFFIXES)
    return f"(?:{names}|[A-Za-z0-9._~-]*(?:{suffixes}))"


SECRET_QUERY_NAME_REGEX: Final = _name_regex()
"""`is_secret_query_key` as a regex (case-insensitive use: `(?i)`), for the checks that
are not Python: Flex Template parameter regexes and Terraform variable validations.
Plain syntax that Python, Java and RE2 all read the same way."""


def is_secret_query_key(name: str) -> bool:
    """Whether a query parameter named `name` carries a secret."""
    normal = unquote(name).strip().lower().replace("-", "_")
    return normal in SECRET_QUERY_KEYS or normal.endswith(_SECRET_SUFFIXES)


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
    web = parts.scheme in ("http", "https")
    if parts.password is not None or (web and parts.username is not None):
        user = unquote(parts.username or "")
        shown = f"{user}:***@" if parts.password is not None else "***@"
        raise ConfigurationError(
            field, f"must not carry credentials in the URL ({shown} was given); {hint}"
        )
    for pair in _QUERY_SEPARATORS.split(parts.query):
        name = pair.partition("=")[0]
        if name and is_secret_query_key(name):
            raise ConfigurationError(
                field,
                f"must not carry the secret query parameter {unquote(name)!r}; {hint}",
            )
    if secret_rides and parts.scheme == "http" and not is_loopback_host(parts.hostname):
        raise ConfigurationError(
            field,
            f"must be https:// to reach {parts.hostname}: a secret goes with each request, "
            "and plain http:// is allowed only to a loopback host",
        )
    return url


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
