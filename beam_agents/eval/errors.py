"""What an evaluation refuses, named so the CLI can tell a usage error from a failed gate."""

from __future__ import annotations

from beam_agents.errors import BeamAgentsError

__all__ = ["EvalInputError", "GateError", "RecordingError"]


class EvalInputError(BeamAgentsError, ValueError):
    """An events or labels file, a candidate or a scorer that cannot be used; says where."""


class GateError(EvalInputError):
    """A gate expression that does not parse or names a metric the run does not have."""


class RecordingError(BeamAgentsError, ValueError):
    """A recording file that cannot be read back; names the file and line."""
