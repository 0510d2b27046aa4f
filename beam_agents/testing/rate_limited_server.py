"""A chat-completions server on loopback that holds a quota the way providers do.

To prove that a pipeline keeps under a provider's quota, it has to meet
one: this server speaks the OpenAI chat-completions wire format
(`POST /v1/chat/completions`, any bearer key) and enforces requests and
tokens per minute over short periods, as providers do: 600 rpm is 10 a
second, with a one-second burst. Past the limit it answers 429 with
`Retry-After` / `retry-after-ms` (the time until the request would have
been admitted) and an OpenAI-shaped error body. It answers after a set
latency, counts what it accepted and refused, and reports the most
requests it accepted within any 1 s and 10 s window.

`quota_exhausted = True` switches it to a spent daily quota: every request
gets 429 `insufficient_quota` (or 403 with `quota_status=403`).
`refuse_next(n, retry_after_s)` refuses the next n requests with a chosen
`Retry-After`, for a test that needs a refusal at an exact point.

    with RateLimitedServer(rpm=600, latency_s=0.2) as server:
        provider = OpenAICompatibleProvider("m", base_url=server.base_url)
        ...
        assert server.stats().throttled == 0

From another process (a benchmark, a manual run), `GET /stats` returns
the same counts as JSON:

    python -m beam_agents.testing.rate_limited_server --rpm 600 --tpm 200000

Answers depend only on the request (`echo: <last message>`), so a test can
check that waiting changed when a call went, never what it answered.
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Final, Self

from beam_agents.testing.services._process import LOOPBACK

__all__ = ["CHARS_PER_TOKEN", "RateLimitedServer", "ServerStats", "main"]

CHARS_PER_TOKEN: Final = 4
"""The server counts a request's prompt tokens as its message characters / 4."""


@dataclass(frozen=True, slots=True)
class ServerStats:
    """What the server saw so far."""

    requests: int
    accepted: int
    throttled: int
    """Requests refused with 429 for rate (not for an exhausted quota)."""
    quota_refused: int
    """Requests refused because the quota was exhausted (429 insufficient_quota or 403)."""
    tokens: int
    """Prompt plus completion tokens of the accepted requests."""
    max_per_1s: int
    """The most requests accepted within any one-second window."""
    max_per_10s: int
    """The most requests accepted within any ten-second window."""


class _Bucket:
    """GCRA over one limit: `cost` units per request at `per_minute`, `burst_s` at once."""

    def __init__(self, per_minute: int, burst_s: float) -> None:
        self.interval = 60.0 / per_minute
        self.burst_s = burst_s
        self.tat = 0.0

    def wait(self, now: float, cost: int) -> float:
        """Seconds until `cost` would fit (0: it fits now); inf when it never can."""
        if cost * self.interval > self.burst_s:
            return math.inf
        return max(0.0, max(self.tat, now) + cost * self.interval - self.burst_s - now)

    def take(self, now: float, cost: int) -> None:
        self.tat = max(self.tat, now) + cost * self.interval


class _Listener(ThreadingHTTPServer):
    """The stdlib server with a listen backlog a fleet's burst of connections fits in.

    The default backlog (5) resets connections when a few hundred parked
    calls open theirs at once: a connection error the test did not ask for.
    """

    request_queue_size = 1024


class RateLimitedServer:
    """An OpenAI-compatible server on 127.0.0.1 holding `rpm` and `tpm`; a context manager.

    `output_tokens` is the completion length every answer reports (capped
    by the request's `max_completion_tokens` / `max_tokens`); the token
    limit charges prompt plus completion tokens when a request is admitted.
    """

    def __init__(
        self,
        *,
        rpm: int | None = None,
        tpm: int | None = None,
        latency_s: float = 0.0,
        burst_s: float = 1.0,
        output_tokens: int = 16,
        quota_status: int = 429,
        port: int = 0,
    ) -> None:
        if quota_status not in (403, 429):
            raise ValueError(f"quota_status must be 403 or 429, got {quota_status}")
        self.latency_s = latency_s
        self.output_tokens = output_tokens
        self.quota_status = quota_status
        self.quota_exhausted = False
        self._requests = _Bucket(rpm, burst_s) if rpm else None
        self._tokens = _Bucket(tpm, burst_s) if tpm else None
        self._lock = threading.Lock()
        self._accepted_at: list[float] = []
        self._seen_at: list[tuple[float, int]] = []
        self._throttled = 0
        self._quota_refused = 0
        self._token_count = 0
        self._forced: list[float] = []
        self._httpd = _Listener((LOOPBACK, port), _handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The loopback port served."""
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """What `OpenAICompatibleProvider(base_url=...)` takes."""
        return f"http://{LOOPBACK}:{self.port}/v1"

    def start(self) -> None:
        """Serve on a background thread."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, name="rate-limited-server", daemon=True
            )
            self._thread.start()

    def serve_forever(self) -> None:
        """Serve on this thread until interrupted (the command's way)."""
        try:
            self._httpd.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self._httpd.server_close()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def refuse_next(self, count: int, retry_after_s: float) -> None:
        """Answer the next `count` requests 429 with this `Retry-After`, whatever the limits."""
        with self._lock:
            self._forced.extend([retry_after_s] * count)

    def stats(self) -> ServerStats:
        """The counts so far."""
        with self._lock:
            accepted = list(self._accepted_at)
            return ServerStats(
                requests=len(self._seen_at),
                accepted=len(accepted),
                throttled=self._throttled,
                quota_refused=self._quota_refused,
                tokens=self._token_count,
                max_per_1s=_most_within(accepted, 1.0),
                max_per_10s=_most_within(accepted, 10.0),
            )

    def requests_between(self, start: float, end: float) -> int:
        """Requests received (any answer) between two `time.monotonic()` readings."""
        with self._lock:
            return sum(1 for at, _ in self._seen_at if start <= at < end)

    def accepted_times(self) -> list[float]:
        """When (`time.monotonic()`) each accepted request arrived, in order."""
        with self._lock:
            return list(self._accepted_at)

    def first_at(self, status: int) -> float | None:
        """When (`time.monotonic()`) the first request answered `status` arrived, if any."""
        with self._lock:
            return next((at for at, seen in self._seen_at if seen == status), None)

    def statuses(self) -> list[int]:
        """The status of every request answered, in arrival order."""
        with self._lock:
            return [status for _, status in self._seen_at]

    def admit(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        """Decide one request: (status, JSON body, extra headers). Answers after `latency_s`."""
        messages = body.get("messages")
        prompt = _prompt_tokens(messages)
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        completion = self.output_tokens
        if isinstance(limit, int) and limit > 0:
            completion = min(completion, limit)
        cost = prompt + completion
        now = time.monotonic()
        with self._lock:
            if self.quota_exhausted:
                self._seen_at.append((now, self.quota_status))
                self._quota_refused += 1
                return self.quota_status, _quota_error(), {}
            forced = self._forced.pop(0) if self._forced else None
            if forced is not None:
                wait = forced
            else:
                wait = max(
                    self._requests.wait(now, 1) if self._requests else 0.0,
                    self._tokens.wait(now, cost) if self._tokens else 0.0,
                )
            if wait > 0:
                self._seen_at.append((now, 429))
                self._throttled += 1
                return 429, *_rate_error(wait)
            if self._requests:
                self._requests.take(now, 1)
            if self._tokens:
                self._tokens.take(now, cost)
            self._seen_at.append((now, 200))
            self._accepted_at.append(now)
            self._token_count += cost
        if self.latency_s > 0:
            time.sleep(self.latency_s)
        return 200, _answer(body.get("model"), messages, prompt, completion), {}


def _prompt_tokens(messages: object) -> int:
    if not isinstance(messages, list):
        return 0
    chars = sum(len(json.dumps(message, sort_keys=True)) for message in messages)
    return max(1, chars // CHARS_PER_TOKEN)


def _answer(model: object, messages: object, prompt: int, completion: int) -> dict[str, Any]:
    last = messages[-1] if isinstance(messages, list) and messages else {}
    content = last.get("content") if isinstance(last, dict) else None
    return {
        "id": "chatcmpl-rate-limited-server",
        "object": "chat.completion",
        "created": 0,
        "model": model if isinstance(model, str) else "",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": f"echo: {content}"},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _rate_error(wait_s: float) -> tuple[dict[str, Any], dict[str, str]]:
    if math.isinf(wait_s):
        message = "Request too large for the tokens-per-minute limit."
        headers: dict[str, str] = {}
    else:
        message = f"Rate limit reached. Please try again in {wait_s:.3f}s."
        headers = {
            "retry-after": str(max(1, math.ceil(wait_s))),
            "retry-after-ms": str(max(1, math.ceil(wait_s * 1000))),
        }
    error = {"message": message, "type": "requests", "param": None, "code": "rate_limit_exceeded"}
    return {"error": error}, headers


def _quota_error() -> dict[str, Any]:
    return {
        "error": {
            "message": (
                "You exceeded your current quota, please check your plan and billing details."
            ),
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    }


def _most_within(times: Sequence[float], window_s: float) -> int:
    """The most of the sorted `times` inside any half-open window of `window_s` seconds."""
    most = 0
    for index, start in enumerate(times):
        most = max(most, bisect.bisect_left(times, start + window_s, lo=index) - index)
    return most


def _handler(server: RateLimitedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}}, {})
                return
            length = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._send(400, {"error": {"message": "body is not JSON"}}, {})
                return
            if not isinstance(body, dict):
                self._send(400, {"error": {"message": "body is not a JSON object"}}, {})
                return
            self._send(*server.admit(body))

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/stats":
                self._send(200, asdict(server.stats()), {})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}}, {})

        def _send(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
            data = json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler


def main(argv: Sequence[str] | None = None) -> None:
    """Serve until interrupted, printing the base URL first."""
    parser = argparse.ArgumentParser(
        prog="python -m beam_agents.testing.rate_limited_server", description=__doc__
    )
    parser.add_argument("--rpm", type=int, default=None, help="requests per minute")
    parser.add_argument("--tpm", type=int, default=None, help="tokens per minute")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before answering")
    parser.add_argument("--burst", type=float, default=1.0, help="seconds of the rate at once")
    parser.add_argument("--output-tokens", type=int, default=16)
    parser.add_argument("--port", type=int, default=0, help="loopback port (0: a free one)")
    args = parser.parse_args(argv)
    server = RateLimitedServer(
        rpm=args.rpm,
        tpm=args.tpm,
        latency_s=args.latency,
        burst_s=args.burst,
        output_tokens=args.output_tokens,
        port=args.port,
    )
    print(server.base_url, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
