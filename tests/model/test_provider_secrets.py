"""Where a provider's key comes from, and how a missing one fails on the worker."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.auth.compute_engine import _metadata

from beam_agents.errors import ConfigurationError
from beam_agents.model import GeminiProvider, OpenAICompatibleProvider, provider_from_spec

SECRET = "projects/p/secrets/model-key/versions/1"


@pytest.fixture
def no_google_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ADC anywhere, and the metadata server looked for on a dead loopback port."""
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    # google-auth reads NO_GCE_CHECK once, at import; an earlier test may have imported it.
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    monkeypatch.setattr(_metadata, "_NO_GCE_CHECK", True)


@pytest.mark.parametrize("provider", [OpenAICompatibleProvider, GeminiProvider])
def test_an_unreadable_secret_fails_at_construction_naming_the_secret(
    provider: type[OpenAICompatibleProvider] | type[GeminiProvider], no_google_credentials: None
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        provider("some-model", api_key_secret=SECRET)
    assert raised.value.field == "api_key_secret"
    assert f"cannot read {SECRET}" in str(raised.value)


def test_an_empty_variable_counts_as_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BEAM_AGENTS_TEST_EMPTY_KEY", "  ")
    with pytest.raises(ConfigurationError, match="BEAM_AGENTS_TEST_EMPTY_KEY is not set or empty"):
        OpenAICompatibleProvider("m", api_key_env="BEAM_AGENTS_TEST_EMPTY_KEY")


def test_a_spec_factory_reads_the_key_only_when_called(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parsing never touches the key, so a launcher without it can still build the pipeline."""
    monkeypatch.delenv("BEAM_AGENTS_TEST_LATE_KEY", raising=False)
    factory = provider_from_spec("openai:m?api_key_env=BEAM_AGENTS_TEST_LATE_KEY")
    with pytest.raises(ConfigurationError, match="BEAM_AGENTS_TEST_LATE_KEY"):
        factory()
    monkeypatch.setenv("BEAM_AGENTS_TEST_LATE_KEY", "sk-late")
    assert isinstance(factory(), OpenAICompatibleProvider)
