"""A LangGraph triage agent run by beam-agents: see README.md."""
