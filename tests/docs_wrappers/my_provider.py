"""Module level, beside the user's own code the pages call `my_provider` and `summarize`.

`<!-- fragment: my_provider -->`: `my_provider` is a provider factory (here a FakeLLM,
as a test would pass) and `summarize(event)` a pure function of the event's bytes.
The fragment imports what it uses from beam-agents itself.
"""

from beam_agents.model import FakeLLM

my_provider = FakeLLM(default=b"ok")


def summarize(event: bytes) -> bytes:
    """The first line of the event: a pure function of it, as a long-term save needs."""
    return event.split(b"\n", 1)[0]


# <fragment>
