"""Per-activation overhead of the ADK adapter against a plain agent.

Each adapter's agent and a plain agent making the same model calls run
through the DoFn's element path (`bench_activation.element_path_ms`: the
runtime's whole activation, in-memory cells for the runner's state) in the
same run, interleaved, over the same keys; what is reported is the median
wall time per activation, model time excluded, and the adapter's ratio to
the plain agent. One function and one table row per framework; a framework
not installed is reported as skipped.

    python benchmarks/bench_adk.py          # full run (make bench)
    python benchmarks/bench_adk.py --quick  # one short pass (the tests)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_activation import TimedFakeLLM, element_path_ms

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest
from beam_agents.model import FakeLLM

TARGETS = {"adk_ratio_max": 100.0}
"""ADK runs its workflow, pydantic events and spans per activation, and the
adapter decodes and encodes the session: tens of times a plain agent's
tenth of a millisecond, still small beside a model call's hundreds."""

INSTRUCTION = "Triage the alert."


@dataclass
class Row:
    framework: str
    adapter_ms: float | None
    plain_ms: float
    target: float | None

    @property
    def ratio(self) -> float | None:
        return None if self.adapter_ms is None else self.adapter_ms / self.plain_ms


async def plain_agent(ctx: ActivationContext) -> Complete:
    """What the adapted agents do, written by hand: the history in memory, one model call."""
    history = [json.loads(item) for item in ctx.memory.ring("history")]
    turn = {"role": "user", "content": ctx.event.decode()}
    messages = [{"role": "system", "content": INSTRUCTION}, *history, turn]
    answer = await ctx.call_model(LlmRequest(model_id="fake-1", messages=messages))
    reply = {"role": "assistant", "content": answer.response.decode()}
    ctx.memory.append("history", json.dumps(turn).encode(), max_items=200)
    ctx.memory.append("history", json.dumps(reply).encode(), max_items=200)
    return Complete(answer.response)


def _medians(agents: dict[str, Any], n: int, rounds: int) -> dict[str, float]:
    """Median per-activation ms of each agent, the agents interleaved round by round."""
    samples: dict[str, list[float]] = {name: [] for name in agents}
    for _ in range(rounds):
        for name, agent in agents.items():
            provider = TimedFakeLLM(FakeLLM(name=f"bench-adapters-{name}", keep_calls=False))
            config = AgentConfig(provider_factory=provider, max_inflight_calls=1)
            samples[name].extend(element_path_ms(agent, config, n, provider))
    return {name: statistics.median(values) for name, values in samples.items()}


def bench_adk(n: int, rounds: int) -> Row:
    """The ADK adapter: an LlmAgent with one instruction, answered by the model once per event."""
    if importlib.util.find_spec("google.adk") is None:
        plain = _medians({"plain": plain_agent}, n, rounds)["plain"]
        return Row("ADK (not installed)", None, plain, None)
    from google.adk.agents import LlmAgent

    from beam_agents.adapters.adk import BeamAgentsLlm, adk_agent

    adk = adk_agent(
        LlmAgent(name="triage", model=BeamAgentsLlm(model="fake-1"), instruction=INSTRUCTION)
    )
    medians = _medians({"plain": plain_agent, "adk": adk}, n, rounds)
    return Row("ADK", medians["adk"], medians["plain"], TARGETS["adk_ratio_max"])


BENCHES: list[Callable[[int, int], Row]] = [bench_adk]


def report(rows: list[Row]) -> str:
    lines = ["framework             adapter ms  plain ms  ratio  target"]
    for row in rows:
        if row.adapter_ms is None or row.ratio is None:
            lines.append(f"{row.framework:<21} {'skipped':>10}  {row.plain_ms:8.3f}")
            continue
        verdict = "ok" if row.target is None or row.ratio <= row.target else "OVER"
        lines.append(
            f"{row.framework:<21} {row.adapter_ms:10.3f}  {row.plain_ms:8.3f}  "
            f"{row.ratio:5.1f}x (target <= {row.target}x: {verdict})"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short pass")
    args = parser.parse_args(argv)
    n, rounds = (64, 1) if args.quick else (1_000, 3)
    rows = [bench(n, rounds) for bench in BENCHES]
    print(report(rows))
    return rows


if __name__ == "__main__":
    main()
