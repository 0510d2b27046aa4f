"""Test configuration: beam_agents' fixtures start real stores on loopback ports."""

pytest_plugins = ("beam_agents.testing.pytest_plugin",)
