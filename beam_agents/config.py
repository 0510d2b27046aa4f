"""AgentConfig: everything about an agent's runtime, validated before any pipeline exists.

Invalid configuration must fail on the machine that builds the pipeline, at
construction, naming the field, never hours later on a worker.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from beam_agents._connections.secret_sources import check_secret_source
from beam_agents.budget import TokenBudget
from beam_agents.errors import ConfigurationError
from beam_agents.memory.compaction import Compactor, DropOldestCompactor, check_compactor
from beam_agents.memory.expire import FlushToLongterm
from beam_agents.memory.stores.uri import (
    check_cross_entity_recall,
    check_store_credentials,
    parse_store_uri,
    redact_uri,
    refuse_in_memory_sqlite,
)
from beam_agents.memory.summarize import SummarizeCompactor, check_summarizer
from beam_agents.model.embedders import EmbedderFactory
from beam_agents.model.flow import RateLimit
from beam_agents.model.provider import ProviderFactory
from beam_agents.tools.calls import ToolHandler, as_handler

__all__ = ["MAX_TIMEOUT_MS", "AgentConfig"]

MAX_TIMEOUT_MS: Final = 100 * 365 * 86_400_000
MAX_OUTPUT_REPAIRS: Final = 10
"""Longest approval deadline, `hitl_timeout_ms` or `Suspend(timeout_ms=...)`: 100 years.

A deadline is the processing time now plus the timeout, kept in a
protobuf int64 and set as a timer; a bound far past any real wait keeps
that sum inside both, so no value a config or an agent can pass fails at
the commit.
"""
MAX_COALESCE: Final = 1024
"""Events one coalesced activation may decide for; they come from the key's buffer, which
`suspended_event_buffer` and `suspended_buffer_bytes` bound as well."""


def _timeout_ms(field: str, value: object) -> None:
    _positive_int(field, value)
    if isinstance(value, int) and value > MAX_TIMEOUT_MS:
        raise ConfigurationError(
            field, f"must be at most {MAX_TIMEOUT_MS} ms (100 years), got {value!r}"
        )


def _positive_int(field: str, value: object) -> None:
    if type(value) is not int or value <= 0:
        raise ConfigurationError(field, f"must be a positive int, got {value!r}")


def _at_most(field: str, value: int, bound: int, why: str) -> None:
    if value > bound:
        raise ConfigurationError(field, f"must be at most {bound} ({why}), got {value}")


def _non_negative_int(field: str, value: object) -> None:
    if type(value) is not int or value < 0:
        raise ConfigurationError(field, f"must be a non-negative int, got {value!r}")


def _positive_seconds(field: str, value: object) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ConfigurationError(field, f"must be a number of seconds, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ConfigurationError(
            field, f"must be a positive, finite number of seconds, got {value!r}"
        )


@dataclass(frozen=True, kw_only=True)
class AgentConfig:
    """How RunAgent runs an agent.

    - `provider_factory`: zero-argument, picklable callable returning the model
      provider; called once per DoFn instance in `setup()`. None: the agent
      makes no model calls (a call fails the activation as `model_error`).
    - `compactor`: tier-1 compaction inside memory writes; None = strict
      overflow (`MemoryOverflow` fails the activation).
    - `summarizer`: opt-in tier-2 compaction, run after the agent returns.
    - `longterm_memory`: a store URI enabling `ctx.memory.longterm`
      (validated here without importing any client library); None leaves the
      tier off: no store is constructed and no external I/O happens.
    - `on_expire`: `FlushToLongterm()` demotes working memory to the
      long-term tier before the TTL wipes it; needs `longterm_memory`.
    - `ttl_ms`: event-time idle period after which a key's working memory is
      wiped (default one hour).
    - `activation_timeout_s`: wall time an agent may run per activation.
    - `longterm_timeout_s`: bound on each long-term flush.
    - `hitl_timeout_ms`: default processing-time deadline of a `Suspend`.
    - `suspended_event_buffer`: how many events arriving for a suspended key
      are held (in its CONTINUATION cell) and run, in arrival order, once the
      suspension resolves; 0 dead-letters them as `event_while_suspended`.
    - `suspended_buffer_bytes`: bound on the held events' total payload bytes;
      an event past either bound is dead-lettered instead. Behind a key
      parked on a model call, answers are held too, under the same bounds;
      an event or answer past them waits for the parked call instead.
    - `max_inflight_calls`: model calls in flight per worker process. A call
      that has to wait parks its activation (the Beam thread moves on) and
      runs on a process-wide call loop; 1 runs every call in place, holding
      the Beam thread for the call's latency (a coalescing agent's
      activation still parks once its call answered, so its events group
      as with calls in flight).
    - `coalesce_max`: opt-in coalescing for hot keys. When events of a key
      wait behind a parked or suspended activation, the next activation
      takes up to this many of them at once (`ctx.events`, in arrival
      order; `ctx.event` is the first), so one model call can decide for a
      burst. The grouping is read from the key's buffer in state, so a
      retried bundle groups the same way; outputs, dead letters and
      lifecycle records stay per event. 1 (the default) runs every event
      alone.
    - `trace_entity_keys`: put the entity key itself on activation spans; by
      default they carry only its keyed hash (`beam_agents.entity_hash`),
      since keys can be personal data.
    - `token_budget`: `TokenBudget(per_key=N, window_ms=W)` refuses a model
      call once the key spent N tokens in the last W ms of event time; the
      activation is dead-lettered `budget_exceeded` (`beam_agents.budget`).
    - `tools`: `{name: handler}` the agent calls with `ctx.call_tool`; each call
      runs once per id, recorded in the tool ledger.
    - `answer_signing_key`: where the key answers are signed with lives,
      `env:NAME` or a Secret Manager version name (never the key itself);
      read on the worker in `setup()`. Set, an answer resumes a suspension
      only with a valid signature (`beam_agents.answer_signing`), and
      approval intent ids are unguessable. None (local runs only): any
      element on the answers input is taken as it comes.
    - `tool_ledger`: the ledger's store URI; None uses `longterm_memory`.
      Tools with neither are refused: without a ledger a retried bundle
      would run them again. `memory://NAME` serves single-process tests.
    - `embedder`: zero-argument, picklable callable returning the embedder
      (`embedder_from_spec`) that `ctx.memory.longterm.save(text=)` and
      `recall` use; needs `longterm_memory`. Its calls are model calls:
      replay-cached, parked, counted and budgeted.
    - `cross_entity_recall`: opens `ctx.memory.longterm.across_entities`,
      recall over every entity's records through the store's native vector
      index; refused for a store without one. Off, an activation can recall
      only its own entity's records.
    - `rate_limit`: `RateLimit(requests_per_minute=..., tokens_per_minute=...,
      scope=...)` spreads the provider's calls evenly under its quota, per
      process or (a Redis URI) across the fleet. A call waits for its share
      before it starts; a 429 waits what the server asks and is retried within
      the activation's time. Limits change when a call happens, never what it
      answers. None: no limit, but 429s still wait and retry.
    - `max_model_calls`, `max_tool_calls`: loop budgets per activation. The
      call past either fails the activation as `budget_exceeded`, naming the
      limit: a runaway agent loop ends there. Model calls count every model
      call of the activation, embeddings and replayed answers included, so a
      re-run stops at the same call.
    - `output_repairs`: how many times a structured model call
      (`LlmRequest(output_type=...)`) whose answer does not validate is
      re-asked with the validation errors before the activation fails as
      `output_invalid`. Each repair is a model call under every rule above:
      replay-cached, parked, counted and budgeted. 0 fails at once.
    """

    provider_factory: ProviderFactory | None = None
    compactor: Compactor | None = field(default_factory=DropOldestCompactor)
    summarizer: SummarizeCompactor | None = None
    longterm_memory: str | None = field(default=None, repr=False)
    on_expire: FlushToLongterm | None = None
    ttl_ms: int = 3_600_000
    activation_timeout_s: float = 60.0
    longterm_timeout_s: float = 10.0
    hitl_timeout_ms: int = 86_400_000
    suspended_event_buffer: int = 64
    suspended_buffer_bytes: int = 256 * 1024
    max_inflight_calls: int = 256
    trace_entity_keys: bool = False
    token_budget: TokenBudget | None = None
    tools: Mapping[str, ToolHandler] = field(default_factory=dict, hash=False)
    tool_ledger: str | None = field(default=None, repr=False)
    answer_signing_key: str | None = None
    embedder: EmbedderFactory | None = None
    cross_entity_recall: bool = False
    rate_limit: RateLimit | None = None
    max_model_calls: int | None = None
    max_tool_calls: int | None = None
    output_repairs: int = 1
    coalesce_max: int = 1

    def __post_init__(self) -> None:
        if self.provider_factory is not None and not callable(self.provider_factory):
            raise ConfigurationError(
                "AgentConfig.provider_factory",
                f"must be a zero-argument callable returning a provider, "
                f"got {type(self.provider_factory).__name__}",
            )
        check_compactor(self.compactor)
        check_summarizer(self.summarizer)
        if self.longterm_memory is not None:
            # All three raise naming AgentConfig.longterm_memory.
            refuse_in_memory_sqlite(
                parse_store_uri(self.longterm_memory),
                "each DoFn instance of the pipeline would open its own empty, unprovisioned "
                "database, and no row would outlive it (memory:// serves single-process tests)",
            )
            check_store_credentials("AgentConfig.longterm_memory", self.longterm_memory)
        if self.on_expire is not None:
            if not isinstance(self.on_expire, FlushToLongterm):
                raise ConfigurationError(
                    "AgentConfig.on_expire",
                    f"must be FlushToLongterm() or None, got {type(self.on_expire).__name__}",
                )
            if self.longterm_memory is None:
                raise ConfigurationError(
                    "AgentConfig.on_expire",
                    "needs AgentConfig.longterm_memory: expiring memory must have a store to go to",
                )
        self._check_tools()
        self._check_recall()
        if self.answer_signing_key is not None:
            check_secret_source("AgentConfig.answer_signing_key", self.answer_signing_key)
        self._check_numbers()

    def _check_numbers(self) -> None:
        """Every bound, TTL and limit: a value outside its range fails here, naming it."""
        _positive_int("AgentConfig.ttl_ms", self.ttl_ms)
        _timeout_ms("AgentConfig.hitl_timeout_ms", self.hitl_timeout_ms)
        _non_negative_int("AgentConfig.suspended_event_buffer", self.suspended_event_buffer)
        _positive_int("AgentConfig.suspended_buffer_bytes", self.suspended_buffer_bytes)
        _positive_int("AgentConfig.max_inflight_calls", self.max_inflight_calls)
        _positive_int("AgentConfig.coalesce_max", self.coalesce_max)
        _at_most(
            "AgentConfig.coalesce_max", self.coalesce_max, MAX_COALESCE, "events per activation"
        )
        if self.token_budget is not None and not isinstance(self.token_budget, TokenBudget):
            raise ConfigurationError(
                "AgentConfig.token_budget",
                f"must be a TokenBudget or None, got {type(self.token_budget).__name__}",
            )
        _positive_seconds("AgentConfig.activation_timeout_s", self.activation_timeout_s)
        _positive_seconds("AgentConfig.longterm_timeout_s", self.longterm_timeout_s)
        if self.rate_limit is not None and not isinstance(self.rate_limit, RateLimit):
            raise ConfigurationError(
                "AgentConfig.rate_limit",
                f"must be a RateLimit or None, got {type(self.rate_limit).__name__}",
            )
        for name in ("max_model_calls", "max_tool_calls"):
            if getattr(self, name) is not None:
                _positive_int(f"AgentConfig.{name}", getattr(self, name))
        _non_negative_int("AgentConfig.output_repairs", self.output_repairs)
        _at_most(
            "AgentConfig.output_repairs",
            self.output_repairs,
            MAX_OUTPUT_REPAIRS,
            "each repair is a model call",
        )

    def _check_tools(self) -> None:
        if not isinstance(self.tools, Mapping):
            raise ConfigurationError(
                "AgentConfig.tools",
                f"must be a mapping of tool name to handler, got {type(self.tools).__name__}",
            )
        handlers: dict[str, ToolHandler] = {}
        for name, handler in self.tools.items():
            if type(name) is not str or not name:
                raise ConfigurationError(
                    "AgentConfig.tools", f"a tool name must be a non-empty str, got {name!r}"
                )
            try:
                handlers[name] = as_handler(handler)
            except TypeError as exc:
                raise ConfigurationError(f"AgentConfig.tools[{name!r}]", str(exc)) from None
        # A plain dict (picklable, unlike a mapping proxy), plain functions wrapped.
        object.__setattr__(self, "tools", handlers)
        if self.tool_ledger is not None:
            try:
                refuse_in_memory_sqlite(
                    parse_store_uri(self.tool_ledger),
                    "each DoFn instance would open its own empty ledger, and a retried bundle "
                    "would run its tools again (memory:// serves single-process tests)",
                )
            except ConfigurationError as exc:
                raise ConfigurationError("AgentConfig.tool_ledger", exc.problem) from None
            check_store_credentials("AgentConfig.tool_ledger", self.tool_ledger)
        if handlers and self.tool_ledger is None and self.longterm_memory is None:
            raise ConfigurationError(
                "AgentConfig.tools",
                "need a ledger: set AgentConfig.tool_ledger or AgentConfig.longterm_memory. "
                "Beam retries bundles, and only a recorded result keeps a retry from running "
                "a tool twice (tool_ledger='memory://NAME' serves single-process tests)",
            )

    def _check_recall(self) -> None:
        if self.embedder is not None:
            if not callable(self.embedder):
                raise ConfigurationError(
                    "AgentConfig.embedder",
                    "must be a zero-argument callable returning an embedder (see "
                    f"embedder_from_spec), got {type(self.embedder).__name__}",
                )
            if self.longterm_memory is None:
                raise ConfigurationError(
                    "AgentConfig.embedder",
                    "needs AgentConfig.longterm_memory: recall reads the long-term tier",
                )
        if type(self.cross_entity_recall) is not bool:
            raise ConfigurationError(
                "AgentConfig.cross_entity_recall",
                f"must be True or False, got {self.cross_entity_recall!r}",
            )
        if self.cross_entity_recall:
            if self.embedder is None:
                raise ConfigurationError(
                    "AgentConfig.cross_entity_recall", "needs AgentConfig.embedder"
                )
            assert self.longterm_memory is not None  # the embedder needs it
            check_cross_entity_recall(self.longterm_memory)
        expire_text = self.on_expire is not None and self.on_expire.text is not None
        if expire_text and self.embedder is None:
            raise ConfigurationError(
                "AgentConfig.on_expire",
                "FlushToLongterm(text=...) needs AgentConfig.embedder to embed what expires",
            )

    def __repr__(self) -> str:
        # The store URI may carry a password: show it redacted, never verbatim.
        uri = None if self.longterm_memory is None else redact_uri(self.longterm_memory)
        return (
            f"AgentConfig(provider_factory={self.provider_factory!r}, "
            f"compactor={self.compactor!r}, summarizer={self.summarizer!r}, "
            f"longterm_memory={uri!r}, on_expire={self.on_expire!r}, ttl_ms={self.ttl_ms}, "
            f"activation_timeout_s={self.activation_timeout_s}, "
            f"longterm_timeout_s={self.longterm_timeout_s}, "
            f"hitl_timeout_ms={self.hitl_timeout_ms}, "
            f"suspended_event_buffer={self.suspended_event_buffer}, "
            f"suspended_buffer_bytes={self.suspended_buffer_bytes}, "
            f"max_inflight_calls={self.max_inflight_calls}, "
            f"trace_entity_keys={self.trace_entity_keys}, token_budget={self.token_budget!r}, "
            f"tools={sorted(self.tools)!r}, "
            f"tool_ledger={None if self.tool_ledger is None else redact_uri(self.tool_ledger)!r}, "
            f"answer_signing_key={self.answer_signing_key!r}, embedder={self.embedder!r}, "
            f"cross_entity_recall={self.cross_entity_recall}, rate_limit={self.rate_limit!r}, "
            f"max_model_calls={self.max_model_calls}, max_tool_calls={self.max_tool_calls}, "
            f"output_repairs={self.output_repairs}, coalesce_max={self.coalesce_max})"
        )
