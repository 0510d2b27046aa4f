"""The langgraph extra is optional: beam-agents imports without it; the adapter names it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_importing_beam_agents_and_its_adapters_package_imports_no_framework(
    tmp_path: Path,
) -> None:
    done = _python(
        """
        import sys
        import beam_agents, beam_agents.adapters
        from beam_agents import AgentConfig, RunAgent
        print(sorted(n for n in sys.modules if n.split(".")[0] in ("langgraph", "langchain_core")))
        """,
        tmp_path,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_adapter_without_the_extra_raises_a_configuration_error_naming_the_extra(
    tmp_path: Path,
) -> None:
    """A `None` in sys.modules makes an import fail as if the package were not installed."""
    done = _python(
        """
        import sys
        sys.modules["langgraph"] = None
        from beam_agents.errors import ConfigurationError
        try:
            import beam_agents.adapters.langgraph
        except ConfigurationError as exc:
            print(type(exc.__cause__).__name__, "|", exc)
        """,
        tmp_path,
    )

    assert done.returncode == 0, done.stderr
    cause, message = done.stdout.strip().split(" | ")
    assert cause == "ModuleNotFoundError"
    assert "pip install 'beam-agents[langgraph]'" in message
