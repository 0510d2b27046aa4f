"""The ADK adapter is optional: nothing imports ADK until the adapter itself is imported."""

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


def test_importing_beam_agents_and_its_adapters_package_does_not_import_adk(
    tmp_path: Path,
) -> None:
    done = _python(
        """
        import sys
        import beam_agents, beam_agents.adapters
        from beam_agents import AgentConfig, RunAgent
        print(sorted(name for name in sys.modules if name.startswith("google.adk")))
        """,
        tmp_path,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_importing_the_adapter_without_the_extra_says_how_to_install_it(tmp_path: Path) -> None:
    done = _python(
        """
        import sys
        sys.modules["google.adk"] = None  # what an interpreter without the extra finds
        from beam_agents.errors import ConfigurationError
        try:
            import beam_agents.adapters.adk
        except ConfigurationError as exc:
            print(exc)
        """,
        tmp_path,
    )

    assert done.returncode == 0, done.stderr
    assert "pip install 'beam-agents[adk]'" in done.stdout
    assert done.stdout.startswith("beam_agents.adapters.adk: needs Google ADK")
