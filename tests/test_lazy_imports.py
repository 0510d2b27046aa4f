"""Importing beam-agents is cheap: the CLI never imports Apache Beam (PEP 562 lazy names)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

LAZY_PACKAGES = [
    "beam_agents",
    "beam_agents.memory",
    "beam_agents.memory.stores",
    "beam_agents.runtime",
    "beam_agents.tools",
    "beam_agents.eval",
]


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_importing_the_cli_does_not_import_apache_beam(tmp_path: Path) -> None:
    done = _python(
        """
        import sys
        import beam_agents.cli
        print(sorted(name for name in sys.modules if name.split(".")[0] == "apache_beam"))
        """,
        tmp_path,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_command_starts_without_asyncio_until_a_command_needs_it(tmp_path: Path) -> None:
    """`beam-agents --help` is timed: the event loop's import is a tenth of its start."""
    done = _python(
        """
        import sys
        import beam_agents.cli
        print("asyncio" in sys.modules)
        """,
        tmp_path,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_provision_migrate_and_inspect_never_import_apache_beam(tmp_path: Path) -> None:
    done = _python(
        """
        import asyncio, sys
        from beam_agents.cli import main
        from beam_agents.memory.stores import MemoryRecord, open_store

        source, target = "sqlite+aiosqlite:///a.db", "sqlite+aiosqlite:///b.db"
        assert main(["provision", source]) == 0
        assert main(["provision", target]) == 0

        async def fill():
            store = open_store(source)
            await store.upsert(b"e", MemoryRecord("k", b"v", 1, 0))
            await store.close()

        asyncio.run(fill())
        assert main(["migrate-store", source, target]) == 0
        assert main(["inspect", target, "--entity", "e"]) == 0
        assert main(["--help"]) == 0
        print(sorted(name for name in sys.modules if name.split(".")[0] == "apache_beam"))
        """,
        tmp_path,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert "1 row(s) of entity b'e'" in done.stdout


def test_the_command_prints_its_version(tmp_path: Path) -> None:
    done = _python("from beam_agents.cli import main; main(['--version'])", tmp_path)

    assert done.stdout.startswith("beam-agents 0.1.0")


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_public_name_of_a_lazy_package_resolves_and_is_listed(package: str) -> None:
    module = importlib.import_module(package)

    for name in module.__all__:
        assert getattr(module, name) is not None
        assert name in dir(module)
    with pytest.raises(AttributeError, match="no attribute 'NotAName'"):
        _ = module.NotAName


def test_a_lazy_name_is_the_object_its_module_defines() -> None:
    import beam_agents
    from beam_agents.runtime.transform import RunAgent

    assert beam_agents.RunAgent is RunAgent


def test_importing_the_tools_package_loads_no_client_or_beam(tmp_path: Path) -> None:
    """Handlers are configured where the pipeline is built; what they use loads on first call."""
    result = _python(
        """
        import sys
        import beam_agents.tools as tools
        tools.ToolCall, tools.open_ledger, tools.HttpWebhook, tools.McpTools
        heavy = {"apache_beam", "aiohttp", "mcp", "google.cloud.pubsub_v1", "sqlalchemy"}
        print(sorted(heavy & set(sys.modules)))
        """,
        Path(__file__).resolve().parents[1],
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
