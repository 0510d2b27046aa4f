"""Tier-2 compaction: folding a ring's older items into a model-written summary.

Tier 1 (`DropOldestCompactor`) discards; this tier preserves meaning, and
needs the model to do it. Where it runs is the whole design: inside the
activation, after the agent returns, with every model call going through
`ctx.call_model`. That makes each call keyed by content and seq, recorded in
the replay cache, committed with the bundle and served back on a re-run,
exactly like the agent's own calls. A summarizer calling a provider from a
timer or a raw client would lose all of that.

The runtime owns when to summarize, what to feed, where the call runs and
how the result lands; the prompt is yours (`build_request`), and it must be
a pure function of its two inputs, or a replayed activation would hash to a
different cache key and call the provider again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from beam_agents.errors import BeamAgentsError, ConfigurationError
from beam_agents.memory.facade import HARD_CAP_BYTES, SOFT_CAP_BYTES, Memory
from beam_agents.model.messages import LlmRequest, LlmResponse

__all__ = ["SummarizeCompactor", "SummarizerError", "SummaryContext", "check_summarizer"]


class SummaryContext(Protocol):
    """What a summarizer needs of an activation: its memory and the replay-cached model call.

    Declared here so that memory does not depend on the runtime that
    implements it (`ActivationContext` satisfies it).
    """

    @property
    def memory(self) -> Memory: ...

    async def call_model(self, request: LlmRequest) -> LlmResponse: ...


class SummarizerError(BeamAgentsError):
    """Summarization failed; the activation fails closed as `summarizer_error`."""


@dataclass(frozen=True, kw_only=True)
class SummarizeCompactor:
    """Tier 2: fold each source ring's older items, with the prior summary, into `summary_key`.

    It is not a tier-1 `Compactor`, despite the name both share: the runtime
    calls its `summarize(ctx)` once, after the agent returns, because it
    needs the activation to reach the model; it goes in
    `AgentConfig.summarizer`.

    Runs only when staged memory is at least `trigger_bytes`. For every ring
    in `source_keys` holding more than `keep_recent` items, the older items
    and the current summary go to `build_request`; the model's answer,
    through `extract_summary`, becomes the new summary (a scalar), and the
    ring is rewritten with its newest `keep_recent` items verbatim. With
    several source rings the summary is chained: each fold sees the summary
    the previous fold produced.
    """

    build_request: Callable[[tuple[bytes, ...], bytes | None], LlmRequest]
    extract_summary: Callable[[bytes], bytes]
    source_keys: tuple[str, ...]
    summary_key: str = "summary"
    keep_recent: int = 8
    trigger_bytes: int = SOFT_CAP_BYTES

    def __post_init__(self) -> None:
        name = "SummarizeCompactor"
        for field in ("build_request", "extract_summary"):
            if not callable(getattr(self, field)):
                raise ConfigurationError(f"{name}.{field}", "must be callable")
        keys = self.source_keys
        if isinstance(keys, str) or not keys or not all(isinstance(k, str) for k in keys):
            raise ConfigurationError(
                f"{name}.source_keys", f"must be a non-empty tuple of str, got {keys!r}"
            )
        object.__setattr__(self, "source_keys", tuple(keys))
        if not isinstance(self.summary_key, str) or self.summary_key in self.source_keys:
            raise ConfigurationError(
                f"{name}.summary_key", "must be a str that is not one of source_keys"
            )
        if type(self.keep_recent) is not int or self.keep_recent < 0:
            raise ConfigurationError(
                f"{name}.keep_recent", f"must be a non-negative int, got {self.keep_recent!r}"
            )
        if type(self.trigger_bytes) is not int or not 0 < self.trigger_bytes <= HARD_CAP_BYTES:
            raise ConfigurationError(
                f"{name}.trigger_bytes",
                f"must be an int in (0, {HARD_CAP_BYTES}], got {self.trigger_bytes!r}",
            )

    async def summarize(self, ctx: SummaryContext) -> int:
        """Summarize if due; returns how many rings were folded."""
        memory = ctx.memory
        if memory.size_bytes < self.trigger_bytes:
            return 0
        folded = 0
        for key in self.source_keys:
            items = memory.ring(key)
            if len(items) <= self.keep_recent:
                continue
            cut = len(items) - self.keep_recent
            old, recent = items[:cut], items[cut:]
            prior = memory.get(self.summary_key)
            response = await ctx.call_model(self.build_request(old, prior))
            summary = self.extract_summary(response.response)
            if type(summary) is not bytes:
                raise SummarizerError(
                    f"extract_summary returned {type(summary).__name__}, not bytes"
                )
            replaced = sum(len(item) for item in old) + len(prior or b"")
            if len(summary) >= replaced:
                raise ValueError(
                    f"summary of {key!r} is {len(summary)} bytes, not smaller than the "
                    f"{replaced} bytes it would replace"
                )
            memory.delete(key)
            for item in recent:
                memory.append(key, item, max_items=max(1, len(recent)))
            memory.set(self.summary_key, summary)
            folded += 1
        return folded


def check_summarizer(summarizer: object) -> None:
    """Refuse anything `AgentConfig.summarizer` cannot run, saying where it belongs."""
    if summarizer is None or isinstance(summarizer, SummarizeCompactor):
        return
    kind = type(summarizer).__name__
    if hasattr(summarizer, "compact"):
        problem = (
            f"a {kind} is tier-1 compaction, run inside memory writes at the caps: pass "
            "it as AgentConfig.compactor. summarizer takes a SummarizeCompactor, run "
            "once after the agent returns, or None"
        )
    else:
        problem = (
            "must be a SummarizeCompactor (tier 2, run once after the agent returns) "
            f"or None, got {kind}"
        )
    raise ConfigurationError("AgentConfig.summarizer", problem)
