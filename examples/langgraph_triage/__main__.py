"""Run the triage graph offline: `python -m examples.langgraph_triage` from the repository root.

Three alerts arrive on the streaming DirectRunner. The checkout alert's
runbook says to page, so the graph interrupts; the answer arrives on the
answers input (as the console would send it) and the graph resumes and
pages, once, through the tool ledger.
"""

from __future__ import annotations

from beam_agents import AgentConfig, intent_id
from beam_agents.adapters.langgraph import graph_agent, tool_handlers
from beam_agents.local import Script, run_agent
from examples.langgraph_triage.graph import graph, lookup_runbook, page_oncall
from examples.langgraph_triage.scripted import ScriptedTriageModel

agent = graph_agent(graph, read_only_tools=["lookup_runbook"])
config = AgentConfig(
    provider_factory=ScriptedTriageModel(),
    tools=tool_handlers([page_oncall]),
    tool_ledger="memory://langgraph-triage",
)
_ = lookup_runbook  # read-only: runs in place, needs no handler


def main() -> None:
    # The approval is the checkout key's first activation's first intent: its id is known.
    approval = intent_id(b"checkout", 1, 0)
    script = (
        Script()
        .events(
            ("checkout", b"checkout: payments API unreachable", 1_000),
            ("search", b"search: latency above 2 s", 1_000),
        )
        .watermark(2_000)
        .answers(("checkout", approval, b"approve: runbook says page", 3_000))
    )
    run = run_agent(agent, config, script)
    for intent in run.intents:
        if intent.awaits_answer:
            print(f"asked {intent.entity_key.decode()}: {intent.prompt.decode()[:60]}...")
    for key, output in sorted(run.outputs):
        print(f"{key.decode()}: {output.decode()}")
    for error in run.errors:
        print(f"error {error.entity_key.decode()}: {error.reason}")


if __name__ == "__main__":
    main()
