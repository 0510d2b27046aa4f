"""Per-activation overhead of the LangGraph adapter against a plain agent making the same calls.

Each framework's half is a function of its own returning one table row;
`main` runs every half and prints the table. The time is measured through
the DoFn's element path (`AgentDoFn.process` with in-memory cells, as
bench_activation.py measures it), with an instant scripted provider, every
call in place (`max_inflight_calls=1`), 64 keys whose conversations grow
with the run. The plain agent is measured in the same run, interleaved
round by round, and the row reports medians and their ratio: the machine
is shared, so single figures are noisy.

LangGraph: a ReAct graph (model node with a tool bound, `ToolNode` with a
read-only tool, conditional edge) per event, two model calls and one tool
call, its checkpoint in working memory; against an agent doing the same two
calls and the same tool function by hand, its conversation kept as JSON in
working memory.

    python benchmarks/bench_langgraph.py          # full run (make bench)
    python benchmarks/bench_langgraph.py --quick  # one short pass (the tests)
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from apache_beam.utils.timestamp import Timestamp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_activation import KeyState

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest, LlmResponse
from beam_agents.runtime._dofn import EVENT, AgentDoFn

TARGETS = {"langgraph_overhead_ms": 10.0}
"""What the LangGraph adapter may add per activation of this graph, over the plain agent."""

KEYS = 64


class _Timed:
    """Drives one agent through its own DoFn, one event at a time, timing each activation."""

    def __init__(self, agent: Any, config: AgentConfig) -> None:
        self.dofn = AgentDoFn(agent, config, token="bench-adapters", clock_ms=lambda: 0)
        self.dofn.setup()
        self.states = {f"entity-{i}".encode(): KeyState() for i in range(KEYS)}
        self.samples: list[float] = []
        self.outputs: list[Any] = []

    def step(self, i: int, event: bytes) -> None:
        key = f"entity-{i % KEYS}".encode()
        state = self.states[key].args()
        started = time.perf_counter()
        out = list(
            self.dofn.process(
                (key, (EVENT, "", event)), Timestamp(micros=(1_000 + i) * 1000), *state
            )
        )
        self.samples.append((time.perf_counter() - started) * 1e3)
        self.outputs.extend(out)

    def close(self) -> None:
        self.dofn.teardown()


def _interleaved(
    kinds: dict[str, _Timed], n: int, event: Callable[[int], bytes]
) -> dict[str, float]:
    """Median ms per activation of each kind, the kinds taking turns event by event."""
    for i in range(n):
        for timed in kinds.values():
            timed.step(i, event(i))
    for name, timed in kinds.items():
        completed = [o for o in timed.outputs if isinstance(o, tuple) and o[1].startswith(b"done")]
        assert len(completed) == n, f"{name}: {len(completed)} of {n} activations completed"
    medians = {name: statistics.median(timed.samples[KEYS:]) for name, timed in kinds.items()}
    for timed in kinds.values():
        timed.close()
    return medians


# LangGraph -------------------------------------------------------------------


class ScriptedReact:
    """A provider for the ReAct rows: a tool call for a new event, then a summary."""

    def __call__(self) -> ScriptedReact:
        return self

    async def complete(self, request: LlmRequest) -> LlmResponse:
        last = request.messages[-1]
        if last["role"] == "user":
            body = {"tool_calls": [{"name": "runbook", "arguments": {"service": "db"}}]}
            answer = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        else:
            answer = f"done: {last['content']}".encode()
        return LlmResponse(response=answer, model_id="scripted", input_tokens=10, output_tokens=2)


def runbook_text(service: str) -> str:
    return f"{service}: restart the replica"


TOOLS_SCHEMA = [
    {
        "name": "runbook",
        "description": "Read a service's runbook.",
        "parameters": {
            "type": "object",
            "properties": {"service": {"type": "string"}},
            "required": ["service"],
        },
    }
]


async def plain_react(ctx: ActivationContext) -> Complete:
    """The same two calls and tool by hand, the conversation as JSON in working memory."""
    history = json.loads(ctx.memory.get("conversation") or b"[]")
    messages = [*history, {"role": "user", "content": ctx.event.decode()}]
    first = await ctx.call_model(
        LlmRequest(model_id="triage", messages=messages, tools_schema=TOOLS_SCHEMA)
    )
    (call,) = json.loads(first.response)["tool_calls"]
    messages.append({"role": "assistant", "content": first.response.decode()})
    result = runbook_text(**call["arguments"])
    messages.append({"role": "tool", "name": "runbook", "content": result})
    final = await ctx.call_model(
        LlmRequest(model_id="triage", messages=messages, tools_schema=TOOLS_SCHEMA)
    )
    messages.append({"role": "assistant", "content": final.response.decode()})
    ctx.memory.set("conversation", json.dumps(messages).encode())
    return Complete(final.response)


def _langgraph_agent() -> Any:
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    from beam_agents.adapters.langgraph import BeamAgentsChatModel, graph_agent

    runbook = tool(runbook_text, description="Read a service's runbook.")
    runbook.name = "runbook"
    model = BeamAgentsChatModel(model_id="triage").bind_tools([runbook])

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode([runbook]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return graph_agent(builder, read_only_tools=["runbook"])


def bench_langgraph(n: int) -> dict[str, Any]:
    """The LangGraph row: adapter and plain agent, median ms per activation and their ratio."""
    config = AgentConfig(provider_factory=ScriptedReact(), max_inflight_calls=1)
    medians = _interleaved(
        {"adapter": _Timed(_langgraph_agent(), config), "plain": _Timed(plain_react, config)},
        n,
        lambda i: f"db-{i}: replica lag".encode(),
    )
    return {
        "framework": "LangGraph",
        "adapter_ms": medians["adapter"],
        "plain_ms": medians["plain"],
        "ratio": medians["adapter"] / medians["plain"],
        "overhead_ms": medians["adapter"] - medians["plain"],
        "target_ms": TARGETS["langgraph_overhead_ms"],
    }


BENCHES: list[Callable[[int], dict[str, Any]]] = [bench_langgraph]
"""One function per framework; each returns its row."""


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short pass (the tests)")
    args = parser.parse_args(argv)
    logging.getLogger("beam_agents").setLevel(logging.ERROR)
    n = KEYS * 3 if args.quick else KEYS * 20
    rows = [bench(n) for bench in BENCHES]
    print(f"{'framework':<10} {'adapter ms':>11} {'plain ms':>9} {'ratio':>6} {'overhead ms':>12}")
    for row in rows:
        print(
            f"{row['framework']:<10} {row['adapter_ms']:>11.3f} {row['plain_ms']:>9.3f} "
            f"{row['ratio']:>6.2f} {row['overhead_ms']:>12.3f} "
            f"(target overhead < {row['target_ms']} ms per activation)"
        )
    return rows


if __name__ == "__main__":
    main()
