"""Who may use the console, and the headers that keep agent text inert.

- Without a token the console serves loopback only: it binds 127.0.0.1
  (`check_bind` refuses anything else) and answers only requests whose
  `Host` is a loopback name, so a web page elsewhere cannot reach it
  through DNS rebinding.
- With a token every request needs it: `Authorization: Bearer TOKEN`, or
  the session cookie the login form sets (HttpOnly, SameSite=Strict, a
  random server-side session: `beam_agents.console.sessions`). Served
  over TLS (or behind a proxy that terminates it) the cookies are `Secure`
  and carry the `__Host-` prefix, so no other host or plain-HTTP page can
  set or read them. Beyond loopback the console needs TLS or the word that
  a proxy provides it.
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

from beam_agents.console.sessions import Sessions
from beam_agents.errors import ConfigurationError

__all__ = [
    "CSRF_COOKIE",
    "REPORT_POLICY",
    "SESSION_COOKIE",
    "AccessGuard",
    "Secret",
    "check_bind",
    "cookie_name",
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

    def __repr__(self) -> str:
        return "Secret(***)"


def is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(
    host: str, token: Secret | None, *, tls: bool = False, behind_tls_proxy: bool = False
) -> None:
    """Refuse to listen beyond this machine without a token, or without TLS.

    Over plain HTTP the token and the session cookie would cross the network
    readable by anyone on the path.
    """
    if is_loopback(host):
        return
    if token is None:
        raise ConfigurationError(
            "--host", f"{host} is not a loopback address: serving it needs --token"
        )
    if not (tls or behind_tls_proxy):
        raise ConfigurationError(
            "--host",
            f"{host} is not a loopback address: serving it needs --tls-cert and --tls-key, "
            "or --behind-tls-proxy when a proxy in front terminates TLS",
        )


def cookie_name(name: str, secure: bool) -> str:
    """`name` with the `__Host-` prefix when cookies are Secure (a browser then pins them
    to this host, path / and HTTPS)."""
    return f"__Host-{name}" if secure else name


_PROCESS_SECRET = secrets.token_bytes(32)


def csrf_token(seed: str) -> str:
    return hmac.new(_PROCESS_SECRET, seed.encode(), hashlib.sha256).hexdigest()


def valid_csrf(request: Request, submitted: str) -> bool:
    seed = request.cookies.get(request.scope["state"]["csrf_cookie"], "")
    return bool(seed) and hmac.compare_digest(csrf_token(seed), submitted)


class AccessGuard:
    """ASGI middleware: the token or loopback rule, a CSRF seed cookie, the security headers."""

    def __init__(
        self, app: ASGIApp, token: Secret | None, sessions: Sessions, *, secure: bool = False
    ) -> None:
        self.app = app
        self.token = token
        self.sessions = sessions
        self.secure = secure
        self.session_cookie = cookie_name(SESSION_COOKIE, secure)
        self.csrf_cookie = cookie_name(CSRF_COOKIE, secure)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refusal = self._refusal(request)
        seed = request.cookies.get(self.csrf_cookie) or secrets.token_urlsafe(24)
        state = scope.setdefault("state", {})
        state["csrf"] = csrf_token(seed)
        state["csrf_cookie"] = self.csrf_cookie
        fresh_seed = self.csrf_cookie not in request.cookies

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
                    cookie = f"{self.csrf_cookie}={seed}; HttpOnly; SameSite=Strict; Path=/"
                    cookie += "; Secure" if self.secure else ""
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
        return self.sessions.check(request.cookies.get(self.session_cookie, ""))
