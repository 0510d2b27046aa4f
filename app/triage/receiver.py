"""The demo's delivery target: a loopback HTTP server standing in for the pager and tracker.

`page_oncall`, `open_ticket` and `escalate` are POSTed here by `HttpWebhook`s.
Each request is one line of `deliveries.jsonl`: its `Idempotency-Key`, the
tool, the service, the alert, the id answered, and whether that key had
been delivered before. The answer is a function of the key alone (as a
real tracker that deduplicates on it would answer), so a repeated delivery
gets the same ticket id, and a run's files do not depend on arrival order.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Final

__all__ = ["PREFIXES", "Receiver"]

PREFIXES: Final = {"page_oncall": "PAGE", "open_ticket": "TKT", "escalate": "ESC"}
"""The id each tool's target answers: `{"id": "TKT-<first 8 of the key>"}`."""


class Receiver:
    """Serves on 127.0.0.1 (a free port) until closed; `deliveries` are the request lines."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.deliveries: list[dict[str, Any]] = []
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, tool: str) -> str:
        """Where `tool` is delivered."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/{tool}"

    def deliver(self, tool: str, key: str, body: dict[str, Any]) -> dict[str, str]:
        """Record one delivery and answer its id (the same id for the same key)."""
        answer = {"id": f"{PREFIXES.get(tool, 'REQ')}-{key[:8]}"}
        args = body.get("args")
        if not isinstance(args, dict):
            args = {}
        with self._lock:
            duplicate = key in self._seen
            self._seen.add(key)
            self.deliveries.append(
                {
                    "idempotency_key": key,
                    "tool": tool,
                    "service": body.get("entity_key"),
                    "alert_id": args.get("alert_id", ""),
                    "answered": answer["id"],
                    "duplicate": duplicate,
                }
            )
        return answer

    def write(self) -> None:
        """`deliveries.jsonl`, sorted by key then arrival, so two runs diff cleanly."""
        with self._lock:
            lines = sorted(self.deliveries, key=lambda d: (d["idempotency_key"], d["duplicate"]))
        self.path.write_text("".join(json.dumps(d, sort_keys=True) + "\n" for d in lines))

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def _handler_for(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the webhooks reuse their connections
        disable_nagle_algorithm = True  # headers and body leave at once, not 40 ms apart

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            key = self.headers.get("Idempotency-Key")
            try:
                body = json.loads(self.rfile.read(length))
            except ValueError:
                body = None
            if not key or not isinstance(body, dict):
                self.send_error(400, "a delivery is a JSON object with an Idempotency-Key")
                return
            answer = json.dumps(receiver.deliver(self.path.strip("/"), key, body)).encode()
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            return  # the deliveries file is the log

    return Handler
