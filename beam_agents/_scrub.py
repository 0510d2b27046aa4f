"""Credentials removed from free text before it leaves the process.

Dead letters, tool failures and log lines quote exception messages, and a
driver's or a server's message can quote a connection string or a header.
Every package that writes such text scrubs it here, below both the runtime
and the tools, so neither has to import the other to stay clean.
"""

from __future__ import annotations

import re
from typing import Final

from beam_agents._connections.url_credentials import is_secret_query_key

__all__ = ["scrub_secrets"]

# Error texts can be long and hostile, so each pattern starts at a literal (a name,
# `?`/`&`, a scheme of at most 32 characters before `://`) and each unbounded run
# stops at a delimiter the run itself cannot contain: an attempt scans no further
# than the next delimiter, and the whole scrub stays linear in the text.
_USERINFO: Final = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{0,31}://)(?P<user>[^:/@\s]*):[^@\s/]+@"
)
_HEADER: Final = re.compile(
    r"(?i)(?P<name>\b(?:proxy-)?authorization|\b(?:set-)?cookie)(?P<sep>[\"']?[ \t]*[=:][ \t]*)"
    r"(?P<quote>[\"']?)(?P<scheme>(?:basic|bearer|digest|negotiate|token)[ \t]+)?"
    r"(?P<value>[^\r\n\"']+)"
)
"""An `Authorization` or `Cookie` header, bare or as a dict entry: its scheme is kept, its
whole value hidden (a cookie header's `;`-separated pairs are all credentials)."""
_SECRET_PARAM: Final = re.compile(
    r"(?i)(?P<name>password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|auth|cookie|credentials?)"
    r"(?P<sep>[\"']?\s*[=:]\s*)(?:(?P<quote>[\"'])[^\"'\r\n]*|[^\s&,;'\"]+)"
)
"""`name=value`, `name: value`, and a JSON or repr'd dict's `"name": "value"`; a quoted
value is hidden to its closing quote, spaces and all."""
_QUERY_PARAM: Final = re.compile(
    r"(?P<lead>[?&;])(?P<name>[A-Za-z0-9._~%-]+)=(?P<value>[^\s&;#\"'<>]+)"
)
"""A URL's query parameter, hidden by the URL credentials rule (`?key=`, `&sig=`)."""
_BEARER: Final = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+")


def scrub_secrets(text: str) -> str:
    """Remove credentials from free text: URL passwords and secret query parameters,
    `Authorization` and `Cookie` headers, key=value and dict-entry secrets, bearer tokens."""
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)
    text = _HEADER.sub(_hide_header, text)
    text = _QUERY_PARAM.sub(_hide_query_param, text)
    text = _SECRET_PARAM.sub(lambda m: f"{m['name']}{m['sep']}{m['quote'] or ''}***", text)
    return _BEARER.sub(r"\1***", text)


def _hide_header(match: re.Match[str]) -> str:
    return f"{match['name']}{match['sep']}{match['quote']}{match['scheme'] or ''}***"


def _hide_query_param(match: re.Match[str]) -> str:
    if not is_secret_query_key(match["name"]):
        return match[0]
    return f"{match['lead']}{match['name']}=***"
