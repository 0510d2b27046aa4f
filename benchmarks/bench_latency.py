"""Throughput with a slow model: parked activations against calls held in place.

1,000 events over 200 keys, a FakeLLM that answers after 200 ms (standing
for a served model: `calls_wait=True`, so its first call parks as a spec's
`openai:` one does, instead of running in place to learn that calls wait),
agents making one and two calls per activation, on both local runners (the
FnApiRunner in batch mode, and the streaming DirectRunner over a
TestStream). Each is run serially (`max_inflight_calls=1`: every call holds
the Beam thread) and with the default (calls park and overlap on the
process's call loop). Reported: events per second, their ratio, the parked
run's time excluding pipeline start (from the first activation's start to
the last activation's end) and its fraction of the physical floor (the
calls in sequence per key times the model's latency: no run can be
shorter), CPU seconds per event (the whole process: Beam's threads and the
call loop), whose ratio shows that waiting costs no CPU, and for the parked
run the process's CPU over that same span (pipeline construction, start
and teardown left out), the bytes the runtime writes to its state cells per
event, and on the FnApiRunner how many times per event the SDK harness's
state cache sized a value (each about 0.3 ms here, whatever the value: most
of a parked event's CPU there).
A last pair of rows puts 20 events on each key (deep buffers behind each
park) instead of 5: a parked event's CPU and bytes must not grow with the
depth of its key's buffer.

The serial runs take a 40-event prefix of the same input: at 200 ms a call
they do 5 events per second whatever their length, and the whole input would
take 200-400 s per run. On the DirectRunner the TestStream's processing
time starts at 0 and RunAgent's clock reads 1 ms, so polls are due only once
the script advances processing time after the events: the runner gives
timers priority over input, and a poll due at once would wait on each call
before the next event entered.

    python benchmarks/bench_latency.py          # full run (make bench)
    python benchmarks/bench_latency.py --quick  # one short pass (the tests)
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam.metrics.metric import MetricResults, Metrics, MetricsFilter
from apache_beam.runners.direct import direct_userstate
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.runners.worker import bundle_processor, statecache

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest, RunAgent
from beam_agents.model import FakeLLM
from beam_agents.testing.streaming import Script, run_script

_started = Metrics.distribution("bench_latency", "started_us")
_ended = Metrics.distribution("bench_latency", "ended_us")
"""When activations started and ended (`time.perf_counter`, one clock across the process's
threads): the min of the one and the max of the other bound the run without pipeline
construction, start and teardown. Metrics, because the runner pickles the agent with a
copy of any object it refers to."""


_cpu_started = Metrics.distribution("bench_latency", "cpu_started_us")
_cpu_ended = Metrics.distribution("bench_latency", "cpu_ended_us")
"""The process's CPU time (`time.process_time`: every thread) at the same points: the
CPU the run spent between them excludes pipeline construction, start and teardown.
Both local runners run the agent in this process."""


def _now_us() -> int:
    return int(time.perf_counter() * 1e6)


def _begin() -> None:
    _started.update(_now_us())  # type: ignore[no-untyped-call]
    _cpu_started.update(time.process_time_ns() // 1000)  # type: ignore[no-untyped-call]


def _end() -> None:
    _ended.update(_now_us())  # type: ignore[no-untyped-call]
    _cpu_ended.update(time.process_time_ns() // 1000)  # type: ignore[no-untyped-call]


async def one_call(ctx: ActivationContext) -> Complete:
    _begin()
    answer = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
    ctx.memory.append("answers", answer.response, max_items=8)
    _end()
    return Complete(answer.response)


async def two_calls(ctx: ActivationContext) -> Complete:
    _begin()
    draft = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
    final = await ctx.call_model(
        LlmRequest(model_id="fake-1", messages=["check", draft.response.decode()])
    )
    ctx.memory.append("answers", final.response, max_items=8)
    _end()
    return Complete(final.response)


def clock_ahead() -> int:
    """RunAgent's processing clock: 1 ms past the TestStream's start."""
    return 1


@dataclass(frozen=True)
class Size:
    events: int
    keys: int
    serial_events: int
    latency_s: float


FULL = Size(events=1_000, keys=200, serial_events=40, latency_s=0.2)
QUICK = Size(events=60, keys=20, serial_events=6, latency_s=0.05)
DEEP = 20
"""Events per key of the deep-buffer rows (the others have events / keys = 5)."""

_outputs = Metrics.counter("bench_latency", "outputs")


def _counted(_: object) -> None:
    _outputs.inc()  # type: ignore[no-untyped-call]


class _StateBytes:
    """Counts the bytes written to state cells, on both runners' state objects.

    Every cell is a read-modify-write cell of bytes. On the DirectRunner a
    write is what the runtime hands to the runner; on the portable harness
    the runtime appends to the cell's bag underneath, so its appends are
    counted there (the harness may merge several of a bundle into one
    request, so this is an upper bound there).
    """

    def __init__(self) -> None:
        self.written = 0

    def install(self) -> None:
        portable = bundle_processor.SynchronousBagRuntimeState
        portable.add = self._counting(portable.add)  # type: ignore[method-assign]
        direct = direct_userstate.ReadModifyWriteRuntimeState
        direct.write = self._counting(direct.write)  # type: ignore[method-assign]

    def _counting(self, write: Any) -> Any:
        def counted(state: object, value: bytes) -> None:
            self.written += len(value)
            write(state, value)

        return counted


_state_bytes = _StateBytes()


class _Sizings:
    """Counts the SDK harness's state cache sizings (`statecache.get_deep_size`).

    The harness sizes every value it caches: each committed write or clear
    of a cell and each read that misses the cache. A count, unlike CPU time,
    does not move with the machine's load.
    """

    def __init__(self) -> None:
        self.count = 0

    def install(self) -> None:
        size = statecache.get_deep_size

        def counted(*objs: Any) -> int:
            self.count += 1
            return size(*objs)

        statecache.get_deep_size = counted


_sizings = _Sizings()


def _events(n: int, keys: int) -> list[tuple[bytes, bytes]]:
    return [(f"key-{i % keys}".encode(), f"event {i}".encode()) for i in range(n)]


def _config(size: Size, inflight: int, name: str) -> AgentConfig:
    # A model served over the network, as a deployment's is: a spec's openai: or
    # gemini: provider parks its first call too, rather than learning in place.
    provider = FakeLLM(
        name=name, latency_s=size.latency_s, default=b"ok", keep_calls=False, calls_wait=True
    )
    return AgentConfig(provider_factory=provider, max_inflight_calls=inflight)


class _Span(NamedTuple):
    run_s: float
    """Seconds from the first activation's start to the last one's end."""
    cpu_s: float
    """The process's CPU seconds over the same span."""


def _span(metrics: MetricResults) -> _Span:
    found = metrics.query(MetricsFilter().with_namespace("bench_latency"))["distributions"]
    by_name = {d.key.metric.name: d.committed for d in found}
    return _Span(
        (by_name["ended_us"].max - by_name["started_us"].min) / 1e6,
        (by_name["cpu_ended_us"].max - by_name["cpu_started_us"].min) / 1e6,
    )


def _fnapi(
    agent: object, config: AgentConfig, events: list[tuple[bytes, bytes]]
) -> tuple[int, _Span]:
    pipeline = beam.Pipeline(runner=FnApiRunner())
    result = pipeline | beam.Create(events) | RunAgent(agent, config)  # type: ignore[arg-type]
    result.outputs | beam.Map(_counted)
    run = pipeline.run()
    run.wait_until_finish()
    found = run.metrics().query(MetricsFilter().with_name("outputs"))["counters"]
    return sum(int(counter.committed) for counter in found), _span(run.metrics())


def _direct(
    agent: object, config: AgentConfig, events: list[tuple[bytes, bytes]]
) -> tuple[int, _Span]:
    script = Script().events(*[(k, e, 1_000 + i) for i, (k, e) in enumerate(events)])
    script.watermark(1_000 + len(events)).processing_time(1_000)
    run = run_script(agent, config, script, clock_ms=clock_ahead)  # type: ignore[arg-type]
    return len(run.outputs), _span(run.metrics)


RUNNERS = {"FnApiRunner, batch": _fnapi, "streaming DirectRunner": _direct}


@dataclass(frozen=True)
class Measured:
    rate: float
    """Events per second."""
    cpu_s: float
    """Process CPU seconds per event."""
    state_bytes: float
    """Bytes written to state cells per event."""
    sizings: float
    """State cache sizings per event (the FnApiRunner's harness; 0 elsewhere)."""
    run_s: float
    """Seconds from the first activation's start to the last one's end (no pipeline start)."""
    run_cpu_s: float
    """Process CPU seconds per event over `run_s` (no pipeline construction, start or end)."""


def _measure(runner: str, agent: object, size: Size, inflight: int) -> Measured:
    """Events per second, CPU seconds and state bytes per event of one run."""
    n = size.serial_events if inflight == 1 else size.events
    events = _events(n, size.keys)
    config = _config(size, inflight, f"bench-latency-{inflight}")
    written, sized = _state_bytes.written, _sizings.count
    wall, cpu = time.perf_counter(), time.process_time()
    done, span = RUNNERS[runner](agent, config, events)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if done != n:
        raise RuntimeError(f"{runner}: {done} outputs for {n} events")
    return Measured(
        n / wall,
        cpu / n,
        (_state_bytes.written - written) / n,
        (_sizings.count - sized) / n,
        span.run_s,
        span.cpu_s / n,
    )


def _row(runner: str, calls: int, per_key: int, agent: object, size: Size) -> None:
    serial = _measure(runner, agent, size, 1)
    parked = _measure(runner, agent, size, 256)
    floor_s = calls * per_key * size.latency_s
    print(
        f"{runner:<24}{calls:>6}{per_key:>8}{serial.rate:>13.1f}{parked.rate:>13.1f}"
        f"{parked.rate / serial.rate:>8.1f}{parked.run_s:>13.2f} s{floor_s / parked.run_s:>7.2f}"
        f"{serial.cpu_s * 1000:>13.2f}ms"
        f"{parked.cpu_s * 1000:>13.2f}ms{parked.run_cpu_s * 1000:>13.2f}ms"
        f"{parked.cpu_s / serial.cpu_s:>11.2f}"
        f"{serial.state_bytes:>13.0f} B{parked.state_bytes:>11.0f} B"
        f"{serial.sizings:>10.1f}{parked.sizings:>8.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="one short pass, for the tests")
    size = QUICK if parser.parse_args().quick else FULL
    print(
        f"{size.events} events over {size.keys} keys, FakeLLM {size.latency_s * 1000:.0f} ms "
        f"(serial runs: the first {size.serial_events} events)"
    )
    print(
        f"{'runner':<24}{'calls':>6}{'per key':>8}{'serial ev/s':>13}{'parked ev/s':>13}"
        f"{'ratio':>8}{'run (no start)':>15}{'floor':>7}"
        f"{'cpu/ev serial':>15}{'cpu/ev parked':>15}{'(no start)':>15}{'cpu ratio':>11}"
        f"{'state/ev serial':>17}{'parked':>13}{'sized/ev':>10}{'parked':>8}"
    )
    _state_bytes.install()
    _sizings.install()
    per_key = size.events // size.keys
    deep = replace(size, keys=size.events // DEEP)
    for runner in RUNNERS:
        for calls, agent in ((1, one_call), (2, two_calls)):
            _row(runner, calls, per_key, agent, size)
    for runner in RUNNERS:
        _row(runner, 1, DEEP, one_call, deep)
    print(
        "target: ratio >= 50 with one call per activation; cpu ratio <= 1.5; "
        f"cpu/ev parked with {DEEP} events per key within 1.5x of {per_key} per key; "
        "one call per activation: cpu/ev parked <= 1.0 ms and floor >= 0.75 on the "
        "FnApiRunner, <= 0.4 ms on the streaming DirectRunner"
    )
    print(
        "run (no start): the parked run from its first activation's start to its last one's "
        "end; floor: calls in sequence per key x latency, divided by that time; "
        "cpu/ev parked (no start): the process's CPU over that span, per event"
    )


if __name__ == "__main__":
    main()
