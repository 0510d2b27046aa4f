"""The runtime's side of an activation: replayed calls, budgets, parking and staged intents.

Everything nondeterministic an agent asks for goes through here, where the
runtime can make it replayable: model answers come from the replay cache
when the activation re-runs, intents get ids derived from (entity, seq,
index), and a call that has to wait parks the activation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Generator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from beam_agents._beam_metrics import counter
from beam_agents.budget import BudgetExceeded, Meter
from beam_agents.errors import describe_briefly
from beam_agents.memory.stores.base import Embedding
from beam_agents.model.embedders import Embedder
from beam_agents.model.errors import OutputInvalid
from beam_agents.model.flow import observe_flow
from beam_agents.model.messages import (
    STOP_LENGTH,
    STOP_REFUSED,
    EmbedRequest,
    LlmRequest,
    LlmResponse,
    canonical_request_bytes,
)
from beam_agents.model.provider import ModelProvider
from beam_agents.model.replay import ReplayCache, attempt_memo, call_key
from beam_agents.model.structured import OutputSchema, output_schema, repair_messages
from beam_agents.proto.beam_agents_pb2 import ToolIntent
from beam_agents.runtime._calls.call_loop import (
    CallAbandoned,
    CallTimedOut,
    Outcome,
    Parked,
    Parking,
)
from beam_agents.runtime._calls.driver import RunawayError
from beam_agents.runtime._calls.models import Models, decode_vectors
from beam_agents.runtime._cells import Cell
from beam_agents.runtime._metrics import model_counters
from beam_agents.runtime._wake_book import WakeBook
from beam_agents.runtime.errors import ModelCallError, ModelRateLimited
from beam_agents.runtime.intents import canonical_json, intent_id, make_intent
from beam_agents.telemetry import ActivationSpan, ModelCall, ToolSpan, model_span, tool_span
from beam_agents.tools.calls import ToolCall, ToolResult
from beam_agents.tools.errors import ToolError

if TYPE_CHECKING:
    from beam_agents.runtime._calls.tools import ActivationTools

__all__ = ["ActivationCalls"]

_model_calls = counter("beam_agents.runtime", "model_calls")
_cache_hits = counter("beam_agents.runtime", "model_cache_hits")
_tool_calls = counter("beam_agents.runtime", "tool_calls")
_tool_replays = counter("beam_agents.runtime", "tool_calls_replayed")
_output_repairs = counter("beam_agents.runtime", "output_repairs")
_output_invalid = counter("beam_agents.runtime", "outputs_invalid")


class ActivationCalls:
    """The runtime's side of one activation: its model and tool calls, budgets and intents.

    `ActivationContext` is what the agent is handed and hands every call on
    to this; what only the runtime reads back (the spend a commit writes, the
    intents it emits, the index an approval takes) lives here, out of the
    agent's reach, so the public surface can stay what `docs/runtime.md`
    documents while this changes freely.
    """

    __slots__ = (
        "_cache",
        "_call_index",
        "_embedder",
        "_intents",
        "_limits",
        "_meter",
        "_parking",
        "_provider",
        "_repairs",
        "_reserved",
        "_span",
        "_token",
        "_tool_index",
        "_tools",
        "_waited_on",
        "entity_key",
        "now_ms",
        "seq",
        "wake_cell",
        "wakes",
    )

    def __init__(
        self,
        *,
        entity_key: bytes,
        seq: int,
        now_ms: int,
        provider: ModelProvider | None,
        cache: ReplayCache,
        token: str,
        reserved_indices: frozenset[int] = frozenset(),
        parking: Parking | None = None,
        waited_on: str | None = None,
        tools: ActivationTools | None = None,
        output_repairs: int = 1,
    ) -> None:
        self.entity_key = entity_key
        self.seq = seq
        self.now_ms = now_ms
        self._provider = provider
        self._cache = cache
        self._token = token
        self._call_index = 0
        self._intents: list[ToolIntent] = []
        self._reserved = reserved_indices
        self._parking = parking
        self._waited_on = waited_on
        """The call a poll's re-run waited on: the only one it takes from the call loop.
        Any other it finds there (a retried bundle's, one started beside it) it parks
        on, as the attempt before it did, so whether a call had finished by then never
        decides whether the key parks, nor what waits behind it."""
        self._tools = tools
        self._tool_index = 0
        self._repairs = output_repairs
        self._span: ActivationSpan | None = None
        self._meter: Meter | None = None
        self._limits: tuple[int | None, int | None] | None = None
        self._embedder: Embedder | None = (
            provider.embedder if isinstance(provider, Models) else None
        )
        self.wake_cell: Cell | None = None
        """The key's WAKES cell, read only if the agent schedules or cancels."""
        self.wakes: WakeBook | None = None
        """The activation's schedules and cancels; set up front for a wake's own run."""

    def instrument(self, span: ActivationSpan | None, meter: Meter | None) -> None:
        """Attach the attempt's span and the key's token meter, where either is on.

        Set after construction, and only then: two more constructor arguments
        cost a no-op activation about 1%.
        """
        self._span = span
        self._meter = meter

    def limit_calls(self, max_model_calls: int | None, max_tool_calls: int | None) -> None:
        """Set the activation's loop budgets (`AgentConfig.max_model_calls`, `max_tool_calls`).

        Counted by call index, replayed calls included: a re-run of the
        activation (a resume, a retry, a parked poll) makes the same calls in
        the same order, so it stops at the same one.
        """
        self._limits = (max_model_calls, max_tool_calls)

    def _within_limit(self, index: int, which: int, what: str) -> None:
        limits = self._limits
        if limits is None:
            return
        limit = limits[which]
        if limit is not None and index >= limit:
            name = ("max_model_calls", "max_tool_calls")[which]
            raise BudgetExceeded(
                f"{name}={limit} reached: {what} call {index + 1} of this activation refused "
                "(a loop budget, AgentConfig)"
            )

    async def call_model(self, request: LlmRequest) -> LlmResponse:
        """Ask the model, or replay its recorded answer when this activation re-runs.

        A request with an `output_type` gets its answer validated, and
        re-asked with the errors up to `output_repairs` times. With tools
        offered as well, an answer that calls tools is returned as it is
        (`parsed` None): the agent runs them and asks again, and only the
        final answer is held to the type.
        """
        model_id = request.model_id if isinstance(request, LlmRequest) else ""
        if isinstance(request, LlmRequest) and request.output_type is not None:
            return await self._structured(request)
        with model_span(self._span, model_id) as call:
            return await self._call_model(request, call)

    async def _structured(self, request: LlmRequest) -> LlmResponse:
        """The answer with its validated value as `parsed`, or `OutputInvalid`.

        Each repair is one more model call of the activation (its own index,
        so replayed, parked, counted and budgeted like any call), and the
        repair request is built from the replayed answer and its errors alone,
        so a re-run re-asks in the same bytes. A refused or cut-off answer is
        not re-asked: the same request meets the same refusal or the same
        token limit, and the tokens would be spent for nothing.
        """
        schema = output_schema(request.output_type)
        asked = request
        for repair in range(self._repairs + 1):
            with model_span(self._span, asked.model_id) as call:
                response = await self._call_model(asked, call)
            if asked.tools_schema is not None and _asks_for_tools(response):
                return response  # the model chose a tool: the typed answer comes later
            try:
                return replace(response, parsed=_read_answer(schema, response))
            except OutputInvalid as exc:
                if response.stop_reason or repair == self._repairs:
                    _output_invalid.inc()
                    plural = "repair" if repair == 1 else "repairs"
                    raise OutputInvalid(
                        exc.schema,
                        exc.errors,
                        exc.raw,
                        what=f"the model's answer after {repair} {plural}",
                    ) from None
                _output_repairs.inc()
                asked = replace(
                    asked, messages=repair_messages(asked.messages, response.response, exc, schema)
                )
        raise AssertionError("unreachable: the last repair returns or raises")

    async def embed_texts(self, texts: Sequence[str]) -> list[Embedding]:
        """Embed `texts` in one call of the configured embedder, or replay its recorded answer.

        The long-term handle's way to embed (`save(text=)`, `recall`): an
        embedding is a model call, so it is replay-cached, parked when slow,
        counted and budgeted like one, and fails the activation as `model_error`.
        """
        embedder = self._embedder
        if embedder is None:
            raise ModelCallError("no embedder: set AgentConfig.embedder to embed texts")
        model_id = embedder.model_id
        request = EmbedRequest(model_id=model_id, messages=list(texts))
        with model_span(self._span, model_id, "embeddings") as call:
            response = await self._call_model(request, call)
        return decode_vectors(response, model_id, embedder.dimensions, len(texts))

    async def _call_model(self, request: LlmRequest, call: ModelCall) -> LlmResponse:
        self._within_limit(self._call_index, 0, "model")
        request_bytes = canonical_request_bytes(request)
        key = call_key(request_bytes, self.entity_key, self.seq, self._call_index)
        self._call_index += 1
        hit = self._replayed(key)
        counters = model_counters(request.model_id)
        if hit is not None:
            _cache_hits.inc()
            counters.cache_hits.inc()
            call.answered(hit, cached=True)
            return hit
        if self._provider is None or (
            isinstance(self._provider, Models)
            and self._provider.provider is None
            and not isinstance(request, EmbedRequest)
        ):
            raise ModelCallError(
                "no model provider: set AgentConfig.provider_factory to call ctx.call_model"
            )
        parking = self._parking
        if parking is not None and key == self._waited_on:
            finished = parking.take(key)
            if finished is not None:
                response = _outcome(finished)
                self._remember(key, response)
                self._spend(response)
                counters.spent(response.input_tokens, response.output_tokens)
                call.answered(response, cached=False)
                return response
        if self._meter is not None:
            self._meter.admit(key, request.model_id)  # a call about to start: within budget?
        embedding = isinstance(request, EmbedRequest)
        if parking is not None and parking.waits(embedding):
            started = parking.park(key, request)
            if started is not None:
                if started:
                    _model_calls.inc()
                    counters.model_calls.inc()
                call.parked()
                raise Parked(key)
        _model_calls.inc()
        counters.model_calls.inc()
        try:
            with observe_flow() as flow:
                try:
                    answer = await self._ask(request, parking, embedding)
                finally:
                    call.flow_controlled(flow.wait_ms, flow.retries)
        except ModelRateLimited:
            raise
        except Exception as exc:
            raise ModelCallError(describe_briefly(exc)) from exc
        response = _checked(answer)
        self._remember(key, response)
        self._spend(response)
        counters.spent(response.input_tokens, response.output_tokens)
        call.answered(response, cached=False)
        return response

    def _replayed(self, key: str) -> LlmResponse | None:
        """The recorded answer of a model or tool call made before at this seq, if any.

        Committed calls are kept by the cache already. An answer a failed
        attempt of this activation left in the memo is staged again, so a
        suspension commits it for its resume, and its spend is counted, as no
        commit recorded it.
        """
        hit = self._cache.lookup(key)
        if hit is None:
            hit = attempt_memo.get(self._token, key)
            if hit is not None:
                self._cache.record(key, self.seq, hit, self.now_ms)
                self._spend(hit)
        return hit

    async def _ask(self, request: LlmRequest, parking: Parking | None, embedding: bool) -> object:
        """The provider's answer, asked in place.

        With parking on, the call is stepped once here first: if it finishes
        without waiting it never parks anything; if it waits, it is finished in
        place this once and the provider's later calls park.
        """
        assert self._provider is not None
        if parking is None:
            return await self._provider.complete(request)
        return await _in_place(
            self._provider.complete(request), lambda: parking.saw_waiting(embedding)
        )

    def _spend(self, response: LlmResponse) -> None:
        if self._meter is not None:
            self._meter.add(response.input_tokens + response.output_tokens)

    def spend_state(self, *, committed_only: bool = False) -> bytes:
        """The key's token spend for the SEQ a commit writes (empty without a budget).

        `committed_only` leaves this activation's own spend out: a park's, which
        its `Parked` record carries instead.
        """
        return self._meter.encoded(committed_only) if self._meter is not None else b""

    def tokens_spent(self) -> int:
        """What this activation spent so far, which a park carries to the re-run."""
        return self._meter.spent if self._meter is not None else 0

    def admitted_calls(self) -> list[str]:
        """The model calls the budget admitted so far, which a park carries to the re-run."""
        return self._meter.admitted if self._meter is not None else []

    def _remember(self, key: str, response: LlmResponse) -> None:
        self._cache.record(key, self.seq, response, self.now_ms)
        attempt_memo.put(self._token, key, response)

    async def call_tool(self, name: str, args: Mapping[str, Any]) -> bytes:
        """Run the configured tool `name` once for this call, and return its result.

        Tool call n of the activation has the intent id of index -(n + 1), so
        it never shares an id with an intent or an approval (indices 0, 1, ...).
        A re-run of the activation (a resume, a retried bundle, a parked
        activation's poll) gets the recorded result back: from the replay
        cache, or else from the ledger, without calling the handler again.
        A call that has to wait parks the activation, as a model call does.
        Raises `ToolError` (the activation fails as `tool_error`).
        """
        if type(name) is not str or not name:
            raise TypeError(f"tool name must be a non-empty str, got {name!r}")
        args_json, parsed_args = _tool_args(name, args)
        self._within_limit(self._tool_index, 1, "tool")
        index = self._tool_index
        self._tool_index += 1
        key = call_key(
            b"tool\0" + name.encode() + b"\0" + args_json, self.entity_key, self.seq, index
        )
        call_id = intent_id(self.entity_key, self.seq, -(index + 1))
        with tool_span(self._span, name, call_id) as span:
            hit = self._replayed(key)
            if hit is not None:
                _tool_replays.inc()
                span.answered("cached")
                return hit.response
            if self._tools is None:
                raise ToolError(f"no tools configured: set AgentConfig.tools to call {name!r}")
            call = ToolCall(call_id, name, self.entity_key, parsed_args)
            outcome = await self._run_tool(self._tools, key, call, span)
            counter = _tool_calls if outcome.status == "executed" else _tool_replays
            counter.inc()
            self._remember(key, LlmResponse(response=outcome.result, model_id=f"tool:{name}"))
            span.answered(outcome.status)
            return outcome.result

    async def _run_tool(
        self, tools: ActivationTools, key: str, call: ToolCall, span: ToolSpan
    ) -> ToolResult:
        """The call's outcome: taken from the call loop, parked there, or awaited here.

        With parking on, every tool call runs on the call loop, whose handlers
        and ledger connections last for the process; `tools` (this DoFn's
        own) serve only `max_inflight_calls=1`.
        """
        parking = self._parking
        if parking is None:
            return await tools.call(call)
        finished = parking.take(key) if key == self._waited_on else None
        if finished is not None:
            return _tool_outcome(finished)
        if parking.tools_park and parking.park_tool(key, call) is not None:
            span.parked()
            raise Parked(key)
        return _tool_outcome(await parking.call_tool(call))

    @property
    def tool_names(self) -> frozenset[str]:
        """The tools `call_tool` can call: an agent may decide without them (a dry run)."""
        return frozenset(self._tools.handlers) if self._tools is not None else frozenset()

    @property
    def tool_calls(self) -> int:
        """How many `call_tool` calls this activation made so far."""
        return self._tool_index

    def emit_intent(self, tool: str, args: Mapping[str, Any]) -> str:
        """Stage a side-effect request; it is emitted only if the activation commits."""
        if type(tool) is not str or not tool:
            raise TypeError(f"intent tool must be a non-empty str, got {tool!r}")
        intent = make_intent(
            entity_key=self.entity_key,
            seq=self.seq,
            index=self._next_index(),
            tool=tool,
            args_json=canonical_json(args),
            event_time_ms=self.now_ms,
        )
        self._intents.append(intent)
        return intent.intent_id

    def _next_index(self) -> int:
        """The next intent index, stepping over approval requests of this seq."""
        index = self._intents[-1].index + 1 if self._intents else 0
        while index in self._reserved:
            index += 1
        return index

    def wake_book(self) -> WakeBook:
        """The activation's follow-ups, opened on the first schedule or cancel."""
        book = self.wakes
        if book is None:
            assert self.wake_cell is not None, "the runtime binds WAKES before the agent runs"
            book = self.wakes = WakeBook(self.wake_cell, None)
        return book

    def staged_intents(self) -> list[ToolIntent]:
        """Intents staged so far (the runtime emits them on commit)."""
        return list(self._intents)

    def approval_index(self) -> int:
        """The index a Suspend's approval intent takes: the next free one."""
        return self._next_index()


def _tool_args(name: str, args: Mapping[str, Any]) -> tuple[bytes, dict[str, Any]]:
    """The args as canonical JSON and as the handler receives them, or `ToolError` saying why.

    Args that JSON cannot carry (a set, a NaN, nesting deeper than a reader
    recurses) are the tool call's failure: the activation fails as
    `tool_error`, and the bundle carries on.
    """
    try:
        args_json = canonical_json(args)
        parsed: dict[str, Any] = json.loads(args_json)
    except RecursionError:
        raise ToolError(f"{name}: tool args are nested too deeply for JSON") from None
    except (TypeError, ValueError) as exc:
        raise ToolError(f"{name}: {exc}") from None
    if not isinstance(parsed, dict):
        raise ToolError(f"{name}: tool args must be a mapping, got {type(args).__name__}")
    return args_json, parsed


def _asks_for_tools(response: LlmResponse) -> bool:
    """Whether the answer is the providers' canonical tool-call answer, not a final one."""
    if not response.response.startswith(b'{"tool_calls":['):
        return False
    try:
        answer = json.loads(response.response)
    except (ValueError, RecursionError):
        return False
    return isinstance(answer, dict) and list(answer) == ["tool_calls"]


def _read_answer(schema: OutputSchema, response: LlmResponse) -> object:
    """The answer's value; a refused or cut-off answer is invalid whatever it holds."""
    if response.stop_reason == STOP_REFUSED:
        raise OutputInvalid(schema.name, ["(root): the model refused to answer"], response.response)
    if response.stop_reason == STOP_LENGTH:
        raise OutputInvalid(
            schema.name,
            ["(root): the answer was cut off at the output token limit (max_output_tokens)"],
            response.response,
        )
    return schema.read(response.response)


def _checked(response: object) -> LlmResponse:
    if not isinstance(response, LlmResponse) or type(response.response) is not bytes:
        raise ModelCallError(
            f"provider returned {type(response).__name__}, not an LlmResponse with bytes"
        )
    return response


def _outcome(finished: Outcome) -> LlmResponse:
    """A parked call's outcome, raised as the in-place call would have raised it."""
    exc = finished.exception()
    if exc is None:
        return _checked(finished.result())
    _raise_if_timed_out(exc, "model")
    if isinstance(exc, ModelRateLimited):
        raise exc
    raise ModelCallError(describe_briefly(exc)) from exc


def _tool_outcome(finished: Outcome) -> ToolResult:
    """A parked tool call's outcome, raised as the in-place call would have raised it."""
    exc = finished.exception()
    if exc is None:
        return cast(ToolResult, finished.result())
    _raise_if_timed_out(exc, "tool")
    raise exc


def _raise_if_timed_out(exc: BaseException, kind: str) -> None:
    """The call loop's timeout of a call, raised as the activation's own would be in place."""
    if isinstance(exc, RunawayError):
        raise CallAbandoned(f"the {kind} call ignored its cancellation: abandoned") from exc
    if isinstance(exc, TimeoutError):
        raise CallTimedOut(f"the {kind} call did not finish in time") from exc


async def _in_place(call: Coroutine[Any, Any, Any], saw_waiting: Callable[[], None]) -> Any:
    """Await `call` here, stepping it once first to learn whether it waits at all.

    If it finishes without waiting, nothing is learned; if it waits, it is
    finished in place this once, and `saw_waiting` lets later calls park.
    """
    try:
        first = call.send(None)
    except StopIteration as done:
        return done.value
    saw_waiting()
    return await _Continue(call, first)


class _Continue:
    """Awaits the rest of a coroutine that was already stepped once, from `first` on."""

    __slots__ = ("call", "first")

    def __init__(self, call: Coroutine[Any, Any, Any], first: Any) -> None:
        self.call = call
        self.first = first

    def __await__(self) -> Generator[Any, Any, Any]:
        pending = self.first
        while True:
            try:
                sent = yield pending
            except GeneratorExit:
                self.call.close()
                raise
            except BaseException as exc:
                try:
                    pending = self.call.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    pending = self.call.send(sent)
                except StopIteration as done:
                    return done.value
