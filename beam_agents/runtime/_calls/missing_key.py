"""A model whose key is missing on this worker: said once, then a `model_error` per call.

A provider reads its key when the worker builds it (`setup()`, or the call
loop's first call). A worker started without the key's environment variable
will not find it on a retry, so failing `setup()` would only have the runner
retry every bundle, with a traceback per attempt, for as long as the job
runs. Instead the worker logs one line at ERROR, once per process, naming
the variable (never a value), and keeps a provider whose every call fails:
each activation that calls the model is dead-lettered as `model_error`
with that line as its detail and its event as the payload, ready to replay
once the workers have the key. A key that could not be fetched (Secret
Manager unreachable) is not this: it may come back, so it still fails
`setup()` and is retried.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from beam_agents.errors import MissingSecretError
from beam_agents.model.messages import LlmRequest, LlmResponse
from beam_agents.model.provider import ModelProvider, ProviderFactory, check_provider

__all__ = ["KeyMissingProvider", "ReportMissingKey"]

_LOGGER = logging.getLogger(__name__)
_reported: set[tuple[str, str]] = set()
_reported_lock = threading.Lock()


class KeyMissingProvider:
    """Stands in for a provider whose key this worker lacks: every call fails, naming it."""

    __slots__ = ("_field", "_problem", "_variable")

    def __init__(self, missing: MissingSecretError) -> None:
        self._field = missing.field
        self._variable = missing.variable
        self._problem = missing.problem

    async def complete(self, request: LlmRequest) -> LlmResponse:
        raise MissingSecretError(self._field, self._variable, self._problem)

    async def aclose(self) -> None:
        """Nothing was opened: the real provider was never built."""


@dataclass(frozen=True, slots=True)
class ReportMissingKey:
    """The user's provider factory, a key missing on this worker reported once, not raised."""

    factory: ProviderFactory

    def __call__(self) -> ModelProvider:
        try:
            return check_provider(self.factory())
        except MissingSecretError as missing:
            _report(missing)
            return KeyMissingProvider(missing)


def _report(missing: MissingSecretError) -> None:
    """One line per variable and process, however many DoFn instances and bundles find it."""
    with _reported_lock:
        if (missing.field, missing.variable) in _reported:
            return
        _reported.add((missing.field, missing.variable))
    _LOGGER.error(
        "the model's key is missing on this worker (%s): every activation that calls the "
        "model is dead-lettered as model_error, its event kept for replay, until the workers "
        "start with %s set (docs/providers.md, Secrets)",
        missing,
        missing.variable,
    )
