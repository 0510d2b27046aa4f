"""Real backing servers for tests, each on a free loopback port."""

from beam_agents.testing.services._process import (
    ServiceProcess,
    ServiceUnavailableError,
    free_port,
    services_required,
)

__all__ = ["ServiceProcess", "ServiceUnavailableError", "free_port", "services_required"]
