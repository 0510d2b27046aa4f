"""Who may use the console, and the headers that keep agent text inert.

- Without a token the console serves loopback only: it binds 127.0.0.1
  (`check_bind` refuses anything else) and answers only requests whose
  `Host` is a loopback name, so a web page elsewhere cannot reach it
  through DNS rebinding.
- With a token every request needs it: `Authorization: Bearer TOKEN`, or
  the session cookie the login form sets (HttpOnly, SameSite=Strict, a
  random server-side session: `beam_agents.console.sessions`). A token
  too weak to resist guessing is refused at start (`Secret`). Every failed
  check, header, form or cookie, counts in the one `LoginThrottle`, and
  while it closes the check to an address the token is not even compared:
  the answer is 429 with `Retry-After`, so a guess made then tells nothing.
  Served
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
import itertools
import math
import secrets
import string

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from beam_agents.console.sessions import LoginThrottle, Sessions
from beam_agents.errors import ConfigurationError

__all__ = [
    "CSRF_COOKIE",
    "MIN_TOKEN_BITS",
    "REPORT_POLICY",
    "SESSION_COOKIE",
    "TOKEN_RULE",
    "AccessGuard",
    "Secret",
    "check_bind",
    "client_address",
    "cookie_name",
    "csrf_token",
    "retry_after_s",
    "token_bits",
    "too_many_failures",
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


MIN_TOKEN_BITS = 128
"""The least a token may carry, by `token_bits`: beyond any guessing rate the throttle allows."""
TOKEN_RULE = (
    f"a token needs at least {MIN_TOKEN_BITS} bits, counted as its length times log2 of the "
    "alphabet its characters span (lowercase 26, uppercase 26, digits 10, anything else 33), "
    "a character counting for nothing past the third of a run (aaaa, abcd, 4321), and it may "
    "not repeat a shorter piece: 43 random URL-safe characters or 32 random hex digits pass. "
    "Make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))', "
    "or give none and the console generates one"
)
"""The rule as the start-up error states it (it never quotes the token)."""
_ALPHABETS = (
    (frozenset(string.ascii_lowercase), 26),
    (frozenset(string.ascii_uppercase), 26),
    (frozenset(string.digits), 10),
)
_NAMED = frozenset(string.ascii_letters + string.digits)
_OTHER_ALPHABET = 33


def token_bits(value: str) -> float:
    """An upper bound on the guesses `value` is worth, in bits, by `TOKEN_RULE`.

    It can only overestimate: a word or a date looks as random to it as the
    same letters drawn by `secrets`, so it refuses the certainly weak, and a
    person still has to choose a random token.
    """
    spans = [size for alphabet, size in _ALPHABETS if alphabet.intersection(value)]
    if any(char not in _NAMED for char in value):
        spans.append(_OTHER_ALPHABET)
    steps = [ord(b) - ord(a) for a, b in itertools.pairwise(value)]
    in_runs = sum(
        1
        for i in range(2, len(steps))
        if abs(steps[i]) <= 1 and steps[i - 2] == steps[i - 1] == steps[i]
    )
    return (len(value) - in_runs) * math.log2(sum(spans)) if spans else 0.0


def _repeats_a_piece(value: str) -> bool:
    """Whether `value` is a shorter piece said at least twice (abcabcab), in linear time.

    `border` is the longest proper prefix that is also a suffix (KMP's
    failure function): the token then repeats its first `len - border`
    characters, and a period of half its length or less is a repeat.
    """
    border = [0] * len(value)
    for i in range(1, len(value)):
        k = border[i - 1]
        while k and value[i] != value[k]:
            k = border[k - 1]
        border[i] = k + 1 if value[i] == value[k] else 0
    return bool(value) and len(value) > 1 and len(value) - border[-1] <= len(value) // 2


class Secret:
    """A token that never shows itself in a repr, a log line or an error.

    A token too weak for `TOKEN_RULE` is refused here, at construction, so a
    console never starts behind one.
    """

    def __init__(self, value: str) -> None:
        if _repeats_a_piece(value):
            raise ConfigurationError(
                "--token", f"refused: it repeats a shorter piece; {TOKEN_RULE}"
            )
        if token_bits(value) < MIN_TOKEN_BITS:
            raise ConfigurationError(
                "--token", f"refused: under {MIN_TOKEN_BITS} bits; {TOKEN_RULE}"
            )
        self._value = value.encode()

    @classmethod
    def generate(cls) -> tuple[Secret, str]:
        """A fresh 256-bit token, and its text: the caller decides where, if anywhere, it goes."""
        value = secrets.token_urlsafe(32)
        return cls(value), value

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


def client_address(request: Request) -> str:
    """What the throttle keys a request by: the peer's address, as the server saw it."""
    return request.client.host if request.client is not None else ""


def retry_after_s(wait_s: float) -> str:
    """`Retry-After`'s whole seconds for a wait: rounded up, so a client that waits them finds
    the check open."""
    return str(max(1, math.ceil(wait_s)))


def too_many_failures(wait_s: float) -> Response:
    """The 429 a closed check answers, the guess left unchecked."""
    retry = retry_after_s(wait_s)
    return PlainTextResponse(
        f"too many failed credential checks from your address: try again in {retry} s",
        status_code=429,
        headers={"retry-after": retry},
    )


class AccessGuard:
    """ASGI middleware: the token or loopback rule, a CSRF seed cookie, the security headers.

    Every credential a request carries is checked here, through `throttle`,
    the one the login form counts in too: a guess costs the same whichever
    way it comes.
    """

    def __init__(
        self,
        app: ASGIApp,
        token: Secret | None,
        sessions: Sessions,
        *,
        secure: bool = False,
        throttle: LoginThrottle | None = None,
    ) -> None:
        self.app = app
        self.token = token
        self.sessions = sessions
        self.secure = secure
        self.throttle = throttle if throttle is not None else LoginThrottle()
        self.session_cookie = cookie_name(SESSION_COOKIE, secure)
        self.csrf_cookie = cookie_name(CSRF_COOKIE, secure)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            # The console serves none; refused before the app, which the guard would not cover.
            await send({"type": "websocket.close", "code": 1008})
            return
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
        if request.url.path.startswith(_OPEN_PATHS):
            return None  # the login form checks its token itself, through the same throttle
        address = client_address(request)
        header = request.headers.get("authorization")
        if header is not None:
            return self._check_header(self.token, header, address)
        session = request.cookies.get(self.session_cookie, "")
        if session:
            return self._check_session(request, session, address)
        return self._credentials_needed(request)

    def _check_header(self, token: Secret, header: str, address: str) -> Response | None:
        """`Authorization: Bearer TOKEN`; any other header is a failed check like a wrong token."""
        wait_s = self.throttle.wait_s(address)
        if wait_s > 0:
            return too_many_failures(wait_s)  # unchecked: a guess made while closed tells nothing
        scheme, _, credential = header.partition(" ")
        if scheme.lower() == "bearer" and token.matches(credential.strip()):
            self.throttle.passed(address)
            return None
        self.throttle.failed(address)
        return PlainTextResponse(
            "wrong token", status_code=401, headers={"www-authenticate": "Bearer"}
        )

    def _check_session(self, request: Request, session: str, address: str) -> Response | None:
        """A session cookie: a live one always opens, a dead one counts as a failure.

        A live session can only come from a token check the throttle allowed,
        so closing it would let a guesser behind the same address (a proxy)
        cut off people already working. The dead cookie is cleared, so a
        browser whose session lapsed pays one failure, not one per request.
        """
        if self.sessions.check(session):
            self.throttle.passed(address)
            return None
        was_closed = self.throttle.wait_s(address) > 0
        self.throttle.failed(address)
        response = (
            too_many_failures(self.throttle.wait_s(address))
            if was_closed
            else self._credentials_needed(request)
        )
        response.delete_cookie(
            self.session_cookie, path="/", secure=self.secure, httponly=True, samesite="strict"
        )
        return response

    @staticmethod
    def _credentials_needed(request: Request) -> Response:
        if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
            return RedirectResponse("/login", status_code=303)
        return PlainTextResponse(
            "a token is required", status_code=401, headers={"www-authenticate": "Bearer"}
        )
