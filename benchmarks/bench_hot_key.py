"""A hot key: one key whose events arrive ten times faster than its model answers.

A key's events run in order, one activation at a time, so without
coalescing a hot key decides at most one event per model latency and its
backlog grows for as long as the burst lasts. With
`AgentConfig(coalesce_max=N)` the events that waited behind the key's
parked activation run as one activation (`ctx.events`), one model call
deciding for all of them.

What runs is the real `AgentDoFn` (its state in memory, as
bench_activation holds it, the process's call loop, a FakeLLM that answers
after `latency`), driven against the wall clock the way a streaming runner
serves one key: every event that has arrived is handed to `process` in
order, then the key's processing-time timer (the poll of its parked
activation) fires if it is due, and its callback waits for the call, as on
a worker. Events arrive every `latency / 10`. A TestStream would not do:
its processing time is a test clock that stands still while a poll waits
on a real call, so a test clock cannot say how far behind a key falls.

Reported, without and with coalescing (and with coalescing and calls in
place, `max_inflight_calls=1`: each call holds the thread, and the key
parks once it answered, so the same events wait and group): model calls, events decided per
second against the arrival rate, the backlog (events arrived and not yet
decided; an event the runner could not hand in yet, because the key was
busy in a callback, waits all the same) at its peak and when the last
event arrived, and end-to-end latency (decided minus arrived) p50 / p99.
Targets: with coalescing the key keeps up: its backlog when the last
event arrived is at most three model latencies' worth of arrivals (30
events: those in the call in flight, those waiting for the next, those
arriving while it is handed over), and p99 latency at most four model
latencies, whatever the run's length; without it the backlog grows (at
least half the events still waiting when the last one arrived).

    python benchmarks/bench_hot_key.py          # full run (make bench)
    python benchmarks/bench_hot_key.py --quick  # one short pass (the tests)
"""

from __future__ import annotations

import argparse
import bisect
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from apache_beam.pvalue import TaggedOutput
from apache_beam.utils.timestamp import Timestamp
from bench_activation import KeyState

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest
from beam_agents.model import FakeLLM
from beam_agents.runtime._dofn import EVENT, AgentDoFn

KEY = b"svc-flapping"
COALESCE_MAX = 64
TARGETS = {"kept_up_backlog": 30, "kept_up_p99_latencies": 4.0, "grew_fraction": 0.5}


@dataclass(frozen=True)
class Size:
    events: int
    latency_s: float


FULL = Size(events=400, latency_s=0.1)
QUICK = Size(events=80, latency_s=0.05)


async def triage_burst(ctx: ActivationContext) -> Complete:
    """One model call for the events the activation decides for."""
    alerts = b"\n".join(ctx.events).decode()
    answer = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[alerts]))
    ctx.memory.append("decisions", answer.response, max_items=16)
    return Complete(answer.response)


class Timer:
    """A processing-time timer the driver fires once the wall clock passes it."""

    def __init__(self) -> None:
        self.at_ms: float | None = None

    def set(self, timestamp: Timestamp) -> None:
        self.at_ms = timestamp.micros / 1000

    def clear(self) -> None:
        self.at_ms = None


@dataclass
class HotKey(KeyState):
    """The key's state as bench_activation holds it, with a poll timer that is kept."""

    poll: Timer = field(default_factory=Timer)

    def args(self) -> tuple[object, ...]:
        held = super().args()  # eight cells, then the TTL, poll, follow-up, follow-up clock
        return (*held[:9], self.poll, *held[10:])


@dataclass(frozen=True)
class Result:
    calls: int
    decided_per_s: float
    arrived_per_s: float
    peak_backlog: int
    backlog_at_last_arrival: int
    p50_ms: float
    p99_ms: float


def _emitted(decided: list[float], out: Any) -> None:
    """Note when each decision `out` holds left the key (once the callback returned)."""
    count = sum(1 for item in out if not isinstance(item, TaggedOutput))
    decided.extend([time.perf_counter()] * count)


def run(size: Size, coalesce_max: int, inflight: int = 256) -> Result:
    """Serve the key against the wall clock: arrived events in order, then a due poll."""
    name = f"hot-key-{coalesce_max}-{inflight}"
    provider = FakeLLM(name=name, latency_s=size.latency_s, default=b"page")
    provider.reset()
    config = AgentConfig(
        provider_factory=provider,
        coalesce_max=coalesce_max,
        suspended_event_buffer=256,
        max_inflight_calls=inflight,
    )
    dofn = AgentDoFn(triage_burst, config, token=f"bench-{name}")
    dofn.setup()
    key = HotKey()
    every_s = size.latency_s / 10
    start = time.perf_counter()
    arrivals = [start + i * every_s for i in range(size.events)]
    decided: list[float] = []
    handed = 0
    try:
        while len(decided) < size.events:
            now = time.perf_counter()
            while handed < size.events and arrivals[handed] <= now:
                at = Timestamp(micros=int((arrivals[handed] - start) * 1e6) + 1_000_000)
                element = (KEY, (EVENT, "", b"alert %d" % handed))
                _emitted(decided, dofn.process(element, at, *key.args()))
                handed += 1
            if len(decided) == size.events:
                break
            due = key.poll.at_ms is not None and key.poll.at_ms <= time.time() * 1000
            if due:
                key.poll.at_ms = None
                done = dofn.on_hitl(KEY, *key.args())
                _emitted(decided, done)
            elif handed < size.events:
                time.sleep(max(0.0, min(arrivals[handed] - time.perf_counter(), every_s)))
            elif key.poll.at_ms is None:
                raise RuntimeError(f"{size.events - len(decided)} events neither decided nor due")
            else:
                time.sleep(0.001)
    finally:
        dofn.teardown()

    # Arrived by the clock, handed in or not (a key busy in a callback makes the
    # runner hold its events, which wait all the same); decided once emitted.
    def backlog(at: float) -> int:
        return bisect.bisect_right(arrivals, at) - bisect.bisect_right(decided, at)

    latencies = sorted((d - a) * 1000 for d, a in zip(decided, arrivals, strict=True))
    return Result(
        calls=provider.call_count(),
        decided_per_s=size.events / (decided[-1] - start),
        arrived_per_s=size.events / (arrivals[-1] - start),
        peak_backlog=max(backlog(at) for at in arrivals),
        backlog_at_last_arrival=backlog(arrivals[-1]),
        p50_ms=statistics.median(latencies),
        p99_ms=latencies[min(len(latencies) - 1, round(0.99 * (len(latencies) - 1)))],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="one short pass, for the tests")
    size = QUICK if parser.parse_args().quick else FULL
    print(
        f"one key, {size.events} events arriving every {size.latency_s * 100:.0f} ms, "
        f"FakeLLM {size.latency_s * 1000:.0f} ms"
    )
    print(
        f"{'coalesce_max':<24}{'calls':>7}{'arrived/s':>11}{'decided/s':>11}{'ratio':>7}"
        f"{'peak backlog':>14}{'at last arrival':>17}{'p50 ms':>9}{'p99 ms':>9}"
    )
    results = {}
    for coalesce, inflight in ((1, 256), (COALESCE_MAX, 256), (COALESCE_MAX, 1)):
        r = results[coalesce, inflight] = run(size, coalesce, inflight)
        label = f"{coalesce}" if inflight > 1 else f"{coalesce}, calls in place"
        print(
            f"{label:<24}{r.calls:>7}{r.arrived_per_s:>11.1f}{r.decided_per_s:>11.1f}"
            f"{r.decided_per_s / r.arrived_per_s:>7.2f}{r.peak_backlog:>14}"
            f"{r.backlog_at_last_arrival:>17}{r.p50_ms:>9.0f}{r.p99_ms:>9.0f}"
        )
    on, off = results[COALESCE_MAX, 256], results[1, 256]
    in_place = results[COALESCE_MAX, 1]
    latencies = on.p99_ms / (size.latency_s * 1000)
    print(
        f"target: coalescing keeps up (backlog at last arrival <= {TARGETS['kept_up_backlog']}, "
        f"p99 <= {TARGETS['kept_up_p99_latencies']:.0f} model latencies): "
        f"{on.backlog_at_last_arrival} and {latencies:.1f}, with calls in place "
        f"{in_place.backlog_at_last_arrival} and "
        f"{in_place.p99_ms / (size.latency_s * 1000):.1f}; "
        f"without it the backlog grows (>= {TARGETS['grew_fraction']:.0%} of the events "
        f"waiting at last arrival): {off.backlog_at_last_arrival / size.events:.0%}"
    )


if __name__ == "__main__":
    main()
