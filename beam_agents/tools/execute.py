"""`ExecuteIntents`: run `RunAgent`'s intents through their handlers, once each.

`intents | ExecuteIntents(handlers, ledger_uri)` calls the handler named by
each intent's tool, through the same ledger the runtime's tool calls use, so
an intent is executed once whichever path (or retried bundle) sees it. It
returns `.results` (`ToolResult`) and `.errors` (`ToolFailure` dead letters:
unknown tool, failed after retries, unreadable intent). Approval requests
(`awaits_answer`, emitted by a `Suspend`) are answered by people, not tools:
they are passed over unless a handler is configured under their tool name.

Within a bundle up to `max_concurrency` intents run at once on the DoFn's
own event loop; results leave with their intent's timestamp and window.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from typing import Any, Final, NamedTuple

import apache_beam as beam
from apache_beam.pvalue import PCollection, TaggedOutput
from apache_beam.utils.windowed_value import WindowedValue

from beam_agents import _failpoints as failpoints
from beam_agents._composite import several_outputs
from beam_agents.errors import ConfigurationError
from beam_agents.memory.stores._provisioned import check_provisioned_once
from beam_agents.memory.stores.uri import parse_store_uri
from beam_agents.proto.beam_agents_pb2 import ToolIntent
from beam_agents.tools.calls import ToolHandler, ToolResult
from beam_agents.tools.executor import IntentExecutor, ToolFailure, check_handlers
from beam_agents.tools.ledger.base import DEFAULT_LEASE_MS, MAX_LEASE_MS
from beam_agents.tools.ledger.factory import open_ledger

__all__ = ["ERRORS_TAG", "TOOL_EXECUTED", "ExecuteIntents", "ExecuteIntentsResult"]

ERRORS_TAG: Final = "errors"
RESULTS_TAG: Final = "results"
TOOL_EXECUTED: Final = "tool_executed"
"""Failpoint: after an intent's result is recorded, before the bundle commits it."""


class ExecuteIntentsResult(NamedTuple):
    """The transform's outputs."""

    results: PCollection[ToolResult]
    """One `ToolResult` per executed (or already recorded) intent."""
    errors: PCollection[ToolFailure]
    """`ToolFailure` dead letters."""


class _ExecuteDoFn(beam.DoFn):
    """Buffers a bundle's intents and executes them concurrently on the instance's loop."""

    def __init__(
        self, handlers: Mapping[str, ToolHandler], ledger: str, options: dict[str, Any]
    ) -> None:
        self._handlers = dict(handlers)
        self._ledger_uri = ledger
        self._options = options
        self._loop: asyncio.AbstractEventLoop | None = None
        self._executor: IntentExecutor | None = None
        self._pending: list[WindowedValue] = []

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_loop": None, "_executor": None, "_pending": []}

    def setup(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            ledger = open_ledger(self._ledger_uri)
            loop.run_until_complete(check_provisioned_once(ledger, self._ledger_uri))
        except BaseException:
            loop.close()
            raise
        self._loop = loop
        self._executor = IntentExecutor(
            self._handlers,
            ledger,
            lease_ms=self._options["lease_ms"],
            max_attempts=self._options["max_attempts"],
        )

    def start_bundle(self) -> None:
        self._pending = []

    def process(
        self,
        intent: ToolIntent,
        timestamp: Any = beam.DoFn.TimestampParam,
        window: Any = beam.DoFn.WindowParam,
    ) -> Iterator[Any]:
        if intent.awaits_answer and intent.tool not in self._handlers:
            return
        self._pending.append(WindowedValue(intent, timestamp, (window,)))
        if len(self._pending) >= self._options["max_concurrency"]:
            yield from self._drain()

    def finish_bundle(self) -> Iterator[Any]:
        yield from self._drain()

    def _drain(self) -> Iterator[Any]:
        batch, self._pending = self._pending, []
        if not batch:
            return
        if self._executor is None or self._loop is None:
            self.setup()
        assert self._executor is not None
        assert self._loop is not None
        executor = self._executor

        async def execute_all() -> list[ToolResult | ToolFailure]:
            # Every call runs to its end before a failure fails the bundle, so
            # no claim is abandoned mid-call with its handler still running.
            outcomes = await asyncio.gather(
                *(executor.execute(item.value) for item in batch), return_exceptions=True
            )
            finished: list[ToolResult | ToolFailure] = []
            for outcome in outcomes:
                if isinstance(outcome, BaseException):
                    raise outcome
                finished.append(outcome)
            return finished

        outcomes = self._loop.run_until_complete(execute_all())
        for item, outcome in zip(batch, outcomes, strict=True):
            intent: ToolIntent = item.value
            failpoints.should_fail(TOOL_EXECUTED, intent.entity_key, intent.seq)
            tag = RESULTS_TAG if isinstance(outcome, ToolResult) else ERRORS_TAG
            yield TaggedOutput(tag, item.with_value(outcome))

    def teardown(self) -> None:
        loop, executor = self._loop, self._executor
        self._loop = self._executor = None
        if loop is None:
            return
        try:
            if executor is not None:
                loop.run_until_complete(executor.aclose())
        finally:
            loop.close()


class ExecuteIntents(beam.PTransform[PCollection[ToolIntent], ExecuteIntentsResult]):
    """Execute each `ToolIntent` once, through its handler and the tool ledger.

    `handlers` maps tool names to `ToolHandler`s (or plain `async def
    handler(call) -> bytes` functions, defined at module level: they are
    pickled by reference). `ledger` is a store URI, as for
    `AgentConfig.longterm_memory`, whose ledger was provisioned
    (`beam-agents provision URI`). `max_attempts` is how often a handler that
    raised is called again (handlers such as `HttpWebhook` retry inside too).
    """

    def __init__(
        self,
        handlers: Mapping[str, Any],
        ledger: str,
        *,
        max_concurrency: int = 16,
        lease_ms: int = DEFAULT_LEASE_MS,
        max_attempts: int = 1,
    ) -> None:
        super().__init__()
        self._handlers = check_handlers(handlers)
        try:
            parsed = parse_store_uri(ledger)
        except ConfigurationError as exc:
            raise ConfigurationError("ExecuteIntents.ledger", exc.problem) from None
        if parsed.dialect == "sqlite" and parsed.in_process:
            raise ConfigurationError(
                "ExecuteIntents.ledger",
                "an in-memory SQLite database is private to one connection pool; "
                "use a file or a server",
            )
        for name, value, high in (
            ("max_concurrency", max_concurrency, 10_000),
            ("lease_ms", lease_ms, MAX_LEASE_MS),
            ("max_attempts", max_attempts, 100),
        ):
            if type(value) is not int or not 1 <= value <= high:
                raise ConfigurationError(f"ExecuteIntents.{name}", f"must be an int in [1, {high}]")
        self._ledger = ledger
        self._options = {
            "max_concurrency": max_concurrency,
            "lease_ms": lease_ms,
            "max_attempts": max_attempts,
        }

    @several_outputs
    def expand(self, intents: PCollection[ToolIntent]) -> ExecuteIntentsResult:
        tagged = intents | "Execute" >> beam.ParDo(
            _ExecuteDoFn(self._handlers, self._ledger, self._options)
        ).with_outputs(RESULTS_TAG, ERRORS_TAG)
        return ExecuteIntentsResult(results=tagged[RESULTS_TAG], errors=tagged[ERRORS_TAG])
