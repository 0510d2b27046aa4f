"""Tool handlers for an evaluation: nothing a candidate decides ever reaches a real system.

Each configured tool is replaced by a `ReplayedTool` of the same name, so
the agent's `ctx.call_tool` runs through the runtime exactly as in
production (ledger, replay cache, parking) and only the last step, the
handler, differs. What it answers depends on the mode the user chose:

- `record`: the recorded result for this tool and these canonical args,
  else the tool's declared stub, else the call fails;
- `stub`: the declared stub, else the call fails;
- `fail`: every call fails, so an agent that calls a tool is dead-lettered
  `tool_error` (an evaluation of decisions that must not need tools).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from beam_agents.eval.errors import EvalInputError
from beam_agents.eval.recording import recording_at, tool_key, tool_result
from beam_agents.tools.calls import ToolCall, ToolHandler
from beam_agents.tools.errors import ToolCallError

__all__ = ["TOOL_MODES", "ReplayedTool", "ToolMode", "replayed_tools"]

ToolMode = Literal["record", "stub", "fail"]
TOOL_MODES: Final = ("record", "stub", "fail")


@dataclass(frozen=True)
class ReplayedTool(ToolHandler):
    """Answers one tool's calls from the recording or a stub, never by running it."""

    name: str
    mode: ToolMode
    recording: str
    stub: bytes | None = None

    async def __call__(self, call: ToolCall) -> bytes:
        if self.mode == "fail":
            raise ToolCallError(f"tool {self.name!r} called in an evaluation run with tools='fail'")
        if self.mode == "record":
            entry = recording_at(self.recording).tool_answer(tool_key(call.tool, call.args))
            if entry is not None:
                return tool_result(entry)
        if self.stub is not None:
            return self.stub
        args = json.dumps(dict(call.args), sort_keys=True)[:200]
        where = "no recorded result and no stub" if self.mode == "record" else "no stub"
        raise ToolCallError(f"tool {self.name!r} with args {args}: {where} (tools={self.mode!r})")

    async def aclose(self) -> None:
        """Holds nothing."""


def replayed_tools(
    tools: Mapping[str, ToolHandler], mode: str, recording: str, stubs: Mapping[str, bytes]
) -> dict[str, ToolHandler]:
    """`ReplayedTool`s standing in for a candidate's configured tools (and stubbed ones)."""
    if mode not in TOOL_MODES:
        raise EvalInputError(f"tools must be one of {', '.join(TOOL_MODES)}, got {mode!r}")
    for name, stub in stubs.items():
        if type(stub) is not bytes:
            raise EvalInputError(f"stubs[{name!r}] must be bytes, got {type(stub).__name__}")
    names = sorted({*tools, *stubs})
    return {
        name: ReplayedTool(name, mode, recording, stubs.get(name))  # type: ignore[arg-type]
        for name in names
    }
