"""A pipeline built but not run, beside an agent and a tool handler of the user's.

`<!-- fragment: graph -->`: the fragment runs inside `beam.Pipeline()`, which is never
run (its model and PostgreSQL store are services this machine lacks), with `events`
(keyed alerts) from `beam.Create`, `triage_agent` (an agent) and `page_oncall` (a
plain async tool handler).
"""

import os

import apache_beam as beam

from beam_agents import ActivationContext, Complete
from beam_agents.tools import ToolCall


async def triage_agent(ctx: ActivationContext) -> Complete:
    """Module level: the DoFn pickles the agent by reference."""
    return Complete(output=ctx.event)


async def page_oncall(call: ToolCall) -> bytes:
    """A plain async handler: the call in, the result's bytes out."""
    return f"paged for {call.entity_key!r}".encode()


# The launcher's environment holds the model's key, as a user's does; the pipeline is
# never run, so the key reaches no server.
os.environ.setdefault("GEMINI_API_KEY", "not-a-key")
p = beam.Pipeline()
events = p | "Events" >> beam.Create([("db-3", b"disk full")])
# <fragment>
