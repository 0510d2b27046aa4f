"""AgentConfig validates at construction, naming the field."""

from __future__ import annotations

import math

import pytest

from beam_agents import AgentConfig, Complete, RunAgent
from beam_agents.memory import DropOldestCompactor, SummarizeCompactor
from tests.runtime import agents


def test_defaults_are_the_documented_ones() -> None:
    config = AgentConfig()

    assert config.ttl_ms == 3_600_000
    assert config.compactor == DropOldestCompactor()
    assert config.provider_factory is None
    assert (config.suspended_event_buffer, config.suspended_buffer_bytes) == (64, 262_144)
    assert config.max_inflight_calls == 256


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"ttl_ms": 0}, "AgentConfig.ttl_ms"),
        ({"ttl_ms": -5}, "AgentConfig.ttl_ms"),
        ({"ttl_ms": 1.5}, "AgentConfig.ttl_ms"),
        ({"hitl_timeout_ms": 0}, "AgentConfig.hitl_timeout_ms"),
        ({"activation_timeout_s": 0}, "AgentConfig.activation_timeout_s"),
        ({"activation_timeout_s": math.inf}, "AgentConfig.activation_timeout_s"),
        ({"activation_timeout_s": "60"}, "AgentConfig.activation_timeout_s"),
        ({"longterm_timeout_s": -1.0}, "AgentConfig.longterm_timeout_s"),
        ({"provider_factory": "openai"}, "AgentConfig.provider_factory"),
        ({"compactor": object()}, "AgentConfig.compactor"),
        ({"suspended_event_buffer": -1}, "AgentConfig.suspended_event_buffer"),
        ({"suspended_event_buffer": True}, "AgentConfig.suspended_event_buffer"),
        ({"suspended_event_buffer": 2.0}, "AgentConfig.suspended_event_buffer"),
        ({"suspended_buffer_bytes": 0}, "AgentConfig.suspended_buffer_bytes"),
        ({"suspended_buffer_bytes": "256k"}, "AgentConfig.suspended_buffer_bytes"),
        ({"max_inflight_calls": 0}, "AgentConfig.max_inflight_calls"),
        ({"max_inflight_calls": 2.5}, "AgentConfig.max_inflight_calls"),
    ],
)
def test_invalid_configuration_fails_at_construction_naming_the_field(
    kwargs: dict[str, object], field: str
) -> None:
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        AgentConfig(**kwargs)  # type: ignore[arg-type]


def test_a_zero_event_buffer_is_valid_and_turns_buffering_off() -> None:
    assert AgentConfig(suspended_event_buffer=0).suspended_event_buffer == 0


def test_run_agent_refuses_a_synchronous_agent() -> None:
    def not_async(ctx: object) -> Complete:
        return Complete(b"")

    with pytest.raises(TypeError, match="async"):
        RunAgent(not_async, AgentConfig())  # type: ignore[arg-type]


def test_longterm_memory_is_validated_at_construction() -> None:
    with pytest.raises(ValueError, match=r"AgentConfig\.longterm_memory"):
        AgentConfig(longterm_memory="redsi://localhost:6379")


def test_on_expire_without_longterm_memory_fails_at_construction() -> None:
    from beam_agents import FlushToLongterm

    with pytest.raises(ValueError, match=r"AgentConfig\.on_expire"):
        AgentConfig(on_expire=FlushToLongterm())


def test_a_store_password_never_reaches_the_config_or_its_error() -> None:
    """A URI with a password would be pickled into the job graph: it is refused, unechoed."""
    with pytest.raises(ValueError, match=r"AgentConfig\.longterm_memory") as refused:
        AgentConfig(longterm_memory="postgresql+asyncpg://app:s3cret-pw@127.0.0.1:5432/db")

    assert "s3cret-pw" not in str(refused.value)
    assert "app:***@" in str(refused.value)


@pytest.mark.parametrize(
    "uri",
    [
        "sqlite+aiosqlite://",
        "sqlite+aiosqlite:///:memory:",
        "sqlite+aiosqlite:///file::memory:?uri=true",
        "sqlite+aiosqlite:///shared?mode=memory&cache=shared",
    ],
)
def test_an_in_memory_sqlite_longterm_memory_is_refused_with_the_reason(uri: str) -> None:
    from beam_agents.memory.stores import InvalidStoreURIError

    with pytest.raises(InvalidStoreURIError, match="in-memory SQLite database") as caught:
        AgentConfig(longterm_memory=uri)

    assert caught.value.field == "AgentConfig.longterm_memory"
    assert "each DoFn instance of the pipeline would open its own empty" in str(caught.value)


def test_a_sqlite_file_longterm_memory_is_accepted() -> None:
    assert AgentConfig(longterm_memory="sqlite+aiosqlite:///agent.db").longterm_memory


def test_a_summarizer_passed_as_compactor_is_refused_saying_where_it_belongs() -> None:
    summarizer = SummarizeCompactor(
        build_request=agents.summary_request,
        extract_summary=agents.summary_of,
        source_keys=("log",),
    )
    with pytest.raises(ValueError, match=r"pass it as AgentConfig\.summarizer"):
        AgentConfig(compactor=summarizer)  # type: ignore[arg-type]


def test_a_compactor_passed_as_summarizer_is_refused_saying_where_it_belongs() -> None:
    with pytest.raises(ValueError, match=r"pass it as AgentConfig\.compactor"):
        AgentConfig(summarizer=DropOldestCompactor())  # type: ignore[arg-type]
