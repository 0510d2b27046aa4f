"""One rule for names that say they hold a secret: a URL's query parameter, an env var, a header.

Whatever is configured where the pipeline is built is pickled into the job
graph, so configuration that is a plain name/value map (a stdio server's
environment, a webhook's headers, a URL's query) must hold no secret. A
secret's name gives it away more reliably than its value does: `JWT_SECRET`,
`AWS_SECRET_ACCESS_KEY`, `Authorization`, `?token=`. So the name decides,
read case-insensitively with `-` as `_`: it is one of `SECRET_NAMES`, or it
ends with one of `SECRET_NAME_SUFFIXES` (`private_token`, `sslpassword`,
`STRIPE_SECRET_KEY`, `NPM_AUTH`). Endings, not words anywhere: `api_key_env`
names where a key lives, and `AWS_ACCESS_KEY_ID` is an identifier.

Every check of pickled configuration (URLs, env, headers) and the non-Python
checks generated from it (Flex Template regexes, Terraform validations) read
this one vocabulary, so a name refused in one place is refused in all.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import unquote

__all__ = [
    "REFERENCE_SUFFIX",
    "SECRET_NAMES",
    "SECRET_NAME_SUFFIXES",
    "is_secret_name",
    "normal_name",
]

SECRET_NAMES: Final = frozenset(
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
        "cookie",
        "x_goog_signature",
        "x_goog_credential",
        "x_amz_signature",
        "x_amz_credential",
        "x_amz_security_token",
    }
)
"""Names that hold a secret on their own, compared case-insensitively with `-` as `_`."""

REFERENCE_SUFFIX: Final = "_secret"
"""In beam-agents' own URL grammar a `*_secret` parameter names where a secret lives
(`api_key_secret=projects/P/secrets/S/versions/V`), so a URL may carry it; elsewhere
(`JWT_SECRET`, `GITHUB_CLIENT_SECRET`) the name holds the secret itself."""

SECRET_NAME_SUFFIXES: Final = (
    "_token",
    "password",
    "_signature",
    "_api_key",
    "apikey",
    REFERENCE_SUFFIX,
    "secret_key",
    "access_key",
    "private_key",
    "signing_key",
    "encryption_key",
    "master_key",
    "account_key",
    "_auth",
    "_authorization",
    "_cookie",
    "_passwd",
    "_pwd",
    "_pass",
)
"""A name ending so holds a secret too. Each is a word or pair no harmless name ends
with, most starting at a separator, so `sort_key`, `bypass` and `AWS_ACCESS_KEY_ID`
stay plain."""


def normal_name(name: str) -> str:
    """`name` as the rule compares it: unquoted, stripped, lower case, `-` as `_`."""
    return unquote(name).strip().lower().replace("-", "_")


def is_secret_name(name: str) -> bool:
    """Whether a setting named `name` (env var, header, query parameter) holds a secret."""
    normal = normal_name(name)
    return normal in SECRET_NAMES or normal.endswith(SECRET_NAME_SUFFIXES)
