"""The console's pages and forms (Starlette, Jinja2 templates with autoescaping).

Every page re-reads what the run appended since the last request, so a
reload shows the run as it is now; the only script is a five-second reload
that waits while someone is typing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from beam_agents.console.activity import RunActivity, run_progress
from beam_agents.console.answers import DECISIONS, AnswerRefusedError, AnswersFile
from beam_agents.console.charts import bar_chart, memory_chart, span, when
from beam_agents.console.follow_ups import lifecycle_detail
from beam_agents.console.identity import IAP_HEADER, IapIdentity, IdentityRefusedError
from beam_agents.console.limits import MAX_BODY_BYTES, BodyLimit
from beam_agents.console.results import result_fields
from beam_agents.console.security import (
    REPORT_POLICY,
    SESSION_COOKIE,
    AccessGuard,
    Secret,
    client_address,
    cookie_name,
    retry_after_s,
    valid_csrf,
)
from beam_agents.console.sessions import LoginThrottle, SessionPolicy, Sessions
from beam_agents.console.storage import longterm_rows

__all__ = ["ConsoleSettings", "create_app"]

_HERE = Path(__file__).parent


@dataclass(frozen=True)
class ConsoleSettings:
    """What one console serves: a run directory, its answers sink, and who may use it."""

    source: Path
    answers: Path | None = None
    answers_topic: str | None = None
    """`pubsub://PROJECT/TOPIC`: answers are published there (and kept in `source`)."""
    token: Secret | None = None
    longterm_uri: str | None = None
    resubmit: Path | None = None
    approval_timeout_ms: int = 15 * 60_000
    sessions: SessionPolicy = field(default_factory=SessionPolicy)
    secure_cookies: bool = False
    """Served over HTTPS (itself, or behind a proxy that terminates TLS): `Secure`,
    `__Host-` cookies."""
    clock: Callable[[], float] = time.monotonic
    """Times sessions and the login throttle (tests pass their own)."""
    answer_signing_key: bytes | None = field(default=None, repr=False)
    """Signs every answer (`beam_agents.answer_signing`); the pipeline holds the same key."""
    identity: IapIdentity | None = None
    """Behind IAP: the approver is the identity IAP's signed assertion names."""


class _Console:
    def __init__(self, settings: ConsoleSettings) -> None:
        self.settings = settings
        self.activity = RunActivity(
            settings.source, approval_timeout_ms=settings.approval_timeout_ms
        )
        self.answers: AnswersFile | None = None
        if settings.answers_topic is not None:
            from beam_agents.console.pubsub import PubSubAnswers

            self.answers = PubSubAnswers(
                settings.answers_topic,
                settings.source,
                self.activity,
                settings.answer_signing_key,
            )
        elif settings.answers is not None:
            self.answers = AnswersFile(settings.answers, self.activity, settings.answer_signing_key)
        self.sessions = Sessions(settings.sessions, settings.clock)
        self.throttle = LoginThrottle(settings.clock)
        self.session_cookie = cookie_name(SESSION_COOKIE, settings.secure_cookies)
        self.templates = Environment(
            loader=FileSystemLoader(_HERE / "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
        )
        self.templates.filters.update(when=when, span=span, lifecycle_detail=lifecycle_detail)

    def refresh(self) -> None:
        self.activity.refresh()
        if self.answers is not None:
            self.answers.refresh()

    def page(self, request: Request, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        template = self.templates.get_template(name)
        html = template.render(
            csrf=request.scope["state"]["csrf"],
            token_required=self.settings.token is not None,
            now_ms=int(time.time() * 1000),
            source=str(self.settings.source),
            path=request.url.path,
            clock=self.activity.clock,
            **values,
        )
        return HTMLResponse(html, status_code=status)


async def _form(request: Request) -> dict[str, str] | None:
    body = await request.body()  # BodyLimit read it, under its cap
    if len(body) > MAX_BODY_BYTES:
        return None
    try:
        parsed = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=16)
    except (UnicodeDecodeError, ValueError):
        return None
    return {name: values[0] for name, values in parsed.items()}


def _routes(console: _Console) -> list[Route | Mount]:
    return [
        *_page_routes(console),
        *_form_routes(console),
        *_login_routes(console),
        Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
    ]


def _page_routes(console: _Console) -> list[Route]:
    async def overview(request: Request) -> Response:
        console.refresh()
        figures = console.activity.figures()
        charts = [bar_chart(title, counts) for title, counts in figures["charts"].items()]
        has_report = (console.settings.source / "report.html").is_file()
        return console.page(
            request,
            "overview.html",
            figures=figures,
            charts=charts,
            has_report=has_report,
            progress=run_progress(console.activity.clock),
        )

    async def approvals(request: Request) -> Response:
        console.refresh()
        return _approvals_page(console, request)

    async def entities(request: Request) -> Response:
        console.refresh()
        return console.page(request, "entities.html", entities=console.activity.entities())

    async def entity(request: Request) -> Response:
        console.refresh()
        return await _entity_page(console, request, request.path_params["entity"])

    async def dead_letters(request: Request) -> Response:
        console.refresh()
        return _dead_letters_page(console, request)

    async def report(request: Request) -> Response:
        try:
            html = (console.settings.source / "report.html").read_text(encoding="utf-8")
        except FileNotFoundError:
            return console.page(request, "refused.html", 404, reason="no report.html yet")
        # The run's report: static HTML with its own inline stylesheet and no script.
        return HTMLResponse(html, headers={"content-security-policy": REPORT_POLICY})

    return [
        Route("/report", report),
        Route("/", overview),
        Route("/approvals", approvals),
        Route("/entities", entities),
        Route("/entities/{entity:path}", entity),
        Route("/dead-letters", dead_letters),
    ]


async def _entity_page(console: _Console, request: Request, name: str) -> Response:
    """One entity: its results, its follow-ups, its lifecycle, and its long-term rows."""
    lifecycle = console.activity.lifecycle_of(name)
    rows, rows_error = await longterm_rows(console.settings.longterm_uri, name)
    return console.page(
        request,
        "entity.html",
        entity=name,
        results=[result_fields(r) for r in console.activity.results_of(name)],
        follow_ups=console.activity.pending_wakes_of(name),
        wake_history=console.activity.wake_history_of(name),
        lifecycle=lifecycle,
        memory=memory_chart(lifecycle),
        rows=rows,
        rows_error=rows_error,
        longterm=console.settings.longterm_uri is not None,
    )


def _form_routes(console: _Console) -> list[Route]:
    async def answer(request: Request) -> Response:
        form = await _form(request)
        if form is None or not valid_csrf(request, form.get("csrf", "")):
            return console.page(request, "refused.html", 403, reason="missing or stale CSRF token")
        if console.answers is None:
            return console.page(request, "refused.html", 409, reason="no --answers sink")
        approver = form.get("approver", "")
        if console.settings.identity is not None:
            try:
                approver = console.settings.identity.approver(request.headers.get(IAP_HEADER, ""))
            except IdentityRefusedError as exc:
                return console.page(request, "refused.html", 403, reason=str(exc))
        console.refresh()
        try:
            written = console.answers.submit(
                request.path_params["intent_id"],
                form.get("decision", ""),
                form.get("reason", ""),
                approver,
            )
        except AnswerRefusedError as exc:
            return _approvals_page(console, request, error=str(exc), status=409)
        query = urlencode({"answered": str(written.get("intent_id", ""))})
        return RedirectResponse(f"/approvals?{query}", status_code=303)

    async def resubmit(request: Request) -> Response:
        form = await _form(request)
        if form is None or not valid_csrf(request, form.get("csrf", "")):
            return console.page(request, "refused.html", 403, reason="missing or stale CSRF token")
        return _resubmit(console, request, form)

    return [
        Route("/approvals/{intent_id}", answer, methods=["POST"]),
        Route("/dead-letters/resubmit", resubmit, methods=["POST"]),
    ]


def _approvals_page(
    console: _Console, request: Request, *, error: str = "", status: int = 200
) -> Response:
    approvals = console.activity.approvals()
    confirmed = console.activity.approval(request.query_params.get("answered", ""))
    return console.page(
        request,
        "approvals.html",
        status,
        pending=[a for a in approvals if a.pending],
        settled=[a for a in approvals if not a.pending],
        confirmed=confirmed if confirmed is not None and confirmed.answer else None,
        decisions=DECISIONS,
        can_answer=console.answers is not None,
        iap=console.settings.identity is not None,
        timeout_ms=console.settings.approval_timeout_ms,
        error=error,
    )


def _dead_letters_page(
    console: _Console, request: Request, *, message: str = "", status: int = 200
) -> Response:
    return console.page(
        request,
        "dead_letters.html",
        status,
        errors=console.activity.errors(),
        can_resubmit=console.settings.resubmit is not None,
        message=message,
    )


def _resubmit(console: _Console, request: Request, form: Mapping[str, str]) -> Response:
    """Append a dead letter's payload to the input the pipeline follows, as it was."""
    target = console.settings.resubmit
    if target is None:
        return console.page(request, "refused.html", 409, reason="no --resubmit input")
    console.refresh()
    errors = console.activity.errors()
    try:
        error = errors[int(form.get("index", ""))]
    except (ValueError, IndexError):
        return _dead_letters_page(console, request, message="no such dead letter", status=409)
    payload = error.get("payload")
    if not isinstance(payload, str) or "\n" in payload:
        return _dead_letters_page(
            console, request, message="this payload is not one text line", status=409
        )
    with target.open("a", encoding="utf-8") as handle:
        handle.write(payload + "\n")
    return _dead_letters_page(console, request, message=f"re-submitted to {target.name}")


def _login_routes(console: _Console) -> list[Route]:
    async def login(request: Request) -> Response:
        if request.method == "GET":
            return console.page(request, "login.html")
        form = await _form(request)
        token = console.settings.token
        if form is None or not valid_csrf(request, form.get("csrf", "")):
            return console.page(request, "refused.html", 403, reason="missing or stale CSRF token")
        address = client_address(request)
        wait_s = console.throttle.wait_s(address)
        if wait_s > 0:
            # Refused unchecked: a guess made while closed tells nothing.
            retry = retry_after_s(wait_s)
            error = f"too many failed credential checks from your address: try again in {retry} s"
            closed = console.page(request, "login.html", 429, error=error)
            closed.headers["retry-after"] = retry
            return closed
        if token is None or not token.matches(form.get("token", "")):
            console.throttle.failed(address)
            return console.page(request, "login.html", 401, error="wrong token")
        console.throttle.succeeded(address)
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            console.session_cookie,
            console.sessions.open(),
            httponly=True,
            samesite="strict",
            path="/",
            secure=console.settings.secure_cookies,
        )
        return response

    async def logout(request: Request) -> Response:
        form = await _form(request)
        if form is None or not valid_csrf(request, form.get("csrf", "")):
            return console.page(request, "refused.html", 403, reason="missing or stale CSRF token")
        console.sessions.close(request.cookies.get(console.session_cookie, ""))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(
            console.session_cookie,
            path="/",
            secure=console.settings.secure_cookies,
            httponly=True,
            samesite="strict",
        )
        return response

    return [
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
    ]


def create_app(settings: ConsoleSettings) -> BodyLimit:
    """The console as an ASGI application, guarded (see `beam_agents.console.security`).

    The guard and the login form count failures in one throttle, so a guess
    costs the same through a header, a cookie or the form. The body cap is
    outermost: no request, authenticated or not, is read past it.
    """
    console = _Console(settings)
    console.refresh()
    guarded = AccessGuard(
        Starlette(routes=_routes(console)),
        settings.token,
        console.sessions,
        secure=settings.secure_cookies,
        throttle=console.throttle,
    )
    return BodyLimit(guarded)
