"""Evaluation throughput: re-scoring recorded activations against the local runner's no-op rate.

An evaluation is worth running on every change only if replaying a
recorded log costs about what running the runtime over it costs. Both
sides replay the same 10,000 events (1,000 keys, ten events each, over
ten script steps) on the streaming DirectRunner through the same script:

- no-op: `RunAgent` with an agent that returns at once, no provider;
- eval: `run_eval` with an agent that makes one model call per event,
  every call answered from the recording (a warm-up run records them,
  untimed), scored with `FieldMatch`, summarized with bootstrap
  intervals, and written out (results.jsonl, summary.json, report.html).

The figure is eval events/s over no-op events/s, measured in the same
run with the kinds interleaved, medians of three (the machine is shared).

    python benchmarks/bench_eval.py          # full run
    python benchmarks/bench_eval.py --quick  # one short pass (the tests)
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Final

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest, RunAgent
from beam_agents.eval import Candidate, FieldMatch, run_eval
from beam_agents.eval.events import read_events
from beam_agents.eval.running import replay_script
from beam_agents.local import run_locally
from beam_agents.model.fake import FakeLLM

TARGET: Final = 0.5
KEYS: Final = 1_000
STEP_MS: Final = 60_000
MODEL = FakeLLM(
    default=b'{"priority": "low"}', name="bench-eval", model_id="fake-1", keep_calls=False
)


async def noop(ctx: ActivationContext) -> Complete:
    """Returns at once: the runtime's own cost."""
    return Complete(b"")


async def one_call(ctx: ActivationContext) -> Complete:
    """One model call per event, its answer the output."""
    response = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
    return Complete(response.response)


def _write_inputs(directory: Path, events: int) -> tuple[Path, Path]:
    per_step = max(1, events // 10)
    lines = []
    for i in range(events):
        time_ms = (i // per_step) * STEP_MS + (i % per_step)
        lines.append(
            json.dumps({"key": f"k{i % KEYS}", "payload": f"alert {i}", "time_ms": time_ms})
        )
    events_path = directory / "events.jsonl"
    events_path.write_text("\n".join(lines) + "\n")
    labels = [
        {"id": e.id, "expected": {"priority": "low"}} for e in read_events(str(events_path)).events
    ]
    labels_path = directory / "labels.jsonl"
    labels_path.write_text("".join(json.dumps(label) + "\n" for label in labels))
    return events_path, labels_path


def _noop_seconds(events_path: Path) -> float:
    config = AgentConfig()
    script = replay_script(
        read_events(str(events_path)),
        STEP_MS,
        max(config.ttl_ms, config.hitl_timeout_ms) + STEP_MS,
    )

    def build(events: Any, answers: Any) -> dict[str, Any]:
        result = events | "RunAgent" >> RunAgent(noop, config, answers=answers)
        return {"outputs": result.outputs}

    started = time.perf_counter()
    run_locally(script, build)
    return time.perf_counter() - started


def _eval_seconds(directory: Path, events: Path, labels: Path, out: str) -> float:
    started = time.perf_counter()
    result = run_eval(
        events,
        [Candidate("bench", one_call, AgentConfig(provider_factory=MODEL))],
        labels=labels,
        scorers=[FieldMatch("priority")],
        recording=directory / "recording.jsonl",
        out_dir=directory / out,
    )
    seconds = time.perf_counter() - started
    (candidate,) = result.summary["candidates"]
    if out != "warm" and candidate["recorded"] != candidate["model_calls"]:
        raise SystemExit("a timed run reached the provider: the recording did not answer")
    return seconds


def _seconds(runs: list[float]) -> str:
    return ", ".join(f"{s:.2f}s" for s in runs)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="one short pass, for the tests")
    args = parser.parse_args(argv)
    logging.getLogger("apache_beam").setLevel(logging.ERROR)
    events_count = 500 if args.quick else 10_000
    runs = 1 if args.quick else 3
    print(f"target: eval of {events_count:,} recorded activations >= {TARGET}x the no-op rate")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        events, labels = _write_inputs(directory, events_count)
        _eval_seconds(directory, events, labels, "warm")
        noop_s: list[float] = []
        eval_s: list[float] = []
        for run in range(runs):
            noop_s.append(_noop_seconds(events))
            eval_s.append(_eval_seconds(directory, events, labels, f"run{run}"))
    noop_rate = events_count / statistics.median(noop_s)
    eval_rate = events_count / statistics.median(eval_s)
    ratio = eval_rate / noop_rate
    verdict = "meets" if ratio >= TARGET else "MISSES"
    print(f"no-op RunAgent: {noop_rate:,.0f} events/s (runs: {_seconds(noop_s)})")
    print(f"eval, recorded: {eval_rate:,.0f} events/s (runs: {_seconds(eval_s)})")
    print(f"ratio {ratio:.2f}x: {verdict} the {TARGET}x target")


if __name__ == "__main__":
    main()
