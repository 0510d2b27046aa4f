"""What an agent returns: it finished, or it waits for an answer."""

from __future__ import annotations

from dataclasses import dataclass

from beam_agents.config import MAX_TIMEOUT_MS

__all__ = ["Complete", "Suspend"]


@dataclass(frozen=True, slots=True)
class Complete:
    """The activation finished; `output` goes to the `.outputs` PCollection."""

    output: bytes

    def __post_init__(self) -> None:
        if type(self.output) is not bytes:
            raise TypeError(f"Complete.output must be bytes, got {type(self.output).__name__}")


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
