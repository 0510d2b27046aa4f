"""The stateful DoFn RunAgent wraps. Private: the transform is the API.

State and timer specs are class constants whose names are persisted by the
runner: they never change once released (renaming one orphans every key's
state on a pipeline update). Each cell holds the deterministic protobuf
bytes of its message; the runtime parses them itself so undecodable state
is reported as `state_decode_error` instead of failing the bundle forever.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any, cast

import apache_beam as beam
from apache_beam.coders.coders import BytesCoder
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import (
    BagStateSpec,
    ReadModifyWriteStateSpec,
    TimerSpec,
    on_timer,
)
from apache_beam.utils.timestamp import Timestamp

from beam_agents import _failpoints as failpoints
from beam_agents.answer_signing import read_signing_key
from beam_agents.config import AgentConfig
from beam_agents.entity_hash import EntityHasher, EntityHashKey, process_hasher
from beam_agents.memory.stores._provisioned import check_provisioned_once
from beam_agents.memory.stores.base import MemoryStore
from beam_agents.memory.stores.factory import open_store
from beam_agents.model.provider import ModelProvider, check_provider, close_provider
from beam_agents.runtime._calls.driver import LoopDriver
from beam_agents.runtime._calls.models import flow_of, models_factory
from beam_agents.runtime._calls.tools import ActivationTools
from beam_agents.runtime._cells import KeyCells
from beam_agents.runtime._heap import HeapHold
from beam_agents.runtime._log_cell import log_bag, log_cell, settle_cells
from beam_agents.runtime._paths.activator import Activator, Output, Setup
from beam_agents.runtime._timestamps import millis
from beam_agents.runtime.agent import Agent
from beam_agents.telemetry import sdk_installed
from beam_agents.telemetry_options import WorkerExport

__all__ = ["ANSWER", "EVENT", "INVALID", "AgentDoFn", "wall_clock_ms"]

EVENT = 0
"""Element kind: `(key, (EVENT, "", event bytes))`."""
ANSWER = 1
"""Element kind: `(key, (ANSWER, intent_id, answer bytes))`."""
INVALID = 2
"""Element kind: `(key, (INVALID, detail, payload))`, a malformed input to dead-letter."""


def wall_clock_ms() -> int:
    """Processing time for HITL deadlines; the only wall clock the runtime reads."""
    return millis(Timestamp.now())


async def _open_on_loop(uri: str) -> MemoryStore:
    return failpoints.with_store_failpoints(open_store(uri))


def _release(
    driver: LoopDriver,
    provider: ModelProvider | None,
    store: MemoryStore | None,
    tools: ActivationTools | None = None,
) -> None:
    """Close the tools, the provider, the store and the loop, each even when one before fails.

    A provider or handler holding connections (the OpenAI and Gemini
    clients, an HTTP session) closes them on the loop they were opened on;
    one without `aclose` holds nothing to close.
    """
    with contextlib.ExitStack() as closing:  # runs its callbacks last in, first out
        closing.callback(driver.close)
        if store is not None:
            closing.callback(lambda: driver.run(store.close()))
        if provider is not None:
            closing.callback(lambda: driver.run(close_provider(provider)))
        if tools is not None:
            closing.callback(lambda: driver.run(tools.aclose()))


@dataclasses.dataclass
class _Clients:
    """What `setup` opened so far: released together if a later one fails."""

    provider: ModelProvider | None = None
    store: MemoryStore | None = None
    tools: ActivationTools | None = None


class AgentDoFn(beam.DoFn):
    """Runs one agent per keyed element; see `beam_agents.runtime._paths.activator`."""

    MEMORY = ReadModifyWriteStateSpec("memory", BytesCoder())
    SEQ = ReadModifyWriteStateSpec("seq", BytesCoder())
    LLM_CACHE = ReadModifyWriteStateSpec("llm_cache", BytesCoder())
    CONTINUATION = ReadModifyWriteStateSpec("continuation", BytesCoder())
    PENDING = ReadModifyWriteStateSpec("pending", BytesCoder())
    WAKES = ReadModifyWriteStateSpec("wakes", BytesCoder())
    MEMORY_LOG = BagStateSpec("memory_log", BytesCoder())
    MEMORY_HEAD = ReadModifyWriteStateSpec("memory_head", BytesCoder())
    TTL_TIMER = TimerSpec("ttl", TimeDomain.WATERMARK)
    HITL_TIMER = TimerSpec("hitl", TimeDomain.REAL_TIME)
    WAKE_TIMER = TimerSpec("wake", TimeDomain.WATERMARK)
    WAKE_CLOCK = TimerSpec("wake_clock", TimeDomain.REAL_TIME)

    def __init__(
        self,
        agent: Agent,
        config: AgentConfig,
        *,
        token: str,
        clock_ms: Callable[[], int] = wall_clock_ms,
        lifecycle: bool = False,
        deployed: bool = False,
        park: bool = True,
        telemetry: WorkerExport | None = None,
        entity_hash: EntityHashKey | None = None,
        output_type: type | None = None,
    ) -> None:
        super().__init__()
        self._agent = agent
        self._config = config
        self._token = token
        self._clock_ms = clock_ms
        self._lifecycle = lifecycle
        self._deployed = deployed
        self._park = park
        """False on a runner that cannot deliver a poll's outputs: every call runs in place."""
        self._telemetry = telemetry
        # Where the key lives, never the key: each worker reads it in setup().
        self._entity_hash = entity_hash
        self._output_type = output_type
        self._driver: LoopDriver | None = None
        self._store: MemoryStore | None = None
        self._activator: Activator | None = None
        self._heap = HeapHold()

    def __getstate__(self) -> dict[str, Any]:
        # The loop and the clients belong to one instance on one worker; a
        # pickled copy builds its own in setup().
        state = dict(self.__dict__)
        state["_driver"] = None
        state["_store"] = None
        state["_activator"] = None
        state["_heap"] = HeapHold()
        return state

    def setup(self) -> None:
        if self._telemetry is not None:
            # Before the first activation, once per worker process (--otlp_endpoint).
            self._telemetry.start()
        # The answer signing key, read here on the worker (and before any client
        # is opened, so a missing key stops the pipeline at once).
        source = self._config.answer_signing_key
        answer_key = read_signing_key("AgentConfig.answer_signing_key", source) if source else None
        driver = LoopDriver()
        opened = _Clients()
        try:
            hasher = self._open_clients(driver, opened)
        except BaseException:
            _release(driver, opened.provider, opened.store, opened.tools)
            raise
        self._driver = driver
        self._store = opened.store
        self._activator = Activator(
            Setup(
                agent=self._agent,
                # On a runner that cannot deliver a poll's outputs (can_park below), flow
                # control sees the one call in flight per thread that in place means.
                config=(
                    self._config
                    if self._park
                    else dataclasses.replace(self._config, max_inflight_calls=1)
                ),
                token=self._token,
                clock_ms=self._clock_ms,
                driver=driver,
                provider=opened.provider,
                store=opened.store,
                lifecycle=self._lifecycle,
                # A clock of the caller's (a test clock, a replay) also times the polls.
                # On a local runner the wall clock's "now" is any time in the past: a
                # TestStream's test clock would never reach a time read from it.
                poll_clock_ms=(
                    None
                    if self._clock_ms is wall_clock_ms and not self._deployed
                    else self._clock_ms
                ),
                can_park=self._park,
                poll_after_call=self._deployed,
                tools=opened.tools,
                entity_hasher=hasher,
                answer_key=answer_key,
                output_type=self._output_type,
            )
        )
        # Last, once nothing can fail: a setup that raises gets no teardown to give it back.
        self._heap.take()

    def _open_clients(self, driver: LoopDriver, opened: _Clients) -> EntityHasher:
        """Open the provider, the store and the tools into `opened`, each checked once.

        Into `opened` as each opens, so a failure part way releases what
        opened before it.
        """
        hasher = (
            driver.run(self._entity_hash.open())
            if self._entity_hash is not None
            # Only a deployed job's workers compare hashes across processes: a local run
            # is one process, where the random key is all it needs.
            else process_hasher(across_workers=self._deployed)
        )
        config = self._config
        # In place: a Beam thread per call bounds these; the window is the call loop's.
        flow = flow_of(config, self._token, windowed=False)
        factory = models_factory(config.provider_factory, config.embedder, flow)
        opened.provider = check_provider(factory()) if factory is not None else None
        uri = config.longterm_memory
        if uri is not None:
            # Built on the activation loop: async clients bind to the loop they start on.
            store = opened.store = driver.run(_open_on_loop(uri))
            # An unprovisioned store stops the pipeline here, once, with the
            # `beam-agents provision` hint, instead of dead-lettering every event.
            driver.run(check_provisioned_once(store, uri))
            if config.cross_entity_recall:
                driver.run(store.check_cross_entity_index())
        # The ledger defaults to the long-term store (AgentConfig checked one is set).
        ledger = config.tool_ledger if config.tool_ledger is not None else uri
        tools = opened.tools = ActivationTools.open(
            config.tools, ledger, config.activation_timeout_s
        )
        if tools is not None:
            driver.run(check_provisioned_once(tools.ledger, tools.ledger_uri))
        return hasher

    def start_bundle(self) -> None:
        if self._activator is not None:
            instance = self._activator.instance
            instance.tally.discard()  # what a failed bundle left
            instance.traced = sdk_installed()  # an SDK installed since is seen

    def finish_bundle(self) -> None:
        if self._activator is not None:
            self._activator.instance.tally.flush()

    def _settle(self, cells: KeyCells) -> None:
        """Carry out the element's held writes; the bytes it wrote go to the bundle's tally."""
        written = settle_cells(cells)
        if written and self._activator is not None:
            self._activator.instance.tally.wrote(written)

    def teardown(self) -> None:
        driver, store = self._driver, self._store
        instance = self._activator.instance if self._activator is not None else None
        provider = instance.provider if instance is not None else None
        tools = instance.tools if instance is not None else None
        self._driver = self._store = self._activator = None
        try:
            if driver is not None:
                _release(driver, provider, store, tools)
        finally:
            self._heap.give_back()
            if self._telemetry is not None:
                self._telemetry.flush()

    def _live_activator(self) -> Activator:
        """The per-instance activator, built in `setup()` (or here, if a runner skipped it).

        A method, not a property: Beam reads a DoFn's attributes while it
        builds the graph, and a property that ran `setup()` there would build
        the provider (reading its API key) and open the store on the machine
        that launches the job.
        """
        if self._activator is None:
            self.setup()
        assert self._activator is not None
        return self._activator

    def process(
        self,
        element: tuple[bytes, tuple[int, str, bytes] | bytes],
        timestamp: Any = beam.DoFn.TimestampParam,
        memory: Any = beam.DoFn.StateParam(MEMORY),
        seq: Any = beam.DoFn.StateParam(SEQ),
        cache: Any = beam.DoFn.StateParam(LLM_CACHE),
        continuation: Any = beam.DoFn.StateParam(CONTINUATION),
        pending: Any = beam.DoFn.StateParam(PENDING),
        wakes: Any = beam.DoFn.StateParam(WAKES),
        memory_log: Any = beam.DoFn.StateParam(MEMORY_LOG),
        memory_head: Any = beam.DoFn.StateParam(MEMORY_HEAD),
        ttl_timer: Any = beam.DoFn.TimerParam(TTL_TIMER),
        hitl_timer: Any = beam.DoFn.TimerParam(HITL_TIMER),
        wake_timer: Any = beam.DoFn.TimerParam(WAKE_TIMER),
        wake_clock: Any = beam.DoFn.TimerParam(WAKE_CLOCK),
    ) -> list[Output]:
        # Lists, not generators: Beam takes any iterable, and a generator per
        # element is one more frame to resume for nothing.
        cells = _key_cells(
            memory,
            seq,
            cache,
            continuation,
            pending,
            wakes,
            ttl_timer,
            hitl_timer,
            wake_timer,
            wake_clock,
            memory_log,
            memory_head,
        )
        outputs = self._on_element(element, millis(timestamp), cells)
        self._settle(cells)
        return outputs

    def _on_element(
        self,
        element: tuple[bytes, tuple[int, str, bytes] | bytes],
        now_ms: int,
        cells: KeyCells,
    ) -> list[Output]:
        entity_key, value = element
        activator = self._live_activator()
        if type(value) is bytes:  # a declared (bytes, bytes) input, not normalized
            return activator.on_event(entity_key, value, now_ms, cells)
        kind, intent_id, payload = cast(tuple[int, str, bytes], value)
        if kind == EVENT:
            return activator.on_event(entity_key, payload, now_ms, cells)
        if kind == ANSWER:
            return activator.on_answer(entity_key, intent_id, payload, now_ms, cells)
        return activator.on_invalid(entity_key, intent_id, payload, now_ms)

    @on_timer(TTL_TIMER)
    def on_ttl(
        self,
        key: Any = beam.DoFn.KeyParam,
        timestamp: Any = beam.DoFn.TimestampParam,
        memory: Any = beam.DoFn.StateParam(MEMORY),
        seq: Any = beam.DoFn.StateParam(SEQ),
        cache: Any = beam.DoFn.StateParam(LLM_CACHE),
        continuation: Any = beam.DoFn.StateParam(CONTINUATION),
        pending: Any = beam.DoFn.StateParam(PENDING),
        wakes: Any = beam.DoFn.StateParam(WAKES),
        memory_log: Any = beam.DoFn.StateParam(MEMORY_LOG),
        memory_head: Any = beam.DoFn.StateParam(MEMORY_HEAD),
        ttl_timer: Any = beam.DoFn.TimerParam(TTL_TIMER),
        hitl_timer: Any = beam.DoFn.TimerParam(HITL_TIMER),
        wake_timer: Any = beam.DoFn.TimerParam(WAKE_TIMER),
        wake_clock: Any = beam.DoFn.TimerParam(WAKE_CLOCK),
    ) -> list[Output]:
        cells = _key_cells(
            memory,
            seq,
            cache,
            continuation,
            pending,
            wakes,
            ttl_timer,
            hitl_timer,
            wake_timer,
            wake_clock,
            memory_log,
            memory_head,
        )
        outputs = self._live_activator().on_ttl(key, millis(timestamp), cells)
        self._settle(cells)
        return outputs

    @on_timer(HITL_TIMER)
    def on_hitl(
        self,
        key: Any = beam.DoFn.KeyParam,
        memory: Any = beam.DoFn.StateParam(MEMORY),
        seq: Any = beam.DoFn.StateParam(SEQ),
        cache: Any = beam.DoFn.StateParam(LLM_CACHE),
        continuation: Any = beam.DoFn.StateParam(CONTINUATION),
        pending: Any = beam.DoFn.StateParam(PENDING),
        wakes: Any = beam.DoFn.StateParam(WAKES),
        memory_log: Any = beam.DoFn.StateParam(MEMORY_LOG),
        memory_head: Any = beam.DoFn.StateParam(MEMORY_HEAD),
        ttl_timer: Any = beam.DoFn.TimerParam(TTL_TIMER),
        hitl_timer: Any = beam.DoFn.TimerParam(HITL_TIMER),
        wake_timer: Any = beam.DoFn.TimerParam(WAKE_TIMER),
        wake_clock: Any = beam.DoFn.TimerParam(WAKE_CLOCK),
    ) -> list[Output]:
        cells = _key_cells(
            memory,
            seq,
            cache,
            continuation,
            pending,
            wakes,
            ttl_timer,
            hitl_timer,
            wake_timer,
            wake_clock,
            memory_log,
            memory_head,
        )
        outputs = self._live_activator().on_hitl(key, cells)
        self._settle(cells)
        return outputs

    @on_timer(WAKE_TIMER)
    def on_wake(
        self,
        key: Any = beam.DoFn.KeyParam,
        timestamp: Any = beam.DoFn.TimestampParam,
        memory: Any = beam.DoFn.StateParam(MEMORY),
        seq: Any = beam.DoFn.StateParam(SEQ),
        cache: Any = beam.DoFn.StateParam(LLM_CACHE),
        continuation: Any = beam.DoFn.StateParam(CONTINUATION),
        pending: Any = beam.DoFn.StateParam(PENDING),
        wakes: Any = beam.DoFn.StateParam(WAKES),
        memory_log: Any = beam.DoFn.StateParam(MEMORY_LOG),
        memory_head: Any = beam.DoFn.StateParam(MEMORY_HEAD),
        ttl_timer: Any = beam.DoFn.TimerParam(TTL_TIMER),
        hitl_timer: Any = beam.DoFn.TimerParam(HITL_TIMER),
        wake_timer: Any = beam.DoFn.TimerParam(WAKE_TIMER),
        wake_clock: Any = beam.DoFn.TimerParam(WAKE_CLOCK),
    ) -> list[Output]:
        cells = _key_cells(
            memory,
            seq,
            cache,
            continuation,
            pending,
            wakes,
            ttl_timer,
            hitl_timer,
            wake_timer,
            wake_clock,
            memory_log,
            memory_head,
        )
        outputs = self._live_activator().on_wake(key, millis(timestamp), cells, False)
        self._settle(cells)
        return outputs

    @on_timer(WAKE_CLOCK)
    def on_wake_clock(
        self,
        key: Any = beam.DoFn.KeyParam,
        timestamp: Any = beam.DoFn.TimestampParam,
        memory: Any = beam.DoFn.StateParam(MEMORY),
        seq: Any = beam.DoFn.StateParam(SEQ),
        cache: Any = beam.DoFn.StateParam(LLM_CACHE),
        continuation: Any = beam.DoFn.StateParam(CONTINUATION),
        pending: Any = beam.DoFn.StateParam(PENDING),
        wakes: Any = beam.DoFn.StateParam(WAKES),
        memory_log: Any = beam.DoFn.StateParam(MEMORY_LOG),
        memory_head: Any = beam.DoFn.StateParam(MEMORY_HEAD),
        ttl_timer: Any = beam.DoFn.TimerParam(TTL_TIMER),
        hitl_timer: Any = beam.DoFn.TimerParam(HITL_TIMER),
        wake_timer: Any = beam.DoFn.TimerParam(WAKE_TIMER),
        wake_clock: Any = beam.DoFn.TimerParam(WAKE_CLOCK),
    ) -> list[Output]:
        cells = _key_cells(
            memory,
            seq,
            cache,
            continuation,
            pending,
            wakes,
            ttl_timer,
            hitl_timer,
            wake_timer,
            wake_clock,
            memory_log,
            memory_head,
        )
        outputs = self._live_activator().on_wake(key, millis(timestamp), cells, True)
        self._settle(cells)
        return outputs


def _key_cells(
    memory: Any,
    seq: Any,
    cache: Any,
    continuation: Any,
    pending: Any,
    wakes: Any,
    ttl_timer: Any,
    hitl_timer: Any,
    wake_timer: Any,
    wake_clock: Any,
    memory_log: Any,
    memory_head: Any,
) -> KeyCells:
    """The runner's state objects as the runtime's cells (logs on the portable harness).

    Taken as they come, not packed: this runs for every element.
    """
    return KeyCells(
        log_cell(memory),
        log_cell(seq),
        log_cell(cache),
        log_cell(continuation),
        log_cell(pending),
        ttl_timer,
        hitl_timer,
        log_cell(wakes),
        wake_timer,
        wake_clock,
        log_bag(memory_log),
        log_cell(memory_head),
    )
