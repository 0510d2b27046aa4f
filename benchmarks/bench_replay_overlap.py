"""The local replay with a slow model: overlapped calls against one call at a time.

The triage demo's first hour (212 alerts of 48 services) replays through
`app.triage.replay` on the streaming DirectRunner against an OpenAI-compatible
server on loopback, in a process of its own, that answers each request after
a fixed latency, with the demo's rules model deciding the answer so results
are meaningful. It runs twice in the same process: with
`max_inflight_calls=1` (every call holds the Beam thread: the serial
baseline) and with the default (calls park and overlap on the call loop).
Reported: both wall times, their ratio against
the target, the serial time a call at a time would take (alerts x latency),
and whether every output file the demo writes deterministically came out
byte-identical in both runs: outputs, intents and errors as they are; the
lifecycle and the summary but for what parking adds by design (`parked`
and `buffered` records, activations `drained` from a park's buffer, and a
re-run's replays of its own earlier calls).

Per-key order bounds the overlap: a service's alerts run one after another,
each with its calls. 4.4 per service on average here, but svc-042 has 34:
its chain alone is 34 calls of 300 ms end to end, so about 10 s is the floor.

    python benchmarks/bench_replay_overlap.py          # full run (make bench)
    python benchmarks/bench_replay_overlap.py --quick  # a short pass (the tests)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from app.triage.alerts import read_alerts, read_answers
from app.triage.data import DATA_DIR
from app.triage.model import rules_llm
from app.triage.pipeline import TOOLS
from app.triage.receiver import Receiver
from app.triage.replay import ReplayResult, replay
from app.triage.summary import count_rows, summarize
from beam_agents import LlmRequest
from beam_agents.memory.stores import open_store
from beam_agents.tools import open_ledger

TARGET_RATIO = 5.0
_MODEL = "triage-rules"
_KEY_ENV = "BENCH_REPLAY_OVERLAP_KEY"


@dataclass(frozen=True)
class Size:
    hours: float
    latency_s: float


FULL = Size(hours=1.0, latency_s=0.3)
QUICK = Size(hours=0.25, latency_s=0.05)


_answered: Any = None
"""Chat requests the server answered (the embedder's calls, which do not wait, never come):
a counter shared with the server's process, set in each process before it serves or reads."""


class _RulesHandler(BaseHTTPRequestHandler):
    """A chat-completions endpoint: the rules model's answer, after the server's latency."""

    latency_s = 0.3

    def do_POST(self) -> None:
        with _answered.get_lock():
            _answered.value += 1
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request = LlmRequest(
            model_id=body["model"], messages=[m["content"] for m in body["messages"]]
        )
        answer = asyncio.run(rules_llm.complete(request))
        time.sleep(self.latency_s)
        payload = json.dumps(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": answer.response.decode()},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": answer.input_tokens,
                    "completion_tokens": answer.output_tokens,
                    "total_tokens": answer.input_tokens + answer.output_tokens,
                },
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: one line per call would bury the report."""


def _serve(port: Connection, latency_s: float, answered: Any) -> None:
    """The server's process: answers on a free loopback port until it is terminated."""
    global _answered
    _answered = answered
    handler = type("Handler", (_RulesHandler,), {"latency_s": latency_s})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    port.send(server.server_address[1])
    server.serve_forever()


@contextmanager
def _model_server(latency_s: float) -> Iterator[str]:
    """A loopback server answering as the rules model does, in a process of its own.

    A model server is another process in any real setting; in this one its
    request handling (JSON, the rules model, the response) would take turns
    with the pipeline's threads on the interpreter lock and be counted as the
    pipeline's time. Yields the model spec.
    """
    global _answered
    spawn = multiprocessing.get_context("spawn")
    _answered = spawn.Value("i", 0)
    ours, theirs = spawn.Pipe()
    process = spawn.Process(target=_serve, args=(theirs, latency_s, _answered), daemon=True)
    process.start()
    os.environ[_KEY_ENV] = "bench-not-a-secret"
    try:
        port = ours.recv()
        yield (
            f"openai:{_MODEL}?base_url=http://127.0.0.1:{port}/v1"
            f"&api_key_env={_KEY_ENV}&max_retries=0"
        )
    finally:
        process.terminate()
        process.join()


async def _provision(uri: str) -> None:
    async with open_store(uri) as store:
        await store.provision()
    async with open_ledger(uri) as ledger:
        await ledger.provision()


@dataclass(frozen=True)
class Run:
    result: ReplayResult
    summary: dict[str, object]
    requests: int
    """Chat requests the model server answered during the run."""


def _run(size: Size, spec: str, work: Path, inflight: int) -> Run:
    alerts = read_alerts(DATA_DIR / "alerts.jsonl")
    answers = read_answers(DATA_DIR / "answers.jsonl")
    end = min(a.event_time_ms for a in alerts) + int(size.hours * 3_600_000)
    alerts = [a for a in alerts if a.event_time_ms < end]
    answers = [a for a in answers if a.event_time_ms < end]
    out = work / f"inflight-{inflight}"
    out.mkdir()
    uri = f"sqlite+aiosqlite:///{(out / 'longterm.sqlite').as_posix()}"
    asyncio.run(_provision(uri))
    before = _answered.value
    with Receiver(out / "deliveries.jsonl") as receiver:
        result = replay(
            alerts,
            answers,
            longterm_uri=uri,
            model_spec=spec,
            max_inflight_calls=inflight,
            tool_urls={t: receiver.url(t) for t in TOOLS},
        )
    summary = summarize(result, asyncio.run(count_rows(uri)), receiver.deliveries)
    return Run(result, summary, _answered.value - before)


PARK_RECORDS = ("parked", "buffered")
"""Lifecycle records only a key whose calls park writes: its park, and events waiting behind it."""
PARK_FIGURES = ("buffered", "lifecycle_by_kind", "cache_hits", "tool_retries")
"""Summary figures parking adds to by design: those records, and a re-run's replays of its
own earlier calls (model answers from the replay cache, tool results from the ledger)."""


def _unparked(lifecycle: list[bytes]) -> list[dict[str, object]]:
    """The lifecycle but what parking adds: its records, and `drained` on what waited behind."""
    records = [json.loads(line) for line in lifecycle]
    kept = [r for r in records if r["kind"] not in PARK_RECORDS]
    for record in kept:
        if record["kind"] == "activated" and record["detail"] == "drained":
            record["detail"] = ""
    return kept


def _unparked_summary(summary: dict[str, object]) -> dict[str, object]:
    kinds = {
        k: v
        for k, v in summary["lifecycle_by_kind"].items()  # type: ignore[attr-defined]
        if k not in PARK_RECORDS
    }
    figures = {k: v for k, v in summary.items() if k not in PARK_FIGURES}
    return {**figures, "lifecycle_by_kind without parks": kinds}


def _explain(serial: list[bytes], overlapped: list[bytes]) -> None:
    """Name the first lifecycle record that differs, with every record of its key in both runs."""
    pairs = zip(_unparked(serial), _unparked(overlapped), strict=False)
    first = next(((a, b) for a, b in pairs if a != b), None)
    if first is None:
        print("lifecycle: one run has more records than the other", file=sys.stderr)
        return
    print(f"first lifecycle difference: serial {first[0]}, overlapped {first[1]}", file=sys.stderr)
    service = first[0].get("service")
    for name, lines in (("serial", serial), ("overlapped", overlapped)):
        for record in (json.loads(line) for line in lines):
            if record.get("service") == service:
                print(f"  {name}: {record}", file=sys.stderr)


def differences(serial: Run, overlapped: Run) -> list[str]:
    """What differs between the two runs' deterministic outputs (none: byte-identical)."""
    found = [
        name
        for name in ("outputs", "intents", "errors")
        if getattr(serial.result, name) != getattr(overlapped.result, name)
    ]
    if _unparked(serial.result.lifecycle) != _unparked(overlapped.result.lifecycle):
        found.append("lifecycle")
        _explain(serial.result.lifecycle, overlapped.result.lifecycle)
    if _unparked_summary(serial.summary) != _unparked_summary(overlapped.summary):
        found.append("summary")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short pass, for the tests")
    size = QUICK if parser.parse_args().quick else FULL
    logging.getLogger("beam_agents").setLevel(logging.ERROR)  # the demo's expected dead letters
    with tempfile.TemporaryDirectory() as tmp, _model_server(size.latency_s) as spec:
        serial = _run(size, spec, Path(tmp), 1)
        overlapped = _run(size, spec, Path(tmp), 256)
    events = serial.result.events
    chat_calls = serial.requests
    one_at_a_time_s = chat_calls * size.latency_s
    serial_s, overlapped_s = serial.result.wall_seconds, overlapped.result.wall_seconds
    print(f"{events} alerts, {chat_calls} chat calls of {size.latency_s * 1000:.0f} ms")
    print(f"one call at a time (chat calls x latency): {one_at_a_time_s:7.1f} s")
    print(f"serial run (max_inflight_calls=1):         {serial_s:7.1f} s")
    print(f"overlapped run (default):                  {overlapped_s:7.1f} s")
    ratio = serial_s / overlapped_s
    print(f"ratio to the serial run: {ratio:.1f}x (target >= {TARGET_RATIO:.0f}x)")
    print(f"ratio to one call at a time: {one_at_a_time_s / overlapped_s:.1f}x")
    differ = differences(serial, overlapped)
    print(f"outputs byte-identical: {not differ}")
    if differ:
        raise SystemExit(f"the overlapped run's {', '.join(differ)} differ from the serial run's")


if __name__ == "__main__":
    main()
