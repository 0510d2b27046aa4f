"""Spans through a real OpenTelemetry SDK: activations, model calls, flushes, failures."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator, Sequence

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from beam_agents import AgentConfig, intent_id
from beam_agents.model import FakeEmbedder, FakeLLM
from beam_agents.telemetry import tool_span
from beam_agents.testing.streaming import Script, run_script
from tests.runtime import agents
from tests.tools import agents as tool_agents

pytestmark = pytest.mark.pipeline

_exporter = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def _sdk() -> None:
    """One SDK per process (the global provider is set once): ours, or the one installed."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(_exporter))


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    _exporter.clear()
    yield _exporter
    _exporter.clear()


def _fake(name: str, **script: object) -> AgentConfig:
    provider = FakeLLM(name=name, default=b"answer {n}", **script)  # type: ignore[arg-type]
    provider.reset()
    return AgentConfig(provider_factory=provider, max_inflight_calls=1)


def _named(found: Sequence[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [s for s in found if s.name.startswith(prefix)]


def _children(found: Sequence[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    assert parent.context is not None
    return [s for s in found if s.parent is not None and s.parent.span_id == parent.context.span_id]


def test_each_activation_has_a_span_with_a_gen_ai_child_per_model_call(
    spans: InMemorySpanExporter,
) -> None:
    config = _fake("otel-calls", fail_pattern="boom")
    script = Script().events(("a", b"hello", 1_000), ("b", b"world", 2_000), ("c", b"boom", 3_000))

    run = run_script(agents.ask_model, config, script)

    found = spans.get_finished_spans()
    activations = sorted(_named(found, "activation"), key=lambda s: s.start_time or 0)
    assert len(activations) == 3
    assert [a.attributes["beam_agents.activation.outcome"] for a in activations] == [
        "completed",
        "completed",
        "failed",
    ]
    first = activations[0]
    assert first.attributes["beam_agents.activation.seq"] == 1
    assert first.attributes["beam_agents.activation.parks"] == 0
    assert first.attributes["beam_agents.activation.cache_hits"] == 0
    # The key is hashed under a key (tests/runtime/test_entity_hash.py), never plainly.
    hashed = first.attributes["beam_agents.entity_key.hmac"]
    assert isinstance(hashed, str)
    assert len(hashed) == 32
    assert hashed != hashlib.sha256(b"a").hexdigest()[:32]
    assert "beam_agents.entity_key" not in first.attributes
    input_tokens = 0
    for activation in activations[:2]:
        (call,) = _children(found, activation)
        attributes = call.attributes
        assert call.name == "chat fake-1"
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.request.model"] == "fake-1"
        assert attributes["beam_agents.model.cache_hit"] is False
        assert attributes["gen_ai.usage.input_tokens"] > 0
        assert attributes["gen_ai.usage.output_tokens"] > 0
        input_tokens += attributes["gen_ai.usage.input_tokens"]
    failed = activations[2]
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["error.type"] == "model_error"
    assert [e.name for e in failed.events] == ["dead_letter"]
    (failed_call,) = _children(found, failed)
    assert failed_call.status.status_code is StatusCode.ERROR
    assert "gen_ai.usage.input_tokens" not in failed_call.attributes
    assert run.reasons() == ["model_error"]
    # The Beam counters agree with the spans.
    model = "beam_agents.model/fake-1"
    assert run.counter(model, "input_tokens") == input_tokens
    assert run.counter(model, "model_calls") == 3
    assert run.counter(model, "cache_hits") == 0


def test_a_resumed_activation_replays_its_call_without_usage(spans: InMemorySpanExporter) -> None:
    config = _fake("otel-resume")
    script = (
        Script()
        .events(("k", b"disk full", 1_000))
        .watermark(2_000)
        .answers(("k", intent_id(b"k", 1, 1), b"yes", 3_000))
    )

    run = run_script(agents.approve_then_act, config, script, clock_ms=agents.clock_at_zero)

    assert run.errors == []
    found = spans.get_finished_spans()
    suspended, resumed = sorted(_named(found, "activation"), key=lambda s: s.start_time or 0)
    assert suspended.attributes["beam_agents.activation.outcome"] == "suspended"
    assert resumed.attributes["beam_agents.activation.outcome"] == "completed"
    assert resumed.attributes["beam_agents.activation.rerun"] == "resumed"
    assert resumed.attributes["beam_agents.activation.seq"] == 1
    assert resumed.attributes["beam_agents.activation.cache_hits"] == 1
    (asked,) = _children(found, suspended)
    (replayed,) = _children(found, resumed)
    assert asked.attributes["gen_ai.usage.output_tokens"] > 0
    assert replayed.attributes["beam_agents.model.cache_hit"] is True
    assert not [a for a in replayed.attributes if a.startswith("gen_ai.usage.")]
    assert run.counter("beam_agents.model/fake-1", "cache_hits") == 1
    assert run.counter("beam_agents.model/fake-1", "model_calls") == 1


def test_a_parked_activation_is_a_parked_attempt_then_a_rerun(
    spans: InMemorySpanExporter,
) -> None:
    provider = FakeLLM(name="otel-park", default=b"late", latency_s=0.05)
    provider.reset()
    config = AgentConfig(provider_factory=provider, max_inflight_calls=4)
    events = [(f"k{i}", b"slow %d" % i, 1_000 + i) for i in range(4)]

    run = run_script(agents.ask_model, config, Script().events(*events))

    assert len(run.outputs) == 4
    parks = run.counter("beam_agents.runtime", "parks")
    assert parks > 0  # the first call waits in place; later ones park
    found = spans.get_finished_spans()
    attempts = _named(found, "activation")
    parked = [a for a in attempts if a.attributes["beam_agents.activation.outcome"] == "parked"]
    reruns = [a for a in attempts if a.attributes.get("beam_agents.activation.rerun") == "parked"]
    assert len(parked) == len(reruns) == parks
    for attempt in parked:
        assert attempt.attributes["beam_agents.activation.parks"] == 1
        (waiting,) = _children(found, attempt)
        assert waiting.attributes["beam_agents.model.parked"] is True
        assert waiting.status.status_code is StatusCode.UNSET
        assert "gen_ai.usage.input_tokens" not in waiting.attributes
    for rerun in reruns:
        assert rerun.attributes["beam_agents.activation.outcome"] == "completed"
    # Each of the four calls is counted once, by the attempt that got its answer.
    used = [s for s in found if "gen_ai.usage.input_tokens" in s.attributes]
    assert len(used) == 4


def test_an_embedding_call_has_an_embeddings_span_under_its_activation(
    spans: InMemorySpanExporter,
) -> None:
    name = f"otel-embed-{uuid.uuid4().hex}"
    config = AgentConfig(
        longterm_memory=f"memory://{name}",
        embedder=FakeEmbedder(name=name),
        max_inflight_calls=1,
    )

    run_script(agents.save_and_recall, config, Script().events(("a", b"disk full", 1_000)))

    found = spans.get_finished_spans()
    (activation,) = _named(found, "activation")
    calls = [s for s in _children(found, activation) if s.name.startswith("embeddings")]
    assert [call.name for call in calls] == ["embeddings fake-embed-256"]
    attributes = calls[0].attributes
    assert attributes is not None
    assert attributes["gen_ai.operation.name"] == "embeddings"
    assert attributes["gen_ai.request.model"] == "fake-embed-256"
    assert attributes["gen_ai.usage.input_tokens"] == 2  # the saved text, also the query


def test_a_longterm_flush_has_its_own_span(spans: InMemorySpanExporter) -> None:
    uri = f"memory://otel-{uuid.uuid4().hex}"
    config = AgentConfig(longterm_memory=uri, trace_entity_keys=True)

    run = run_script(agents.save_case, config, Script().events(("case-1", b"disk", 1_000)))

    assert run.errors == []
    found = spans.get_finished_spans()
    (activation,) = _named(found, "activation")
    assert activation.attributes["beam_agents.entity_key"] == "case-1"
    (flush,) = _children(found, activation)
    assert flush.name == "longterm.flush"
    assert flush.attributes["beam_agents.longterm.rows"] == 1


def test_each_tool_call_has_an_execute_tool_span_with_its_intent_id(
    spans: InMemorySpanExporter,
) -> None:
    handler = tool_agents.slow_ticket
    config = AgentConfig(
        tools={"open_ticket": handler}, tool_ledger=f"memory://otel-{uuid.uuid4().hex}"
    )
    events = [(f"k{i}", b"event %d" % i, 1_000 + i) for i in range(4)]

    run = run_script(tool_agents.ticket_by_call, config, Script().events(*events))

    assert len(run.outputs) == 4
    found = spans.get_finished_spans()
    calls = _named(found, "execute_tool open_ticket")
    activations = {a.context.span_id for a in _named(found, "activation") if a.context}
    assert all(c.parent is not None and c.parent.span_id in activations for c in calls)
    done = [c for c in calls if "beam_agents.tool.status" in c.attributes]
    assert sorted(c.attributes["gen_ai.tool.call.id"] for c in done) == sorted(
        intent_id(f"k{i}".encode(), 1, -1) for i in range(4)
    )
    assert {c.attributes["beam_agents.tool.status"] for c in done} == {"executed"}
    # The first call waits in place; later ones park, and their re-run takes the result.
    parked = [c for c in calls if c.attributes.get("beam_agents.tool.parked")]
    assert len(parked) == run.counter("beam_agents.runtime", "parks") >= 1
    assert all(c.status.status_code is StatusCode.UNSET for c in parked)


def test_a_tool_span_records_its_failure(spans: InMemorySpanExporter) -> None:
    call_id = intent_id(b"k", 1, -1)
    with pytest.raises(RuntimeError), tool_span(None, "page", call_id):
        raise RuntimeError("pager down")

    (failed,) = spans.get_finished_spans()
    assert failed.name == "execute_tool page"
    assert failed.attributes["gen_ai.tool.call.id"] == call_id
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["error.type"] == "RuntimeError"
    assert [e.name for e in failed.events] == ["exception"]


def test_a_provider_error_that_cannot_describe_itself_is_recorded_on_its_span(
    spans: InMemorySpanExporter,
) -> None:
    config = AgentConfig(provider_factory=agents.unprintable_provider, max_inflight_calls=1)

    run = run_script(agents.ask_model, config, Script().events(("k", b"hello", 1_000)))

    assert run.reasons() == ["model_error"]
    (call,) = _named(spans.get_finished_spans(), "chat")
    assert call.status.status_code is StatusCode.ERROR
    assert call.status.description == "_Unprintable: <str() of the exception raised RuntimeError>"


def _texts(span: ReadableSpan) -> Iterator[str]:
    """Every text a span carries: its name, attributes, events and status."""
    yield span.name
    yield from (str(value) for value in (span.attributes or {}).values())
    for event in span.events:
        yield event.name
        yield from (str(value) for value in (event.attributes or {}).values())
    yield span.status.description or ""


@pytest.mark.parametrize("inflight", [1, 256])
def test_no_span_carries_a_credential_from_a_provider_or_tool_error(
    spans: InMemorySpanExporter, inflight: int
) -> None:
    """Provider and tool errors whose messages hold credentials fail their calls' spans
    (messages, stack traces, statuses) scrubbed, as the errors output is, parked or not."""
    config = AgentConfig(
        provider_factory=agents.leaky_provider,
        tools={"open_ticket": agents.leaky_ticket},
        tool_ledger=f"memory://otel-{uuid.uuid4().hex}",
        max_inflight_calls=inflight,
    )
    events = [(f"k{i}", b"tool" if i % 2 else b"ask", 1_000 + i) for i in range(6)]

    run = run_script(agents.ticket_or_ask, config, Script().events(*events))

    assert sorted(run.reasons()) == ["model_error"] * 3 + ["tool_error"] * 3
    assert all("***" in e.detail for e in run.errors)
    found = spans.get_finished_spans()
    failed = {s.name for s in found if s.status.status_code is StatusCode.ERROR}
    assert failed == {"activation", "chat fake-1", "execute_tool open_ticket"}
    assert any(e.name == "exception" for s in found for e in s.events)
    leaks = [
        (span.name, text)
        for span in found
        for text in _texts(span)
        if any(secret in text for secret in agents.LEAKED_SECRETS)
    ]
    assert leaks == []
