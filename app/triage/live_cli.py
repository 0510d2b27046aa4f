"""`python -m app.triage live`: a live run, and the console beside it when asked.

The first Ctrl-C (or SIGTERM) ends the feed: the pipeline drains (pending
timers fire), summary.json and report.html are written, and the console
stops with it. A second Ctrl-C interrupts at once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

from app.triage.alerts import Alert
from app.triage.live import LiveFeed, run_live
from app.triage.report import render_report
from app.triage.summary import count_rows, summarize
from beam_agents.memory.stores import open_store

__all__ = ["run_live_command"]


def _console_command(
    args: argparse.Namespace, answers: Path, resubmit: Path, uri: str
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
    ]


async def _fresh_store(uri: str) -> None:
    async with open_store(uri) as store:
        await store.provision()


def _stop_on_signals(feed: LiveFeed) -> None:
    def stop(signum: int, _frame: FrameType | None) -> None:
        print("\nstopping: the pipeline drains, then writes its summary", file=sys.stderr)
        feed.stop.set()
        signal.signal(signum, signal.default_int_handler)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


def run_live_command(args: argparse.Namespace, alerts: list[Alert]) -> int:
    """Run live until the feed ends; returns the exit code."""
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    answers: Path = args.answers or out / "answers.jsonl"
    resubmit = out / "resubmit.jsonl"
    for fresh in (answers, resubmit):  # intent ids repeat across runs: old answers must not
        fresh.write_bytes(b"")
    store_path = out / "longterm.sqlite"
    store_path.unlink(missing_ok=True)
    uri = f"sqlite+aiosqlite:///{store_path.as_posix()}"
    asyncio.run(_fresh_store(uri))
    feed = LiveFeed(alerts, answers=answers, resubmit=resubmit, speedup=args.speedup)
    feed.drain_s = args.drain_s
    console = None
    if args.console:
        console = subprocess.Popen(_console_command(args, answers, resubmit, uri))  # noqa: S603
        print(f"console: http://127.0.0.1:{args.port}/approvals", file=sys.stderr)
    hours = (alerts[-1].event_time_ms - alerts[0].event_time_ms) / 3_600_000
    print(
        f"live: {len(alerts):,} alerts over {hours:.1f} h of event time at {args.speedup:g}x; "
        f"answers from {answers}; records in {out}/. Ctrl-C stops it.",
        file=sys.stderr,
    )
    _stop_on_signals(feed)
    try:
        result = run_live(feed, out=out, longterm_uri=uri, model_spec=args.model)
    finally:
        if console is not None:
            console.terminate()
            console.wait(timeout=10)
    summary = summarize(result, asyncio.run(count_rows(uri)))
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "report.html").write_text(render_report(summary, result.lifecycle))
    print(f"live run ended: {summary['events']:,} alerts; files in {out}/", file=sys.stderr)
    return 0
