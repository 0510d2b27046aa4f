"""Credentials removed from free text before it leaves the process.

Dead letters, tool failures and log lines quote exception messages, and a
driver's or a server's message can quote a connection string or a header.
Every package that writes such text scrubs it here, below both the runtime
and the tools, so neither has to import the other to stay clean.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["scrub_secrets"]

_USERINFO: Final = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:/@\s]*):[^@\s/]+@"
)
_SECRET_PARAM: Final = re.compile(
    r"(?i)(?P<name>password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|auth)"
    r"(?P<sep>\s*[=:]\s*)(?P<value>[^\s&,;'\"]+)"
)
_BEARER: Final = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+")


def scrub_secrets(text: str) -> str:
    """Remove credentials from free text: URL passwords, key=value secrets, bearer tokens."""
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)
    text = _SECRET_PARAM.sub(lambda m: f"{m['name']}{m['sep']}***", text)
    return _BEARER.sub(r"\1***", text)
