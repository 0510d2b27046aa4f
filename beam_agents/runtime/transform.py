"""RunAgent: the public transform. `events | RunAgent(agent, config)`.

It normalizes keys to bytes before the stateful ParDo (a stateful DoFn needs
a deterministic key coder on every runner, and the same entity must always
land on the same state), dead-letters malformed elements instead of failing
the pipeline, merges in the optional answers, and returns the tagged outputs.
"""

from __future__ import annotations

import inspect
import logging
import reprlib
import uuid
from collections.abc import Callable
from typing import Any, Final, NamedTuple

import apache_beam as beam
from apache_beam import typehints
from apache_beam.coders.typecoders import registry as coder_registry
from apache_beam.pvalue import PCollection
from apache_beam.transforms.window import GlobalWindows

from beam_agents._composite import several_outputs
from beam_agents.coders import DeterministicProtoCoder
from beam_agents.config import AgentConfig
from beam_agents.model.keys import check_key_here
from beam_agents.proto.beam_agents_pb2 import ToolIntent
from beam_agents.runtime._calls.models import parks_by_config
from beam_agents.runtime._dofn import ANSWER, EVENT, INVALID, AgentDoFn, wall_clock_ms
from beam_agents.runtime._paths.activator import ERRORS_TAG, INTENTS_TAG
from beam_agents.runtime._runners import (
    announce_in_place,
    in_place_reason,
    settle_local_runner,
)
from beam_agents.runtime._typed_outputs import typed_output
from beam_agents.runtime.agent import Agent
from beam_agents.runtime.element_payload import describe_with_form, encode_element
from beam_agents.runtime.errors import ActivationError, ActivationErrorCoder
from beam_agents.runtime.lifecycle import LIFECYCLE_TAG, LifecycleEvent, LifecycleEventCoder
from beam_agents.telemetry_options import WorkerExport, entity_hash_key

__all__ = ["RunAgent", "RunAgentResult"]

coder_registry.register_coder(ActivationError, ActivationErrorCoder)
coder_registry.register_coder(ToolIntent, DeterministicProtoCoder)
coder_registry.register_coder(LifecycleEvent, LifecycleEventCoder)

_log = logging.getLogger(__name__)
_Keyed = typehints.Tuple[bytes, typehints.Tuple[int, str, bytes]]
_TYPED_EVENTS = typehints.Tuple[bytes, bytes]
"""An input declared as this needs no normalization: its keys are bytes already."""


class RunAgentResult(NamedTuple):
    """The transform's outputs."""

    outputs: PCollection[tuple[bytes, Any]]
    """`(entity_key: bytes, output)` of every completed activation: the output is bytes,
    or with `RunAgent(output_type=T)` an instance of T, a Beam row (docs/runtime.md)."""
    errors: PCollection[ActivationError]
    """`ActivationError` dead letters (closed reason vocabulary, see docs/errors.md)."""
    intents: PCollection[ToolIntent]
    """`ToolIntent` side-effect requests, emitted only on commit."""
    lifecycle: PCollection[LifecycleEvent] | None = None
    """`LifecycleEvent` records with `RunAgent(..., lifecycle=True)`, else None
    (docs/lifecycle.md)."""


def _as_bytes(value: object) -> bytes | None:
    """`value` as bytes; None if it is neither bytes nor str.

    Raises `_NotUtf8` for a str that UTF-8 cannot encode (a lone surrogate,
    as `json.loads('"\\ud800"')` produces): such a key or event has no byte
    form, so it is dead-lettered rather than failing the step.
    """
    if type(value) is bytes:
        return value
    if type(value) is str:
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _NotUtf8(exc.start) from None
    return None


class _NotUtf8(ValueError):
    """A str with a lone surrogate at `position`."""

    def __init__(self, position: int) -> None:
        super().__init__(position)
        self.position = position


_KEY_REPR: Final = reprlib.Repr()
_KEY_REPR.maxlevel = 4
_KEY_REPR.maxstring = _KEY_REPR.maxother = 200


def _invalid_key(key: object) -> bytes:
    """A bad key shown as a short repr: bounded in depth, so no key can fail the step."""
    try:
        shown = _KEY_REPR.repr(key)
    except Exception:  # a key's own __repr__ may raise anything
        shown = f"<{type(key).__name__}>"
    return shown.encode("utf-8", "backslashreplace")[:256]


def _invalid(
    entity_key: bytes, detail: str, element: object
) -> tuple[bytes, tuple[int, str, bytes]]:
    """An INVALID marker carrying the whole element, replayable (see `element_payload`)."""
    payload, form = encode_element(element)
    return entity_key, (INVALID, describe_with_form(detail, form), payload)


def _normalize_event(element: Any) -> tuple[bytes, tuple[int, str, bytes]]:
    """`(key, event)` → `(key bytes, (EVENT, "", event bytes))`, or an INVALID marker.

    Malformed elements travel on to the agent DoFn, which dead-letters them
    without touching state: one single-output step here is cheaper per
    element than a tagged output and a Flatten.
    """
    if not isinstance(element, tuple) or len(element) != 2:
        detail = f"expected a (key, event) pair, got {_shape(element)}"
        return _invalid(b"", detail, element)
    key, event = element
    try:
        entity_key = _as_bytes(key)
    except _NotUtf8 as exc:
        detail = f"entity key is a str UTF-8 cannot encode (lone surrogate at {exc.position})"
        return _invalid(_invalid_key(key), detail, element)
    if entity_key is None:
        detail = f"entity key must be bytes or str, got {type(key).__name__}"
        return _invalid(_invalid_key(key), detail, element)
    try:
        payload = _as_bytes(event)
    except _NotUtf8 as exc:
        detail = f"event is a str UTF-8 cannot encode (lone surrogate at {exc.position})"
        return _invalid(entity_key, detail, element)
    if payload is None:
        detail = f"event must be bytes or str, got {type(event).__name__}"
        return _invalid(entity_key, detail, element)
    return entity_key, (EVENT, "", payload)


def _normalize_answer(element: Any) -> tuple[bytes, tuple[int, str, bytes]]:
    """`(key, intent_id, answer)` → `(key bytes, (ANSWER, intent_id, answer bytes))`."""
    if not isinstance(element, tuple) or len(element) != 3:
        detail = f"expected a (key, intent_id, answer) triple, got {_shape(element)}"
        return _invalid(b"", detail, element)
    key, intent_id, answer = element
    try:
        entity_key = _as_bytes(key)
    except _NotUtf8 as exc:
        detail = f"entity key is a str UTF-8 cannot encode (lone surrogate at {exc.position})"
        return _invalid(_invalid_key(key), detail, element)
    try:
        payload = _as_bytes(answer)
        if type(intent_id) is str:
            _as_bytes(intent_id)  # carried on as a str: Beam's coder encodes it as UTF-8
    except _NotUtf8 as exc:
        detail = f"answer holds a str UTF-8 cannot encode (lone surrogate at {exc.position})"
        return _invalid(entity_key or _invalid_key(key), detail, element)
    if entity_key is None or payload is None or type(intent_id) is not str:
        detail = "answer must be (bytes | str key, str intent_id, bytes | str answer)"
        return _invalid(entity_key or _invalid_key(key), detail, element)
    return entity_key, (ANSWER, intent_id, payload)


_LOCAL_RUNNERS: Final = (
    "apache_beam.runners.direct.",
    "apache_beam.runners.portability.fn_api_runner.",
    "apache_beam.runners.portability.prism_runner",
    "apache_beam.runners.interactive.",
)
"""Modules of the runners that run a pipeline in this process, for tests and local runs."""


def deployed_runner(runner: object) -> bool:
    """Whether `runner` fires processing-time timers on the wall clock of a deployment.

    Parked activations poll through such a timer: a deployed runner gets the
    poll when the call is expected to have answered; a local one (whose
    processing time may be a `TestStream`'s test clock, which a time read
    from the wall clock would never reach) gets it at once.
    """
    module = type(runner).__module__ + "."
    return not any(module.startswith(prefix) for prefix in _LOCAL_RUNNERS)


def _globally(pcoll: PCollection[Any], label: str) -> PCollection[Any]:
    """`pcoll` in the global window: an entity's state must not be split by windows.

    Keyed state and timers are scoped to (key, window). Left in fixed or
    sliding windows, one entity would get a fresh seq, an empty memory and
    reused intent ids in every window, so RunAgent re-windows its inputs
    (event timestamps are kept; every output is in the global window). An
    input already in the global window passes through with no extra step.
    """
    if isinstance(pcoll.windowing.windowfn, GlobalWindows):
        return pcoll
    windowed: PCollection[Any] = pcoll | label >> beam.WindowInto(GlobalWindows())
    windowed.element_type = pcoll.element_type
    return windowed


def _shape(element: object) -> str:
    if isinstance(element, tuple):
        return f"a {len(element)}-tuple"
    return type(element).__name__


class RunAgent(beam.PTransform[PCollection[Any], RunAgentResult]):
    """Run `agent` once per event, keyed by entity, inside one stateful DoFn.

    Input: a keyed, timestamped `PCollection[tuple[bytes | str, bytes]]`.
    `answers`: optional `PCollection[tuple[bytes | str, str, bytes]]` of
    `(key, intent_id, answer)` resuming suspensions. `clock_ms` overrides the
    processing-time clock of HITL deadlines (tests drive it with TestStream).
    `lifecycle=True` adds the `.lifecycle` output of `LifecycleEvent`s; off
    (the default) it declares no extra output and builds no record.
    `output_type` (a pydantic model, a dataclass or a typing.NamedTuple) types
    the outputs: each completion is validated as one before it commits, and
    `.outputs` is a schema'd PCollection of `(key, T)` with a deterministic
    row coder; a result that is not a valid T is an `output_invalid` dead
    letter (docs/runtime.md, Typed results). The pipeline's
    `TelemetryOptions` (`--otlp_endpoint`) have the workers export their
    spans (docs/telemetry.md).
    """

    def __init__(
        self,
        agent: Agent,
        config: AgentConfig,
        *,
        answers: PCollection[Any] | None = None,
        clock_ms: Callable[[], int] | None = None,
        lifecycle: bool = False,
        output_type: type | None = None,
        label: str | None = None,
    ) -> None:
        super().__init__(label)
        if not inspect.iscoroutinefunction(agent):
            raise TypeError(
                f"agent must be an async function (async def agent(ctx)), got {agent!r}"
            )
        if not isinstance(config, AgentConfig):
            raise TypeError(f"config must be an AgentConfig, got {type(config).__name__}")
        self._agent = agent
        self._config = config
        if type(lifecycle) is not bool:
            raise TypeError(f"lifecycle must be True or False, got {lifecycle!r}")
        self._answers = answers
        self._lifecycle = lifecycle
        self._clock_ms = clock_ms or wall_clock_ms
        # Checked now: a type Beam cannot carry as a row fails here, not on a worker.
        self._typed = typed_output(output_type) if output_type is not None else None
        # Scopes the process-wide replay memo to this transform; drawn when the
        # pipeline is built, never inside an activation.
        self._token = uuid.uuid4().hex

    @several_outputs
    def expand(self, events: PCollection[Any]) -> RunAgentResult:
        pipeline = events.pipeline
        # Timer outputs must reach downstream groupings: move or refuse a local runner now.
        settle_local_runner(pipeline, (events, self._answers))
        deployed = deployed_runner(pipeline.runner)
        self._check_before_running(deployed)
        # Some local runners would deliver a poll's outputs after a downstream
        # grouping completed: there every call runs in place (see _runners).
        in_place = in_place_reason(pipeline.runner, pipeline.options, (events, self._answers))
        if in_place is not None and parks_by_config(self._config):
            announce_in_place(in_place)
        dofn = AgentDoFn(
            self._agent,
            self._config,
            token=self._token,
            clock_ms=self._clock_ms,
            lifecycle=self._lifecycle,
            deployed=deployed,
            park=in_place is None,
            # --otlp_endpoint (TelemetryOptions): the workers install the exporter.
            telemetry=WorkerExport.from_options(pipeline.options),
            # --entity_hash_secret: a reference the workers read the hashing key from.
            entity_hash=entity_hash_key(pipeline.options),
            output_type=self._typed.output_type if self._typed is not None else None,
        )
        tags = (
            (ERRORS_TAG, INTENTS_TAG, LIFECYCLE_TAG)
            if self._lifecycle
            else (ERRORS_TAG, INTENTS_TAG)
        )
        keyed = self._keyed(events)
        results = keyed | "Agent" >> beam.ParDo(dofn).with_outputs(*tags, main="outputs")
        outputs = results["outputs"]
        outputs.element_type = (
            self._typed.element_type() if self._typed is not None else typehints.Tuple[bytes, bytes]
        )
        intents = results[INTENTS_TAG]
        intents.element_type = ToolIntent
        errors = results[ERRORS_TAG]
        errors.element_type = ActivationError
        lifecycle = None
        if self._lifecycle:
            lifecycle = results[LIFECYCLE_TAG]
            lifecycle.element_type = LifecycleEvent
        return RunAgentResult(outputs=outputs, errors=errors, intents=intents, lifecycle=lifecycle)

    def _check_before_running(self, deployed: bool) -> None:
        """Say now what would otherwise go wrong on every worker, or silently."""
        if not deployed:
            # The workers are this process: a model key missing here is missing there.
            check_key_here(self._config.provider_factory, "AgentConfig.provider_factory")
            check_key_here(self._config.embedder, "AgentConfig.embedder")
        uri = self._config.longterm_memory
        if uri and not deployed:
            # One line now, rather than a traceback per retried bundle from every worker.
            from beam_agents.memory.stores.preflight import check_local_store

            check_local_store(uri, unreachable_is_fatal=False)
        if self._answers is not None and deployed and self._config.answer_signing_key is None:
            _log.warning(
                "RunAgent takes answers without AgentConfig.answer_signing_key: whoever can "
                "publish to its answers input can decide every approval (docs/runtime.md)"
            )

    def _keyed(self, events: PCollection[Any]) -> PCollection[Any]:
        """Events and answers as one globally windowed input of the DoFn's element type."""
        events = _globally(events, "GlobalEvents")
        if self._answers is None and events.element_type == _TYPED_EVENTS:
            # Declared (bytes, bytes) already: the DoFn takes them as they are,
            # and the runner charges no normalization step per element.
            return events
        keyed: PCollection[Any] = events | "NormalizeEvents" >> beam.Map(
            _normalize_event
        ).with_output_types(_Keyed)
        if self._answers is not None:
            answers = _globally(self._answers, "GlobalAnswers") | "NormalizeAnswers" >> beam.Map(
                _normalize_answer
            ).with_output_types(_Keyed)
            keyed = (keyed, answers) | "MergeAnswers" >> beam.Flatten()
            keyed.element_type = _Keyed
        return keyed
