"""Entity keys in spans and dead-letter logs: an HMAC under the deployment key, read on workers."""

from __future__ import annotations

import base64
import bz2
import hashlib
import hmac
import logging
import pickle
from collections.abc import Iterator

import apache_beam as beam
import pytest
from apache_beam.internal import pickler
from apache_beam.options.pipeline_options import PipelineOptions
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from beam_agents import AgentConfig, RunAgent, entity_hash
from beam_agents.entity_hash import EntityHasher, EntityHashKey, ProcessKey
from beam_agents.errors import ConfigurationError
from beam_agents.runtime._dofn import AgentDoFn
from beam_agents.runtime._tracebacks import dead_letter_log
from beam_agents.testing.streaming import Script, run_script
from tests.runtime import agents

LOGGER = "beam_agents.runtime.dead_letters"
ENV = "BEAM_AGENTS_TEST_ENTITY_HASH_KEY"
KEY = "5f1c0d9e8a7b6c5d4e3f2a1b0c9d8e7f"
OTHER_KEY = "0123456789abcdef0123456789abcdef"
ENTITY = "customer-4242@example.com"
HASH_ATTRIBUTE = "beam_agents.entity_key.hmac"

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
    dead_letter_log.reset()
    yield _exporter
    _exporter.clear()


def _hmac(key: str, entity: str) -> str:
    """The HMAC an operator can compute offline from the deployment key."""
    return hmac.new(key.encode(), entity.encode(), hashlib.sha256).hexdigest()[:32]


def _activations(found: tuple[ReadableSpan, ...]) -> list[ReadableSpan]:
    return [s for s in found if s.name == "activation"]


def _failing_run(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    exporter: InMemorySpanExporter,
    key: str,
) -> tuple[str, str]:
    """One dead-lettered activation under `key`: its span's hash and its log line."""
    monkeypatch.setenv(ENV, key)
    exporter.clear()
    dead_letter_log.reset()
    caplog.clear()
    script = Script().events((ENTITY, b"boom", 1_000))

    run = run_script(
        agents.explode_on_boom,
        AgentConfig(),
        script,
        options=[f"--entity_hash_secret=env:{ENV}"],
    )

    assert run.reasons() == ["activation_error"]
    (span,) = _activations(exporter.get_finished_spans())
    (logged,) = [r for r in caplog.records if r.name == LOGGER]
    hashed = span.attributes[HASH_ATTRIBUTE] if span.attributes else None
    assert isinstance(hashed, str)
    return hashed, logged.getMessage()


@pytest.mark.pipeline
def test_spans_and_dead_letter_log_carry_the_same_hmac_under_the_deployment_key(
    spans: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)

    hashed, line = _failing_run(monkeypatch, caplog, spans, KEY)
    again, line_again = _failing_run(monkeypatch, caplog, spans, KEY)
    other, other_line = _failing_run(monkeypatch, caplog, spans, OTHER_KEY)

    assert hashed == again == _hmac(KEY, ENTITY)
    assert f"entity_key.hmac {hashed} " in line
    assert f"entity_key.hmac {again} " in line_again
    assert other == _hmac(OTHER_KEY, ENTITY) != hashed
    assert f"entity_key.hmac {other} " in other_line
    plain = hashlib.sha256(ENTITY.encode()).hexdigest()
    for shown in (line, other_line, hashed, other):
        assert ENTITY not in shown
        assert plain[:16] not in shown
    assert "beam_agents.entity_key" not in _activations(spans.get_finished_spans())[0].attributes


@pytest.mark.pipeline
def test_revealing_keys_in_spans_keeps_the_hmac_beside_them(
    spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`trace_entity_keys=True` adds the raw key; the HMAC stays, to match the log lines."""
    monkeypatch.setenv(ENV, KEY)

    run_script(
        agents.explode_on_boom,
        AgentConfig(trace_entity_keys=True),
        Script().events((ENTITY, b"fine", 1_000)),
        options=[f"--entity_hash_secret=env:{ENV}"],
    )

    (span,) = _activations(spans.get_finished_spans())
    assert span.attributes is not None
    assert span.attributes["beam_agents.entity_key"] == ENTITY
    assert span.attributes[HASH_ATTRIBUTE] == _hmac(KEY, ENTITY)


@pytest.mark.pipeline
def test_without_a_deployment_key_spans_use_the_process_key_not_a_plain_hash(
    spans: InMemorySpanExporter,
) -> None:
    run_script(agents.explode_on_boom, AgentConfig(), Script().events((ENTITY, b"fine", 1_000)))

    (span,) = _activations(spans.get_finished_spans())
    assert span.attributes is not None
    hashed = span.attributes[HASH_ATTRIBUTE]
    assert isinstance(hashed, str)
    assert len(hashed) == 32
    assert hashed != hashlib.sha256(ENTITY.encode()).hexdigest()[:32]
    assert hashed not in (_hmac(KEY, ENTITY), _hmac(OTHER_KEY, ENTITY))


def test_the_process_key_is_random_per_process_and_announced_once_across_workers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger("tests.entity_hash.fallback")
    caplog.set_level(logging.WARNING, logger=logger.name)
    first, second = ProcessKey(logger), ProcessKey(logger)

    hashed = first.hasher(across_workers=True)(ENTITY.encode())

    assert first.hasher(across_workers=True)(ENTITY.encode()) == hashed
    assert first.hasher()(ENTITY.encode()) == hashed
    assert second.hasher(across_workers=True)(ENTITY.encode()) != hashed
    assert hashed != hashlib.sha256(ENTITY.encode()).hexdigest()[:32]
    announced = [r.getMessage() for r in caplog.records if r.name == logger.name]
    assert len(announced) == 2  # once per ProcessKey, however often it is used
    assert "do not match across workers" in announced[0]


@pytest.fixture
def fresh_process_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """This process's fallback key as if nothing had drawn it yet; returns its logger's name."""
    logger = logging.getLogger("tests.entity_hash.process")
    monkeypatch.setattr(entity_hash, "_process_key", ProcessKey(logger))
    return logger.name


def test_a_local_run_without_a_deployment_key_does_not_warn(
    fresh_process_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    """One process: its random key makes every hash it shows agree, nothing to warn about."""
    caplog.set_level(logging.WARNING, logger=fresh_process_key)

    run = run_script(agents.explode_on_boom, AgentConfig(), Script().events((ENTITY, b"boom", 1)))

    assert run.reasons() == ["activation_error"]  # its dead-letter log line hashed the key
    assert [r.getMessage() for r in caplog.records if r.name == fresh_process_key] == []


def test_a_deployed_worker_without_a_deployment_key_warns_once_per_process(
    fresh_process_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=fresh_process_key)
    dofns = [AgentDoFn(agents.remember, AgentConfig(), token=t, deployed=True) for t in "ab"]

    for dofn in dofns:
        dofn.setup()
        dofn.teardown()

    (warning,) = [r.getMessage() for r in caplog.records if r.name == fresh_process_key]
    assert "no --entity_hash_secret configured" in warning


def _staged(obj: object) -> bytes:
    """What Beam's pickler puts in the job's graph for `obj`, decompressed."""
    return bz2.decompress(base64.b64decode(pickler.dumps(obj)))


def _agent_dofn(options: list[str]) -> AgentDoFn:
    """The DoFn RunAgent builds, as Beam would stage it in the job's graph."""
    pipeline = beam.Pipeline(options=PipelineOptions(options))
    events = pipeline | beam.Create([(b"k", b"e")])
    _ = events | RunAgent(agents.explode_on_boom, AgentConfig())
    found: list[AgentDoFn] = []

    def visit(node: object) -> None:
        transform = getattr(node, "transform", None)
        if isinstance(transform, beam.ParDo) and isinstance(transform.fn, AgentDoFn):
            found.append(transform.fn)
        for part in getattr(node, "parts", []):
            visit(part)

    visit(pipeline.transforms_stack[0])
    (dofn,) = found
    return dofn


def test_the_pickled_dofn_carries_the_reference_and_the_worker_reads_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV, KEY)
    dofn = _agent_dofn([f"--entity_hash_secret=env:{ENV}"])

    staged = _staged(dofn)
    assert KEY.encode() not in staged
    assert f"env:{ENV}".encode() in staged
    worker = pickler.loads(pickler.dumps(dofn))
    worker.setup()
    try:
        activator = worker._live_activator().instance
        assert activator.entity_hasher(ENTITY.encode()) == _hmac(KEY, ENTITY)
        # Set up, the DoFn still pickles without the key: the hasher stays behind.
        assert KEY.encode() not in _staged(worker)
        with pytest.raises(TypeError, match="not picklable"):
            pickle.dumps(activator.entity_hasher)
    finally:
        worker.teardown()


def test_a_key_missing_on_the_worker_fails_setup_naming_the_option(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    dofn = _agent_dofn([f"--entity_hash_secret=env:{ENV}"])

    with pytest.raises(ConfigurationError, match=f"entity_hash_secret.*{ENV} is not set"):
        dofn.setup()


def test_a_key_given_in_place_of_its_reference_is_refused_without_echoing_it() -> None:
    with pytest.raises(ConfigurationError, match="entity_hash_secret") as refused:
        _agent_dofn([f"--entity_hash_secret={KEY}"])

    assert KEY not in str(refused.value)


def test_a_short_key_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="at least 16 bytes"):
        EntityHasher(b"short")


def test_the_hasher_hides_its_key_and_the_reference_shows_only_where_it_lives() -> None:
    hasher = EntityHasher(KEY.encode())

    assert KEY not in repr(hasher)
    assert repr(EntityHashKey(f"env:{ENV}")) == f"EntityHashKey(source='env:{ENV}')"
