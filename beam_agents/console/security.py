"""Who may use the console, and the headers that keep agent text inert.

- Without a token the console serves loopback only: it binds 127.0.0.1
  (`check_bind` refuses anything else) and answers only requests whose
  `Host` is a loopback name, so a web page elsewhere cannot reach it
  through DNS rebinding.
- With a token every request needs it: `Authorization: Bearer TOKEN`, or
  the session cookie the login form sets (HttpOnly, SameSite=Strict; it
  holds an HMAC of the token, never the token).
- Every POST carries a CSRF token: an HMAC, under a per-process secret, of a
  random value held in its own HttpOnly cookie.
- Every response forbids scripts and styles from anywhere but the console
  itself (Content-Security-Policy), framing and sniffing; templates escape
  every string, and the policy is the second wall if one ever did not.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from beam_agents.errors import ConfigurationError

__all__ = [
    "CSRF_COOKIE",
    "REPORT_POLICY",
    "SESSION_COOKIE",
    "AccessGuard",
    "Secret",
    "check_bind",
    "csrf_token",
    "valid_csrf",
]

SESSION_COOKIE = "beam_agents_session"
CSRF_COOKIE = "beam_agents_csrf"
_LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]"}
_OPEN_PATHS = ("/login", "/static/")
REPORT_POLICY = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
"""The run's report.html: its inline stylesheet, and still no script from anywhere."""
HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


class Secret:
    """A token that never shows itself in a repr, a log line or an error."""

    def __init__(self, value: str) -> None:
        if len(value) < 16:
            raise ConfigurationError("--token", "must be at least 16 characters")
        self._value = value.encode()

    def matches(self, candidate: str) -> bool:
        return hmac.compare_digest(self._value, candidate.encode())

    def session(self) -> str:
        """The cookie value of a logged-in browser: an HMAC of the token."""
        return hmac.new(self._value, b"console-session", hashlib.sha256).hexdigest()

    def __repr__(self) -> str:
        return "Secret(***)"


def is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: Secret | None) -> None:
    """Refuse to listen beyond this machine without a token."""
    if token is None and not is_loopback(host):
        raise ConfigurationError(
            "--host", f"{host} is not a loopback address: serving it needs --token"
        )


_PROCESS_SECRET = secrets.token_bytes(32)


def csrf_token(seed: str) -> str:
    return hmac.new(_PROCESS_SECRET, seed.encode(), hashlib.sha256).hexdigest()


def valid_csrf(request: Request, submitted: str) -> bool:
    seed = request.cookies.get(CSRF_COOKIE, "")
    return bool(seed) and hmac.compare_digest(csrf_token(seed), submitted)


class AccessGuard:
    """ASGI middleware: the token or loopback rule, a CSRF seed cookie, the security headers."""

    def __init__(self, app: ASGIApp, token: Secret | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refusal = self._refusal(request)
        seed = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(24)
        scope.setdefault("state", {})["csrf"] = csrf_token(seed)
        fresh_seed = CSRF_COOKIE not in request.cookies

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = message.setdefault("headers", [])
                present = {name.lower() for name, _ in headers}
                headers.extend(
                    (k.encode(), v.encode())
                    for k, v in HEADERS.items()
                    if k.encode() not in present
                )
                if fresh_seed:
                    cookie = f"{CSRF_COOKIE}={seed}; HttpOnly; SameSite=Strict; Path=/"
                    headers.append((b"set-cookie", cookie.encode()))
            await send(message)

        app = refusal if refusal is not None else self.app
        await app(scope, receive, send_with_headers)

    def _refusal(self, request: Request) -> Response | None:
        if self.token is None:
            host = Headers(scope=request.scope).get("host", "").rsplit(":", 1)[0]
            if not is_loopback(host):
                return PlainTextResponse("loopback only", status_code=403)
            return None
        if self._authorized(request) or request.url.path.startswith(_OPEN_PATHS):
            return None
        if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
            return RedirectResponse("/login", status_code=303)
        return PlainTextResponse("a token is required", status_code=401)

    def _authorized(self, request: Request) -> bool:
        assert self.token is not None
        scheme, _, credential = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and self.token.matches(credential.strip()):
            return True
        session = request.cookies.get(SESSION_COOKIE, "")
        return bool(session) and hmac.compare_digest(session, self.token.session())
