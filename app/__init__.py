"""Reference applications built on beam-agents (not part of the `beam_agents` package)."""
