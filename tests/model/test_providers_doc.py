"""The provider written in docs/providers.md runs as written, named by a `py:` spec."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest
from beam_agents.model import provider_from_spec
from beam_agents.testing.streaming import Script, run_script

DOC = Path(__file__).parents[2] / "docs" / "providers.md"


@pytest.fixture
def my_provider_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The doc's `my_provider.py`, importable the way a user's own module would be."""
    blocks = re.findall(r"```python\n(# my_provider\.py\n.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 1, "docs/providers.md must hold exactly one my_provider.py block"
    (tmp_path / "my_provider.py").write_text(blocks[0])
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("my_provider", None)


async def triage(ctx: ActivationContext) -> Complete:
    answer = await ctx.call_model(LlmRequest(model_id="any", messages=[ctx.event.decode()]))
    return Complete(answer.response)


@pytest.mark.pipeline
def test_the_documented_provider_answers_in_a_pipeline(
    my_provider_module: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAGE_KEYWORDS", "disk full, Kernel Panic")
    config = AgentConfig(provider_factory=provider_from_spec("py:my_provider:make_provider"))
    script = Script().events(
        ("db-3", b"Disk full on /var", 1_000),
        ("web-1", b"cpu idle", 1_000),
        ("db-4", b"kernel panic at boot", 2_000),
    )

    run = run_script(triage, config, script)

    assert sorted(run.outputs) == [
        (b"db-3", b"page"),
        (b"db-4", b"page"),
        (b"web-1", b"ignore"),
    ]
    assert run.errors == []
