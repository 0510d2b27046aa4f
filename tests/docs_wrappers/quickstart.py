"""The README quickstart, with the fragment where its `result` lines are.

`<!-- fragment: quickstart -->`: the fragment runs inside `with beam.Pipeline() as p:`
(the default runner, in batch), after `events`, with everything the quickstart
defines: `beam`, the names it imports, `agent` (its triage agent) and `config` (a
FakeLLM, a one-hour TTL).
"""

import apache_beam as beam

# RunAgent is for the fragment, as it was for the quickstart's own result lines.
from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest, RunAgent  # noqa: F401
from beam_agents.model import FakeLLM, Rule


async def agent(ctx: ActivationContext) -> Complete:
    """Module level: the DoFn pickles the agent by reference."""
    ctx.memory.append("recent", ctx.event, max_items=32)
    answer = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
    if answer.response == b"page":
        ctx.emit_intent("page_oncall", {"entity": ctx.entity_key.decode()})
    return Complete(output=answer.response)


provider = FakeLLM(rules=[Rule(pattern="disk full", response=b"page")], default=b"ignore")
config = AgentConfig(provider_factory=provider, ttl_ms=3_600_000)
with beam.Pipeline() as p:
    events = p | beam.Create([("db-3", b"disk full"), ("web-1", b"cpu idle")])
    # <fragment>
