"""`run --otlp_endpoint`: the triage run's spans reach a real OTLP/HTTP receiver on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.triage.alerts import Alert
from app.triage.cli import main
from beam_agents.testing.services.otlp import OtlpReceiver, span_attributes

pytestmark = pytest.mark.pipeline


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as server:
        yield server


def test_a_triage_run_exports_its_spans_over_otlp_http(
    tmp_path: Path, receiver: OtlpReceiver
) -> None:
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
    assert {span_attributes(a)["beam_agents.activation.outcome"] for a in activations} == {
        "completed"
    }
    assert calls, "each triaged alert asks the model"
    for call in calls:
        attributes = span_attributes(call)
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.usage.input_tokens"] > 0  # type: ignore[operator]
        # A call span is a child of its activation's span, in the same trace.
        parents = [a for a in activations if a.span_id == call.parent_span_id]
        assert len(parents) == 1
        assert parents[0].trace_id == call.trace_id
