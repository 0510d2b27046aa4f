"""The triage candidates `make eval` compares, as `beam-agents eval --candidate` names them.

`no-recall` and `recall` differ in one real way: the same agent, model and
memory tiers, with the recall of similar past incidents off (no embedder)
or on (the demo's offline embedder). That is the change a reviewer weighs:
recall should fix the alerts whose right answer depends on history and
change nothing else.

Swapped, they are the regression the gates are there to catch: with
`recall` as the baseline, `no-recall` is a change that stops the agent
remembering, and `delta(class)>=0` fails it.

Each candidate is an agent function and a zero-argument config function
(`NAME=app.triage.candidates:AGENT?app.triage.candidates:CONFIG`); both
complete with a typed `Decision` (`--output-type` names it, `OUTPUT_TYPE`).
The long-term URI below is never opened: an evaluation gives every
candidate a private in-process store.
"""

from __future__ import annotations

from app.triage.agent import triage_agent
from app.triage.decision import Decision
from app.triage.pipeline import DEFAULT_EMBEDDER, NO_EMBEDDER, triage_config
from beam_agents import ActivationContext, AgentConfig, Complete, Suspend

__all__ = [
    "CANDIDATES",
    "OUTPUT_TYPE",
    "no_recall_config",
    "recall_config",
    "triage_with_recall",
    "triage_without_recall",
]

_STORE = "memory://triage-eval"
_MODULE = __name__


async def triage_without_recall(ctx: ActivationContext) -> Complete | Suspend:
    """The triage agent classifying from the alert and its recent context only."""
    return await triage_agent(ctx, recall=False)


async def triage_with_recall(ctx: ActivationContext) -> Complete | Suspend:
    """The triage agent that also recalls the service's similar past incidents."""
    return await triage_agent(ctx, recall=True)


def no_recall_config() -> AgentConfig:
    """The demo's configuration with no embedder: nothing is recalled."""
    return triage_config(model_spec="rules", longterm_uri=_STORE, embedder_spec=NO_EMBEDDER)


def recall_config() -> AgentConfig:
    """The demo's configuration with its offline embedder: incidents are recallable."""
    return triage_config(model_spec="rules", longterm_uri=_STORE, embedder_spec=DEFAULT_EMBEDDER)


CANDIDATES: dict[str, str] = {
    "no-recall": f"{_MODULE}:triage_without_recall?{_MODULE}:no_recall_config",
    "recall": f"{_MODULE}:triage_with_recall?{_MODULE}:recall_config",
}
"""Each candidate's `--candidate` target, by name."""

OUTPUT_TYPE = f"{Decision.__module__}:{Decision.__qualname__}"
"""What every candidate completes with, as `--output-type` names it."""
