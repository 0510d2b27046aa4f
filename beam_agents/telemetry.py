"""OpenTelemetry spans for activations, model calls, tool calls and long-term flushes.

The runtime depends on `opentelemetry-api` only and takes its tracer from
the global tracer provider, so nothing is recorded or exported until the
application installs an SDK (`opentelemetry.trace.set_tracer_provider`); an
SDK installed after the pipeline started is picked up at its next bundle.
Without one, the runtime starts no activation span at all (`sdk_installed`
is asked once per bundle); a model call's span is then the API's shared
non-recording span, and no attribute is built for it (`is_recording()` is
checked first).

Spans are made where the DoFns run: on Dataflow or Flink, in the workers.
The `--otlp_endpoint` pipeline option (`beam_agents.TelemetryOptions`) has
each worker process install the exporter itself, once, as its first agent
DoFn instance is set up (`ensure_otlp_export`).

One activation span covers one *attempt*: one run of the agent on the Beam
thread, from opening its memory to its commit, suspension, park or dead
letter. A parked activation is re-run later (by its poll, possibly on
another thread or worker) at the same seq: that re-run is a second span
with the same seq, marked `beam_agents.activation.rerun`, whose earlier
calls appear as replay-cache hits. Spans never outlive the thread that
started them, so none is left open while a key waits.

Model call spans follow the OpenTelemetry GenAI semantic conventions. A
call answered from the replay cache is marked `beam_agents.model.cache_hit`
and carries no `gen_ai.usage.*`: those tokens were spent, and counted, by
the attempt that asked the provider.

Spans leave the process, so they are held to the errors output's rule: no
credential in them. Every text a span records passes through one of two
functions here, `_set` (attributes) and `_fail` (a failure's `error.type`,
its event and its status), and both scrub it as a dead letter's detail is
scrubbed. A failure is recorded as the semantic conventions' `exception`
event, built here rather than by the SDK's `record_exception`, whose
message and stack trace would go out as the exception holds them (a
provider's error may quote its URL or its key).
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import ClassVar, Final, Protocol, TypeVar
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from beam_agents._connections.url_credentials import check_url_credentials, redact_uri
from beam_agents._scrub import scrub_secrets
from beam_agents.errors import ConfigurationError, exception_text
from beam_agents.model.messages import LlmResponse

__all__ = [
    "TRACER_NAME",
    "TRACES_PATH",
    "ActivationSpan",
    "ModelCall",
    "ToolSpan",
    "ensure_otlp_export",
    "export_otlp",
    "flush_otlp_exports",
    "flush_span",
    "model_span",
    "sdk_installed",
    "tool_span",
    "traces_endpoint",
]

TRACER_NAME: Final = "beam_agents"

OUTCOME: Final = "beam_agents.activation.outcome"
SEQ: Final = "beam_agents.activation.seq"
PARKS: Final = "beam_agents.activation.parks"
CACHE_HITS: Final = "beam_agents.activation.cache_hits"
MODEL_CALLS: Final = "beam_agents.activation.model_calls"
RERUN: Final = "beam_agents.activation.rerun"
KEY: Final = "beam_agents.entity_key"
KEY_HASH: Final = "beam_agents.entity_key.hmac"
CACHE_HIT: Final = "beam_agents.model.cache_hit"
PARKED: Final = "beam_agents.model.parked"
ROWS: Final = "beam_agents.longterm.rows"
TOOL_STATUS: Final = "beam_agents.tool.status"
TOOL_PARKED: Final = "beam_agents.tool.parked"
ERROR_TYPE: Final = "error.type"
_EXTRA: Final = "pip install 'beam-agents[telemetry]'"
TRACES_PATH: Final = "/v1/traces"
"""The OTLP/HTTP path for traces, added to an endpoint given as a bare base URL."""


_tracer: Final = trace.get_tracer(TRACER_NAME)
"""Taken once: before an SDK is installed this is the API's proxy tracer, which
hands each span to the SDK's tracer as soon as one is installed."""


def sdk_installed() -> bool:
    """Whether an SDK is installed, so spans would be recorded.

    Asked once per bundle, not per activation: even the API's non-recording
    span costs ~0.7 µs to start and end, about 9% of a no-op activation.
    """
    provider = trace.get_tracer_provider()
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


def traces_endpoint(endpoint: str) -> str:
    """`endpoint` validated, with `/v1/traces` added to a bare `http(s)://host:port`.

    A collector's base URL is what OTLP configuration usually names; the
    exporter posts to the URL it is given, so the traces path is added here.
    Anything but an http(s) URL with a host is a `ConfigurationError` that
    shows the value redacted. A credential in it (userinfo, a `token=`) is
    refused: the endpoint is a pipeline option, staged in the job's graph.
    """
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname or endpoint != endpoint.strip():
        raise ConfigurationError(
            "otlp_endpoint",
            "must be an http(s) URL of an OTLP/HTTP receiver, e.g. "
            f"http://otel-collector:4318{TRACES_PATH}; got {redact_uri(endpoint)!r}",
        )
    hint = "give the exporter its credential through OTEL_EXPORTER_OTLP_HEADERS on the workers"
    check_url_credentials("otlp_endpoint", endpoint, hint=hint)
    if parts.path in ("", "/") and not parts.query:
        return parts._replace(path=TRACES_PATH).geturl()
    return endpoint


class _Processor(Protocol):
    """What is used of the SDK's `BatchSpanProcessor` (the SDK is an optional extra)."""

    def force_flush(self, timeout_millis: int = ...) -> bool: ...

    def shutdown(self) -> None: ...


_exports_lock: Final = threading.Lock()
_exports: dict[str, _Processor] = {}
"""This process's OTLP exports by endpoint; several DoFn instances share one."""


def export_otlp(endpoint: str, *, service_name: str) -> Callable[[], None]:
    """Export this process's spans to an OTLP/HTTP `endpoint` (`.../v1/traces`).

    Installs the SDK (the `telemetry` extra) as the global tracer provider,
    or adds the exporter to the SDK provider already installed. Returns the
    function that flushes what is batched and stops exporting to `endpoint`
    in this process, for the end of a run. Exporting to an endpoint this
    process already exports to adds nothing (as `ensure_otlp_export`), so a
    launcher that is also the worker (a local run) sends each span once.
    A bare base URL gets the traces path (`traces_endpoint`).
    """
    endpoint = traces_endpoint(endpoint)
    processor, _ = _export(endpoint, service_name)

    def stop() -> None:
        with _exports_lock:
            if _exports.get(endpoint) is processor:
                del _exports[endpoint]
        processor.force_flush()
        processor.shutdown()

    return stop


def ensure_otlp_export(endpoint: str, *, service_name: str) -> bool:
    """Export this process's spans to `endpoint`, once: True when this call started it.

    Safe from several threads and DoFn instances at once. The first call
    installs the SDK's tracer provider (resource `service.name`) unless an
    SDK provider is installed already, which then gets the exporter added;
    a provider of another kind cannot take one, and is refused. The SDK's
    provider flushes and stops its exporters when the process exits. A bare
    base URL gets the traces path (`traces_endpoint`).
    """
    return _export(traces_endpoint(endpoint), service_name)[1]


def _export(endpoint: str, service_name: str) -> tuple[_Processor, bool]:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ConfigurationError(
            "otlp_endpoint", f"exporting spans needs the telemetry extra ({_EXTRA}): {exc}"
        ) from None
    with _exports_lock:
        if endpoint in _exports:
            return _exports[endpoint], False
        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            if sdk_installed():
                raise ConfigurationError(
                    "otlp_endpoint",
                    f"the installed tracer provider ({type(provider).__name__}) is not the "
                    "OpenTelemetry SDK's and cannot take an exporter: add one to it yourself",
                )
            provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
            trace.set_tracer_provider(provider)
        processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint))
        provider.add_span_processor(processor)
        _exports[endpoint] = processor
        return processor, True


def flush_otlp_exports(timeout_millis: int = 5_000) -> None:
    """Send what this process's OTLP exports have batched, waiting at most `timeout_millis` each.

    The batching exporter sends on its own every few seconds; this is for a
    point after which spans must have left (a DoFn's teardown, a run's end).
    """
    with _exports_lock:
        processors = list(_exports.values())
    for processor in processors:
        processor.force_flush(timeout_millis)


class ActivationSpan:
    """One attempt's span, and what its model calls add to it."""

    __slots__ = ("cache_hits", "calls", "span")

    def __init__(
        self,
        entity_key: bytes,
        seq: int,
        *,
        rerun: str | None,
        reveal_key: bool,
        hash_key: Callable[[bytes], str],
    ) -> None:
        """`hash_key` is the deployment's keyed hash (`beam_agents.entity_hash`); the span
        always carries it, so it matches the dead-letter log, and the key itself only
        with `reveal_key`."""
        self.span: Span = _tracer.start_span("activation")
        self.cache_hits = 0
        self.calls = 0
        if self.span.is_recording():
            attributes: dict[str, AttributeValue] = {SEQ: seq, KEY_HASH: hash_key(entity_key)}
            if reveal_key:
                attributes[KEY] = entity_key.decode("utf-8", "backslashreplace")
            if rerun is not None:
                attributes[RERUN] = rerun
            _set(self.span, attributes)

    @property
    def recording(self) -> bool:
        return self.span.is_recording()

    def end(self, outcome: str, error: tuple[str, str] | None = None) -> None:
        """Close the span with how the attempt ended; `error` is (reason, detail)."""
        span = self.span
        if span.is_recording():
            _set(
                span,
                {
                    OUTCOME: outcome,
                    PARKS: 1 if outcome == "parked" else 0,
                    CACHE_HITS: self.cache_hits,
                    MODEL_CALLS: self.calls,
                },
            )
            if error is not None:
                reason, detail = error
                event = {"reason": reason, "detail": detail}
                _fail(span, reason, "dead_letter", event, f"{reason}: {detail}")
        span.end()


def _scrubbed(value: AttributeValue) -> AttributeValue:
    if isinstance(value, str):
        return scrub_secrets(value)
    if isinstance(value, tuple | list) and any(isinstance(item, str) for item in value):
        return [scrub_secrets(item) if isinstance(item, str) else item for item in value]
    return value


def _set(span: Span, attributes: Mapping[str, AttributeValue]) -> None:
    """Set `attributes` on `span`, every text scrubbed: the one way spans get attributes."""
    span.set_attributes({name: _scrubbed(value) for name, value in attributes.items()})


def _fail(
    span: Span,
    error_type: str,
    event: str,
    details: Mapping[str, AttributeValue],
    status: str,
) -> None:
    """Mark `span` failed: `error.type`, an event with `details`, an ERROR status; all scrubbed.

    The one way a span records a failure.
    """
    _set(span, {ERROR_TYPE: error_type})
    span.add_event(event, {name: _scrubbed(value) for name, value in details.items()})
    span.set_status(Status(StatusCode.ERROR, scrub_secrets(status)))


def _record_failure(span: Span, exc: BaseException) -> None:
    """The exception as the semantic conventions' `exception` event, and the span failed."""
    if span.is_recording():
        # An agent's or provider's exception may not be able to describe itself.
        message = exception_text(exc)
        details: dict[str, AttributeValue] = {
            "exception.type": type(exc).__qualname__,
            "exception.message": message,
            "exception.stacktrace": "".join(traceback.format_exception(exc)),
            "exception.escaped": True,
        }
        _fail(span, type(exc).__name__, "exception", details, message)


def _child(parent: ActivationSpan | None, name: str, kind: SpanKind) -> Span:
    context = trace.set_span_in_context(parent.span) if parent is not None else None
    return _tracer.start_span(name, context=context, kind=kind)


def model_span(
    parent: ActivationSpan | None, model_id: str, operation: str = "chat"
) -> AbstractContextManager[ModelCall]:
    """A provider call's span (`chat <model>`, `embeddings <model>`); the caller reports
    how it was answered."""
    span = _child(parent, f"{operation} {model_id}", SpanKind.CLIENT)
    if span.is_recording():
        _set(span, {"gen_ai.operation.name": operation, "gen_ai.request.model": model_id})
    return _calling(ModelCall(span, parent))


def tool_span(
    parent: ActivationSpan | None, tool: str, call_id: str
) -> AbstractContextManager[ToolSpan]:
    """A tool call's span (`execute_tool <tool>`); the caller reports how it was answered.

    `call_id` is the call's intent id, the idempotency key its target sees,
    so a trace leads to the delivery the target logged.
    """
    span = _child(parent, f"execute_tool {tool}", SpanKind.INTERNAL)
    if span.is_recording():
        _set(
            span,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.id": call_id,
            },
        )
    return _calling(ToolSpan(span))


class _Call:
    """The open span of one call that may park its activation."""

    __slots__ = ("span", "waiting")
    _parked: ClassVar[str]

    def __init__(self, span: Span) -> None:
        self.span = span
        self.waiting = False

    def parked(self) -> None:
        """The call went to the call loop and its activation parks: not a failure.

        The re-run's span for this call carries how it was answered.
        """
        self.waiting = True
        if self.span.is_recording():
            _set(self.span, {self._parked: True})


_C = TypeVar("_C", bound=_Call)


@contextmanager
def _calling(call: _C) -> Iterator[_C]:
    """The call's span for the block: a failure recorded unless the call parked; always ended."""
    try:
        yield call
    except BaseException as exc:
        if not call.waiting:
            _record_failure(call.span, exc)
        raise
    finally:
        call.span.end()


class ModelCall(_Call):
    """The open span of one model call."""

    __slots__ = ("parent",)
    _parked = PARKED

    def __init__(self, span: Span, parent: ActivationSpan | None) -> None:
        super().__init__(span)
        self.parent = parent

    def answered(self, response: LlmResponse, *, cached: bool) -> None:
        """Record the answer: usage only for a call the provider answered now."""
        if self.parent is not None:
            if cached:
                self.parent.cache_hits += 1
            else:
                self.parent.calls += 1
        span = self.span
        if not span.is_recording():
            return
        attributes: dict[str, AttributeValue] = {CACHE_HIT: cached}
        if response.model_id:
            attributes["gen_ai.response.model"] = response.model_id
        if not cached:
            attributes["gen_ai.usage.input_tokens"] = response.input_tokens
            attributes["gen_ai.usage.output_tokens"] = response.output_tokens
        _set(span, attributes)

    def flow_controlled(self, wait_ms: int, retries: int) -> None:
        """Record what flow control did to the call: its wait for a turn, its 429 retries."""
        span = self.span
        if span.is_recording() and (wait_ms or retries):
            _set(span, {"rate_limit.wait_ms": wait_ms, "rate_limit.retries": retries})


class ToolSpan(_Call):
    """The open span of one tool call."""

    __slots__ = ()
    _parked = TOOL_PARKED

    def answered(self, how: str) -> None:
        """`executed` (the handler ran now), `recorded` (the ledger held its result,
        the handler did not run) or `cached` (the replay cache held it)."""
        if self.span.is_recording():
            _set(self.span, {TOOL_STATUS: how})


@contextmanager
def flush_span(parent: ActivationSpan | None, rows: int) -> Iterator[Span]:
    """A long-term flush's span; a failure is recorded on it and re-raised."""
    with _child_span(parent, "longterm.flush", SpanKind.CLIENT, {ROWS: rows}) as span:
        yield span


@contextmanager
def _child_span(
    parent: ActivationSpan | None, name: str, kind: SpanKind, attributes: dict[str, AttributeValue]
) -> Iterator[Span]:
    """A child of the activation's span for the block: failures recorded, always ended."""
    span = _child(parent, name, kind)
    if span.is_recording():
        _set(span, attributes)
    try:
        yield span
    except BaseException as exc:
        _record_failure(span, exc)
        raise
    finally:
        span.end()
