"""`run --otlp_endpoint`: the triage run's spans reach a real OTLP/HTTP receiver on loopback."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from app.triage.alerts import Alert
from app.triage.cli import main

pytestmark = pytest.mark.pipeline


class _Receiver(ThreadingHTTPServer):
    """Decodes every OTLP/HTTP protobuf export it is sent."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.spans: list[Span] = []
        self.paths: list[str] = []

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}/v1/traces"


class _Handler(BaseHTTPRequestHandler):
    server: _Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest.FromString(body)
        self.server.paths.append(self.path)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                self.server.spans.extend(scope.spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads what arrived, not the access log."""


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    server = _Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def _attributes(span: Span) -> dict[str, object]:
    found: dict[str, object] = {}
    for attribute in span.attributes:
        value = attribute.value
        found[attribute.key] = getattr(value, value.WhichOneof("value") or "string_value")
    return found


def test_a_triage_run_exports_its_spans_over_otlp_http(tmp_path: Path, receiver: _Receiver) -> None:
    alerts = tmp_path / "alerts.jsonl"
    lines = [
        Alert("db-1", "a-1", "warning", "slow disk", 1_000_000),
        Alert("web-1", "a-2", "info", "all quiet", 1_060_000),
    ]
    alerts.write_bytes(b"".join(a.to_bytes() + b"\n" for a in lines))
    uri = f"sqlite+aiosqlite:///{tmp_path / 'lt.sqlite'}"

    code = main(
        ["run", "--input", str(alerts), "--model", "rules", "--longterm", uri, "--provision",
         "--out", str(tmp_path / "out"), "--otlp_endpoint", receiver.url]
    )  # fmt: skip

    assert code == 0
    assert set(receiver.paths) == {"/v1/traces"}
    activations = [s for s in receiver.spans if s.name == "activation"]
    calls = [s for s in receiver.spans if s.name.startswith("chat ")]
    assert len(activations) >= len(lines)
    assert {_attributes(a)["beam_agents.activation.outcome"] for a in activations} == {"completed"}
    assert calls, "each triaged alert asks the model"
    for call in calls:
        attributes = _attributes(call)
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.usage.input_tokens"] > 0  # type: ignore[operator]
        # A call span is a child of its activation's span, in the same trace.
        parents = [a for a in activations if a.span_id == call.parent_span_id]
        assert len(parents) == 1
        assert parents[0].trace_id == call.trace_id
