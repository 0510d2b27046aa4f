"""`python -m app.triage live`: a live run, and the console beside it when asked.

The console's port is checked before anything starts: a busy port would
leave the pipeline running without its console, behind a URL that answers
from another server. Ctrl-C (or SIGTERM) stops the run within seconds: the
feed ends, the pipeline gets `STOP_DRAIN_S` to drain (pending timers fire),
and whatever backlog is left then is dropped and counted; summary.json and
report.html are written from what the run emitted, and the console stops
with it. A run that reaches its end by itself keeps the console serving its
records and report until Ctrl-C. A second Ctrl-C interrupts at once.

While it runs, a line says when the pipeline falls behind its clock and by
how much (the console's overview shows the same figure).

Answers are signed, as on a deployment: the launcher takes the key from
`TRIAGE_ANSWER_SIGNING_KEY`, or draws one for the run into it (here, never
inside an activation), and both the pipeline and the console it starts name
it as `env:TRIAGE_ANSWER_SIGNING_KEY`. A console started apart must be given
the same: `--answer-signing-key env:TRIAGE_ANSWER_SIGNING_KEY` with that
variable set to the run's key.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from app.triage.alerts import Alert
from app.triage.live import LiveFeed, run_live
from app.triage.replay import ReplayResult
from app.triage.report import render_report
from app.triage.summary import count_rows, dead_letter_line, summarize
from beam_agents.memory.stores import open_store

__all__ = [
    "ANSWER_KEY_ENV",
    "STOP_DRAIN_S",
    "PortBusyError",
    "answer_signing_source",
    "check_port",
    "run_live_command",
]

ANSWER_KEY_ENV = "TRIAGE_ANSWER_SIGNING_KEY"
"""Where the live run's answer signing key lives; the console it starts inherits it."""

STOP_DRAIN_S = 5.0
"""After Ctrl-C, how long the pipeline may work off its backlog before it is cut."""
_BEHIND_S = 5.0
"""A lag (in the reader's seconds) worth a line on the terminal."""
_BEHIND_EVERY_S = 15.0
_CONSOLE_START_S = 60.0


class PortBusyError(OSError):
    """The console's port is taken; the message names it and what to do."""


def check_port(port: int, host: str = "127.0.0.1") -> None:
    """Raise PortBusyError when `host:port` cannot be bound (another server has it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise PortBusyError(
                f"port {port} on {host} is in use ({exc.strerror}); "
                f"stop what serves it or pick another: PORT={port + 1} make console "
                f"(or --port {port + 1})"
            ) from None


def answer_signing_source() -> str:
    """`env:TRIAGE_ANSWER_SIGNING_KEY`, drawing a fresh key into it unless one is set."""
    if not os.environ.get(ANSWER_KEY_ENV):
        os.environ[ANSWER_KEY_ENV] = secrets.token_hex(32)
    return f"env:{ANSWER_KEY_ENV}"


def _console_command(
    args: argparse.Namespace, answers: Path, resubmit: Path, uri: str, signing: str
) -> list[str]:
    beside = Path(sys.executable).parent / "beam-agents"
    program = str(beside) if beside.exists() else (shutil.which("beam-agents") or "beam-agents")
    return [
        program,
        "console",
        str(args.out),
        "--answers",
        str(answers),
        "--resubmit",
        str(resubmit),
        "--longterm",
        uri,
        "--port",
        str(args.port),
        "--answer-signing-key",
        signing,
        "--no-token",  # loopback only, as the launcher prints a URL a person opens as is
    ]


def _start_console(command: list[str], port: int, log: Path) -> subprocess.Popen[bytes]:
    """Start the console in its own session (Ctrl-C reaches this process only) and wait for it."""
    with log.open("wb") as sink:
        console = subprocess.Popen(  # noqa: S603
            command, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + _CONSOLE_START_S
    while time.monotonic() < deadline:
        if console.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
            raise PortBusyError(f"the console did not start: {tail[0]} (see {log})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return console
        except OSError:
            time.sleep(0.2)
    console.kill()
    console.wait()
    raise PortBusyError(f"the console did not answer on port {port} in {_CONSOLE_START_S:g} s")


async def _fresh_store(uri: str) -> None:
    async with open_store(uri) as store:
        await store.provision()


class _Stopper:
    """Ctrl-C: end the feed, then cut the drain after STOP_DRAIN_S; twice: interrupt."""

    def __init__(self, feed: LiveFeed, stream: TextIO) -> None:
        self.feed = feed
        self.cancel = threading.Event()
        self.asked = threading.Event()
        self._stream = stream
        self._timer: threading.Timer | None = None
        signal.signal(signal.SIGINT, self._stop)
        signal.signal(signal.SIGTERM, self._stop)

    def _stop(self, signum: int, _frame: FrameType | None) -> None:
        signal.signal(signum, signal.default_int_handler)
        self.asked.set()
        if self.feed.stop.is_set() and self._timer is None:
            return  # the run had ended by itself: nothing to drain
        print(
            f"\nstopping: no new alerts; the pipeline drains for at most {STOP_DRAIN_S:g} s "
            "(Ctrl-C again interrupts at once)",
            file=self._stream,
            flush=True,
        )
        self.feed.stop.set()
        self._timer = threading.Timer(STOP_DRAIN_S, self.cancel.set)
        self._timer.daemon = True
        self._timer.start()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


class _LagReport:
    """A terminal line when the pipeline falls behind its clock, and when it catches up."""

    def __init__(self, feed: LiveFeed, stream: TextIO) -> None:
        self.feed = feed
        self._stream = stream
        self._last = 0.0
        self._behind = False

    def __call__(self, _entered: int) -> None:
        if self.feed.stop.is_set():
            return
        lag_ms = self.feed.lag_ms()
        lag_s = lag_ms / self.feed.speedup / 1000
        now = time.monotonic()
        if lag_s >= _BEHIND_S and now - self._last >= _BEHIND_EVERY_S:
            self._behind, self._last = True, now
            print(
                f"behind: the pipeline is {lag_ms / 60_000:,.1f} min of run time ({lag_s:,.0f} s) "
                f"behind its clock; answers wait behind that backlog "
                f"({self.feed.sent:,} of {len(self.feed.alerts):,} alerts fed)",
                file=self._stream,
                flush=True,
            )
        elif self._behind and lag_s < 1.0:
            self._behind = False
            print("caught up: the pipeline is on its clock again", file=self._stream, flush=True)


def _ended_line(result: ReplayResult, feed: LiveFeed, cancelled: bool, out: Path) -> str:
    triaged = len(result.outputs)
    if not cancelled:
        return f"live run ended: {result.events:,} alerts, {triaged:,} triaged; files in {out}/"
    pending = sum(1 for line in result.intents if b'"awaits_answer":true' in line)
    return (
        f"stopped after a {STOP_DRAIN_S:g} s drain: {feed.sent:,} of {len(feed.alerts):,} alerts "
        f"were fed, {triaged:,} triaged; the backlog left ({feed.sent - triaged:,} alerts, "
        f"answers not yet read, {pending:,} approvals asked) was dropped. "
        f"Summary: {out / 'summary.json'}, report: {out / 'report.html'}"
    )


def _serve_until_interrupted(console: subprocess.Popen[bytes], stopper: _Stopper, url: str) -> None:
    print(
        f"the console keeps serving the run's records and report at {url}; Ctrl-C stops it",
        file=sys.stderr,
        flush=True,
    )
    while not stopper.asked.wait(0.5):
        if console.poll() is not None:
            return


def _stop_console(console: subprocess.Popen[bytes] | None) -> None:
    if console is None or console.poll() is not None:
        return
    console.terminate()
    try:
        console.wait(timeout=3)
    except subprocess.TimeoutExpired:
        console.kill()
        console.wait()


def run_live_command(args: argparse.Namespace, alerts: list[Alert]) -> int:
    """Run live until the feed ends (or Ctrl-C); returns the exit code."""
    out: Path = args.out
    if args.console:
        check_port(args.port)
    answers, resubmit, uri = _fresh_run_dir(out, args.answers)
    signing = answer_signing_source()
    feed = _started_feed(args, alerts, answers, resubmit)
    url = f"http://127.0.0.1:{args.port}/approvals"
    console = None
    if args.console:
        console = _start_console(
            _console_command(args, answers, resubmit, uri, signing), args.port, out / "console.log"
        )
        print(f"console: {url}", file=sys.stderr)
    hours = (alerts[-1].event_time_ms - alerts[0].event_time_ms) / 3_600_000
    print(
        f"live: {len(alerts):,} alerts over {hours:.1f} h of event time at {args.speedup:g}x; "
        f"a P1 waits {args.approval_window_s:g} s of your time for its answer; "
        f"answers from {answers}; records in {out}/. Ctrl-C stops it.",
        file=sys.stderr,
        flush=True,
    )
    stopper = _Stopper(feed, sys.stderr)
    try:
        result, cancelled = run_live(
            feed,
            out=out,
            longterm_uri=uri,
            model_spec=args.model,
            on_progress=_LagReport(feed, sys.stderr),
            cancel=stopper.cancel,
            answer_signing_key=signing,
        )
        _write_summary(result, out, uri)
        print(_ended_line(result, feed, cancelled, out), file=sys.stderr)
        print(dead_letter_line(result.errors), file=sys.stderr, flush=True)
        if console is not None and not stopper.asked.is_set():
            _serve_until_interrupted(console, stopper, url)
    finally:
        stopper.close()
        _stop_console(console)
    return 0 if result.outputs or not result.errors else 1


def _fresh_run_dir(out: Path, answers_arg: Path | None) -> tuple[Path, Path, str]:
    """`(answers file, resubmit file, store URI)` of a run directory emptied of the last run.

    Intent ids repeat across runs, so an old answer would answer a new
    approval, and the long-term store starts empty, as the feed does.
    """
    out.mkdir(parents=True, exist_ok=True)
    answers: Path = answers_arg or out / "answers.jsonl"
    resubmit = out / "resubmit.jsonl"
    for fresh in (answers, resubmit):
        fresh.write_bytes(b"")
    store_path = out / "longterm.sqlite"
    store_path.unlink(missing_ok=True)
    uri = f"sqlite+aiosqlite:///{store_path.as_posix()}"
    asyncio.run(_fresh_store(uri))
    return answers, resubmit, uri


def _started_feed(
    args: argparse.Namespace, alerts: list[Alert], answers: Path, resubmit: Path
) -> LiveFeed:
    """The feed of `alerts` at the run's speed, its clock published, the output files empty."""
    out: Path = args.out
    feed = LiveFeed(
        alerts,
        answers=answers,
        resubmit=resubmit,
        speedup=args.speedup,
        approval_window_s=args.approval_window_s,
    )
    feed.drain_s = args.drain_s if args.drain_s is not None else args.approval_window_s + 5
    for name in ("outputs", "intents", "errors", "lifecycle"):
        (out / f"{name}.jsonl").write_bytes(b"")  # the console must not show the last run's
    feed.clock_dir = out
    feed.publish()
    return feed


def _write_summary(result: ReplayResult, out: Path, uri: str) -> dict[str, Any]:
    summary = summarize(result, asyncio.run(count_rows(uri)))
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "report.html").write_text(render_report(summary, result.lifecycle))
    return summary
