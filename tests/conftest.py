"""Shared test configuration: the service fixtures users can reuse too."""

pytest_plugins = ("beam_agents.testing.pytest_plugin",)
