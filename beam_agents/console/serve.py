"""`beam-agents console SOURCE`: check the command line, then serve until interrupted.

The token comes from `--token` or, better (a command line is visible to
every user of the machine), from `BEAM_AGENTS_CONSOLE_TOKEN`, and must pass
`Secret`'s strength rule. Given none, the console generates one and writes
it to a file only its user can read, removed when the console stops: the
terminal names the file, never the token, since what a console prints
tends to end in a shared log (a launcher's log file, CI, a journal).
`--no-token` keeps the loopback-only mode without a token, for a machine
with one user.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from beam_agents.errors import ConfigurationError

if TYPE_CHECKING:
    from beam_agents.console.app import ConsoleSettings
    from beam_agents.console.identity import IapIdentity
    from beam_agents.console.security import Secret

__all__ = ["TOKEN_ENV", "add_arguments", "run"]

SCHEME = "pubsub://"
TOKEN_ENV = "BEAM_AGENTS_CONSOLE_TOKEN"  # noqa: S105 (the variable's name, not a token)


def add_arguments(console: argparse.ArgumentParser) -> None:
    """The `console` subcommand's arguments (no web framework imported for this)."""
    _add_run_arguments(console)
    _add_listener_arguments(console)
    _add_access_arguments(console)


def _add_run_arguments(console: argparse.ArgumentParser) -> None:
    """The run the console shows, and where its answers and re-submissions go."""
    console.add_argument(
        "source",
        metavar="SOURCE",
        help="a run directory (followed as it grows), or a deployed job's subscriptions: "
        "pubsub://PROJECT/SUBSCRIPTION with {name} for intents, lifecycle, errors, outputs",
    )
    console.add_argument(
        "--answers",
        metavar="SINK",
        help="JSON-lines file answers are appended to, or pubsub://PROJECT/TOPIC",
    )
    console.add_argument(
        "--spool", type=Path, help="where a pubsub:// SOURCE is mirrored (default: a temp dir)"
    )
    console.add_argument("--longterm", metavar="URI", help="long-term store to show rows from")
    console.add_argument(
        "--resubmit", metavar="FILE", type=Path, help="input file dead letters are re-submitted to"
    )
    console.add_argument(
        "--approval-timeout-s",
        type=int,
        default=900,
        help="how long an approval waits before the pipeline times it out (default 900)",
    )


def _add_listener_arguments(console: argparse.ArgumentParser) -> None:
    """Where the console listens, and whether it or a proxy in front terminates TLS."""
    console.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    console.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    console.add_argument("--tls-cert", metavar="PEM", help="serve HTTPS with this certificate")
    console.add_argument("--tls-key", metavar="PEM", help="the certificate's private key")
    console.add_argument(
        "--behind-tls-proxy",
        action="store_true",
        help="a proxy in front terminates TLS: allows a non-loopback --host without "
        "--tls-cert, and marks cookies Secure",
    )


def _add_access_arguments(console: argparse.ArgumentParser) -> None:
    """Who may answer: the token, the logins' lifetimes, the signing key, IAP's identity."""
    console.add_argument(
        "--token",
        help=f"require this token (or set {TOKEN_ENV}); at least 128 bits, see docs/console.md; "
        "without one the console generates one and says in which file",
    )
    console.add_argument(
        "--no-token",
        action="store_true",
        help="no token: serve 127.0.0.1 only, to anyone on this machine",
    )
    console.add_argument(
        "--session-idle-s",
        type=float,
        default=1800,
        help="a login lapses after this long without a request (default 1800)",
    )
    console.add_argument(
        "--session-max-s",
        type=float,
        default=43200,
        help="a login lapses this long after it was made, used or not (default 43200)",
    )
    console.add_argument(
        "--answer-signing-key",
        metavar="SOURCE",
        help="sign answers with the key in env:NAME or projects/P/secrets/S/versions/V "
        "(the pipeline's AgentConfig.answer_signing_key)",
    )
    console.add_argument(
        "--iap-audience",
        metavar="AUDIENCE",
        help="behind IAP: verify its signed header for this audience and take the approver from it",
    )


def _source(args: argparse.Namespace) -> Path:
    """The run directory to serve: SOURCE itself, or the spool a Pub/Sub mirror fills."""
    if not args.source.startswith(SCHEME):
        source = Path(args.source)
        if not source.is_dir():
            raise ConfigurationError("SOURCE", f"{source} is not a directory")
        return source
    from beam_agents.console.pubsub import PubSubMirror

    spool = args.spool or Path(tempfile.mkdtemp(prefix="beam-agents-console-"))
    mirror = PubSubMirror(args.source, spool)
    mirror.start()
    print(f"mirroring {args.source} into {spool}", file=sys.stderr)
    return spool


def run(args: argparse.Namespace) -> None:
    """Serve the console for `args` until interrupted; raises ConfigurationError first."""
    try:
        import uvicorn

        from beam_agents.console.app import create_app
    except ImportError as exc:
        raise ConfigurationError(
            "console", f"needs the console extra: pip install 'beam-agents[console]' ({exc.name})"
        ) from None
    tls = args.tls_cert is not None
    settings, generated = _settings(args, tls=tls)
    app = create_app(settings)
    host = f"[{args.host}]" if ":" in args.host else args.host
    scheme = "https" if tls else "http"
    print(f"beam-agents console: {scheme}://{host}:{args.port}/ (Ctrl-C stops it)", file=sys.stderr)
    with _generated_token_file(generated):
        uvicorn.run(
            app,
            host=args.host,
            port=args.port,
            log_level="warning",
            ssl_certfile=args.tls_cert,
            ssl_keyfile=args.tls_key,
        )


@contextlib.contextmanager
def _generated_token_file(token: str | None) -> Iterator[None]:
    """While serving, the generated token's file; removed however the console stops.

    uvicorn re-raises a SIGTERM after its graceful shutdown, which would end
    the process before any cleanup ran, so SIGTERM becomes `SystemExit` here.
    Only SIGKILL leaves the file behind, still in its private directory.
    """
    if token is None:
        yield
        return
    directory = _token_file(token)
    previous = signal.getsignal(signal.SIGTERM)
    in_main = threading.current_thread() is threading.main_thread()

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    if in_main:
        signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
        shutil.rmtree(directory, ignore_errors=True)


def _token_file(token: str) -> Path:
    """Write a generated token where only this user can read it, and say where; its directory.

    `mkdtemp` makes the directory 0700 and the file is created 0600, so the
    token never exists readable by another user, and nothing prints it.
    """
    directory = Path(tempfile.mkdtemp(prefix="beam-agents-console-token-"))
    path = directory / "token"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    print(
        f"no --token or {TOKEN_ENV} given, so one was generated: it is in {path} (readable by "
        "you only, removed when the console stops); paste it into the login form or send it "
        "as Authorization: Bearer",
        file=sys.stderr,
        flush=True,
    )
    return directory


def _settings(args: argparse.Namespace, *, tls: bool) -> tuple[ConsoleSettings, str | None]:
    """The console's settings, every argument checked before the source is opened, and the
    token's text when it was generated here (to be written where its user can find it).

    Opening a `pubsub://` source starts mirroring it, so a mistake anywhere
    on the command line is refused first.
    """
    from beam_agents.console.app import ConsoleSettings
    from beam_agents.console.sessions import SessionPolicy

    token, generated = _token(args, tls=tls)
    signing_key = _signing_key(args)
    identity = _identity(args)
    try:
        policy = SessionPolicy(idle_s=args.session_idle_s, absolute_s=args.session_max_s)
    except ValueError as exc:
        raise ConfigurationError("--session-idle-s", str(exc)) from None
    source = _source(args)
    answers = args.answers or ""
    settings = ConsoleSettings(
        source=source,
        answers=Path(answers) if answers and not answers.startswith(SCHEME) else None,
        answers_topic=answers if answers.startswith(SCHEME) else None,
        token=token,
        longterm_uri=args.longterm,
        resubmit=args.resubmit,
        approval_timeout_ms=args.approval_timeout_s * 1000,
        sessions=policy,
        secure_cookies=tls or args.behind_tls_proxy,
        answer_signing_key=signing_key,
        identity=identity,
    )
    return settings, generated


def _token(args: argparse.Namespace, *, tls: bool) -> tuple[Secret | None, str | None]:
    """The login token (and its text when generated here), refused when weak or when the
    address it would guard is not safe to bind."""
    from beam_agents.console.security import Secret, check_bind

    raw_token = args.token or os.environ.get(TOKEN_ENV)
    if (args.tls_cert is None) != (args.tls_key is None):
        raise ConfigurationError("--tls-cert", "--tls-cert and --tls-key go together")
    generated = None
    if args.no_token:
        if raw_token:
            raise ConfigurationError("--no-token", f"contradicts --token or {TOKEN_ENV}")
        token = None
    elif raw_token:
        token = Secret(raw_token)
    else:
        token, generated = Secret.generate()
    check_bind(args.host, token, tls=tls, behind_tls_proxy=args.behind_tls_proxy)
    return token, generated


def _signing_key(args: argparse.Namespace) -> bytes | None:
    """The answer-signing key's bytes, read now, so a wrong source fails at start."""
    if args.answer_signing_key is None:
        return None
    from beam_agents.answer_signing import check_key_source, read_signing_key

    key_source = check_key_source("--answer-signing-key", args.answer_signing_key)
    return read_signing_key("--answer-signing-key", key_source)


def _identity(args: argparse.Namespace) -> IapIdentity | None:
    """IAP's verifier for `--iap-audience`, when the console runs behind IAP."""
    if args.iap_audience is None:
        return None
    from beam_agents.console.identity import IapIdentity

    try:
        return IapIdentity(args.iap_audience)
    except ValueError as exc:
        raise ConfigurationError("--iap-audience", str(exc)) from None
