"""The body of an agent, run on one event with a long-term tier in memory.

`<!-- fragment: agent_body -->`: the fragment is the body of `async def agent(ctx)`,
`ctx` the activation's context, beside `summarize(event)` (the user's pure function of
the event); the agent returns `Complete` after it. It runs once through `run_agent`
with `longterm_memory="memory://docs"`, whose entity already holds a `counter` row of
b"0", and must end without a dead letter.
"""

import asyncio

from beam_agents import ActivationContext, AgentConfig, Complete
from beam_agents.local import Script, run_agent
from beam_agents.memory.stores import MemoryRecord, open_store
from beam_agents.model import FakeLLM

STORE = "memory://docs"
ENTITY = "db-3"


def summarize(event: bytes) -> bytes:
    """The first line of the event: a pure function of it, as a long-term save needs."""
    return event.split(b"\n", 1)[0]


async def agent(ctx: ActivationContext) -> Complete:
    """Module level: the DoFn pickles the agent by reference."""
    # <fragment>
    return Complete(output=b"ok")


async def seed() -> None:
    async with open_store(STORE) as store:
        await store.upsert(ENTITY.encode(), MemoryRecord("counter", b"0", 1, 0))


asyncio.run(seed())
config = AgentConfig(provider_factory=FakeLLM(), longterm_memory=STORE)
run = run_agent(agent, config, Script().events((ENTITY, b"disk full on /var/data", 1_000)))
assert run.errors == [], run.errors
assert run.outputs == [(ENTITY.encode(), b"ok")], run.outputs
