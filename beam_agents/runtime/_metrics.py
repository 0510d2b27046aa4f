"""The runtime's Beam metrics (namespace `beam_agents.runtime`).

Updated only on the Beam thread (see `_calls.driver`), so they land in the
pipeline result on every runner. Error counters are per reason:
`errors_<reason>`.
"""

from __future__ import annotations

from typing import Final

from beam_agents._beam_metrics import Counter, counter, distribution, gauge

__all__ = [
    "MODEL_NAMESPACE",
    "NAMESPACE",
    "ActivationTally",
    "ModelCounters",
    "count_error",
    "model_counters",
    "runtime_metrics",
]

NAMESPACE: Final = "beam_agents.runtime"
MODEL_NAMESPACE: Final = "beam_agents.model"
"""Per-model counters live in namespace `beam_agents.model/<model id>`."""


class _RuntimeMetrics:
    def __init__(self) -> None:

        self.activations = counter(NAMESPACE, "activations")
        self.suspensions = counter(NAMESPACE, "suspensions")
        self.resumptions = counter(NAMESPACE, "resumptions")
        self.errors = counter(NAMESPACE, "errors")
        self.intents = counter(NAMESPACE, "intents")
        self.memory_writes = counter(NAMESPACE, "memory_writes")
        self.ttl_wipes = counter(NAMESPACE, "ttl_wipes")
        self.expire_flushes = counter(NAMESPACE, "expire_flushes")
        self.longterm_upserts = counter(NAMESPACE, "longterm_upserts")
        self.summarizations = counter(NAMESPACE, "summarizations")
        self.suspension_buffered = counter(NAMESPACE, "suspension_buffered")
        self.suspension_drained = counter(NAMESPACE, "suspension_drained")
        self.coalesced = counter(NAMESPACE, "coalesced")
        self.suspension_buffer_overflows = counter(NAMESPACE, "suspension_buffer_overflows")
        self.parks = counter(NAMESPACE, "parks")
        self.wakes_scheduled = counter(NAMESPACE, "wakes_scheduled")
        self.wakes_fired = counter(NAMESPACE, "wakes_fired")
        self.wakes_cancelled = counter(NAMESPACE, "wakes_cancelled")
        self.wakes_buffered = counter(NAMESPACE, "wakes_buffered")
        self.model_calls_inflight = gauge(NAMESPACE, "model_calls_inflight")
        self.activation_micros = distribution(NAMESPACE, "activation_micros")
        self.memory_bytes = distribution(NAMESPACE, "memory_bytes")
        # Bytes an element or timer firing wrote to state, as the coder takes them.
        self.state_bytes_written = distribution(NAMESPACE, "state_bytes_written")


runtime_metrics: Final = _RuntimeMetrics()
_by_reason: dict[str, Counter] = {}


def count_error(reason: str) -> None:
    """Count one dead letter, in total and under its reason."""
    runtime_metrics.errors.inc()
    cell = _by_reason.get(reason)
    if cell is None:
        cell = _by_reason[reason] = counter(NAMESPACE, f"errors_{reason}")
    cell.inc()


class ModelCounters:
    """One model id's counters: calls asked of the provider, replay hits, tokens spent."""

    __slots__ = ("cache_hits", "input_tokens", "model_calls", "output_tokens")

    def __init__(self, model_id: str) -> None:
        namespace = f"{MODEL_NAMESPACE}/{model_id}"
        self.model_calls = counter(namespace, "model_calls")
        self.cache_hits = counter(namespace, "cache_hits")
        self.input_tokens = counter(namespace, "input_tokens")
        self.output_tokens = counter(namespace, "output_tokens")

    def spent(self, input_tokens: int, output_tokens: int) -> None:
        """Tokens of a call the provider answered (a replayed answer spends none)."""
        if input_tokens:
            self.input_tokens.inc(input_tokens)
        if output_tokens:
            self.output_tokens.inc(output_tokens)


_by_model: dict[str, ModelCounters] = {}


def model_counters(model_id: str) -> ModelCounters:
    """The counters of `model_id` (an empty id counts as `unknown`)."""
    counters = _by_model.get(model_id)
    if counters is None:
        counters = _by_model[model_id] = ModelCounters(model_id or "unknown")
    return counters


class ActivationTally:
    """The metrics every activation or element updates, held and handed to Beam in batches.

    A Beam metric update costs little in a loop but about a microsecond in
    place, between a state read and a timer set, which was a tenth of a
    no-op activation; an integer increment and a list append cost neither.
    The owner flushes at the end of each bundle (`AgentDoFn.finish_bundle`),
    on the Beam thread as every update must be, and `completed` flushes
    every `_FLUSH_EVERY` activations so a long bundle holds a bounded list.
    A bundle that fails before its end is retried by the runner, which
    discards that attempt's committed metrics anyway; `discard` at the next
    bundle's start drops what the failed one had not handed over.
    """

    __slots__ = ("_micros", "_written", "started")

    def __init__(self) -> None:
        self.started = 0
        """Activations begun (the `activations` counter), failed ones included."""
        self._micros: list[int] = []
        self._written: list[int] = []

    def wrote(self, size: int) -> None:
        """Bytes an element wrote to state (the `state_bytes_written` distribution)."""
        self._written.append(size)
        if len(self._written) >= _FLUSH_EVERY:
            self.flush()

    def completed(self, micros: int) -> None:
        """A committed activation's duration (the `activation_micros` distribution)."""
        self._micros.append(micros)
        if len(self._micros) >= _FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        """Hand what is held to Beam."""
        started, micros, written = self.started, self._micros, self._written
        self.started, self._micros, self._written = 0, [], []
        if started:
            runtime_metrics.activations.inc(started)
        update = runtime_metrics.activation_micros.update
        for value in micros:
            update(value)
        update = runtime_metrics.state_bytes_written.update
        for value in written:
            update(value)

    def discard(self) -> None:
        """Drop what a failed bundle held."""
        self.started, self._micros, self._written = 0, [], []


_FLUSH_EVERY: Final = 1024
