"""What an agent returns: it finished, or it waits for an answer."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from beam_agents.config import MAX_TIMEOUT_MS

if TYPE_CHECKING:
    from _typeshed import DataclassInstance
    from pydantic import BaseModel

__all__ = ["Complete", "Suspend", "TypedResult"]

TypedResult: TypeAlias = "BaseModel | DataclassInstance | tuple[Any, ...] | Mapping[str, Any]"
"""What a typed agent may complete with: an instance of its RunAgent's `output_type`
(a pydantic model, a dataclass, a NamedTuple), or a mapping of its fields."""


@dataclass(frozen=True, slots=True)
class Complete:
    """The activation finished; `output` goes to the `.outputs` PCollection.

    Bytes for an untyped RunAgent. For one with an `output_type`, a value of
    that type or a mapping of its fields (JSON bytes are read too); the
    runtime validates it before anything commits (docs/runtime.md, Typed
    results).

    An activation that decides for several events at once (`ctx.events`,
    `AgentConfig.coalesce_max`) emits `output` for each of them, or, built
    with `Complete.each(outputs)`, one output per event in their order
    (`per_event`; `output` is then its first).
    """

    output: bytes | TypedResult
    per_event: tuple[bytes | TypedResult, ...] | None = None

    def __post_init__(self) -> None:
        _check_output(self.output, "Complete.output")
        if self.per_event is not None:
            if not self.per_event or self.per_event[0] is not self.output:
                raise ValueError("build a per-event Complete with Complete.each(outputs)")
            for output in self.per_event:
                _check_output(output, "Complete.each")

    @classmethod
    def each(cls, outputs: Sequence[bytes | TypedResult]) -> Complete:
        """One output per event the activation decided for, in the order of `ctx.events`.

        The runtime checks the count against `ctx.events` before anything
        commits: a mismatch fails the activation.
        """
        outputs = tuple(outputs)
        if not outputs:
            raise ValueError("Complete.each needs one output per event of ctx.events, got none")
        return cls(outputs[0], outputs)


def _check_output(output: object, where: str) -> None:
    if type(output) is not bytes and not _typed(output):
        raise TypeError(
            f"{where} must be bytes, or a typed result (a pydantic model, "
            "dataclass or NamedTuple instance, or a mapping of its fields), "
            f"got {type(output).__name__}"
        )


def _typed(value: object) -> bool:
    """Whether `value` can be a typed result; a str never is (encode it, or return a value)."""
    if isinstance(value, Mapping):
        return True
    if isinstance(value, tuple):
        return hasattr(type(value), "_fields")  # a NamedTuple's instance, not a bare tuple
    if dataclasses.is_dataclass(value):
        return not isinstance(value, type)
    # Only a loaded pydantic can have built a model: no import for an agent that uses none.
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(value, pydantic.BaseModel)


@dataclass(frozen=True, slots=True)
class Suspend:
    """Ask a human (or another system) and wait for the answer.

    The prompt leaves as an approval intent; the answer arrives later on the
    `answers=` input and re-runs the agent at the same seq with `ctx.answer`
    set. `timeout_ms` (processing time) defaults to `AgentConfig.hitl_timeout_ms`.
    """

    prompt: bytes
    timeout_ms: int | None = None

    def __post_init__(self) -> None:
        if type(self.prompt) is not bytes:
            raise TypeError(f"Suspend.prompt must be bytes, got {type(self.prompt).__name__}")
        timeout = self.timeout_ms
        if timeout is not None and (type(timeout) is not int or not 0 < timeout <= MAX_TIMEOUT_MS):
            raise ValueError(
                f"Suspend.timeout_ms must be a positive int of at most {MAX_TIMEOUT_MS} ms "
                f"(100 years), got {timeout!r}"
            )
