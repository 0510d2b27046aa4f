"""An OTLP/HTTP trace receiver on a loopback port, for tests: it decodes what it is sent.

The real exporter (`opentelemetry-exporter-otlp-proto-http`) posts protobuf
`ExportTraceServiceRequest`s; this server parses them with the protocol's own
messages, so a test reads back the spans a pipeline exported as a collector
would have received them.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING

from beam_agents.testing.services._process import LOOPBACK

if TYPE_CHECKING:
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

__all__ = ["OtlpReceiver", "span_attributes"]


class OtlpReceiver(ThreadingHTTPServer):
    """Serves until `stop()` (or the `with` block ends); `spans` is what arrived, in order."""

    def __init__(self) -> None:
        super().__init__((LOOPBACK, 0), _Handler)
        self.spans: list[Span] = []
        self.paths: list[str] = []
        self.service_names: set[str] = set()
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """The traces endpoint: `http://127.0.0.1:<port>/v1/traces`."""
        return f"{self.base_url}/v1/traces"

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join()

    def __enter__(self) -> OtlpReceiver:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    server: OtlpReceiver

    def do_POST(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest.FromString(body)
        self.server.paths.append(self.path)
        for resource in request.resource_spans:
            for attribute in resource.resource.attributes:
                if attribute.key == "service.name":
                    self.server.service_names.add(attribute.value.string_value)
            for scope in resource.scope_spans:
                self.server.spans.extend(scope.spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: tests read what arrived, not the access log."""


def span_attributes(span: Span) -> dict[str, object]:
    """A decoded span's attributes as plain Python values."""
    found: dict[str, object] = {}
    for attribute in span.attributes:
        value = attribute.value
        found[attribute.key] = getattr(value, value.WhichOneof("value") or "string_value")
    return found
