"""Delivering a decision to its target: a page, a ticket or an escalation, once.

The intent an agent emits is the decision's record on the intents output
whatever happens; when the pipeline configures the decision's tool
(`ctx.tool_names`), the agent also delivers it with `ctx.call_tool`, whose
answer the replay cache keeps, so a retried or resumed activation gets the
id the target answered back instead of delivering twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final

from beam_agents import ActivationContext

__all__ = ["DELIVERED_BY", "deliver"]

DELIVERED_BY: Final[Mapping[str, str]] = {
    "paged": "page_oncall",
    "ticket": "open_ticket",
    "escalated": "escalate",
}
"""The tool that delivers each decision that has one."""


async def deliver(ctx: ActivationContext, decision: str, args: dict[str, str]) -> str:
    """The id the target answered for this decision; "" when it has no tool configured."""
    tool = DELIVERED_BY.get(decision)
    if tool is None or tool not in ctx.tool_names:
        return ""
    answer = await ctx.call_tool(tool, args)
    try:
        delivered = json.loads(answer).get("id", "")
    except (ValueError, AttributeError):
        return answer.decode("utf-8", "replace")[:80]
    return str(delivered)
