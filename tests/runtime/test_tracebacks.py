"""Failed activations carry the agent's own frames, and each dead letter is logged once."""

from __future__ import annotations

import logging
import re
import uuid

import pytest

from beam_agents import ActivationError, AgentConfig
from beam_agents.memory import SummarizeCompactor
from beam_agents.model import FakeLLM
from beam_agents.runtime._tracebacks import (
    MAX_FRAMES,
    DeadLetterLog,
    dead_letter_log,
    describe_exception,
)
from beam_agents.testing.chaos import fail_store_reads, fail_store_writes
from beam_agents.testing.streaming import Script, run_script
from tests.runtime import agents

LOGGER = "beam_agents.runtime.dead_letters"
FRAME = re.compile(r"^  (?P<path>\S+):(?P<line>\d+) in (?P<function>\S+)$", re.M)


@pytest.fixture(autouse=True)
def _fresh_dead_letter_log() -> None:
    """Earlier tests in the session may have used up a reason's logging budget."""
    dead_letter_log.reset()


def _one_event(event: bytes = b"boom") -> Script:
    return Script().events(("k", event, 1_000))


def _frames(detail: str) -> list[tuple[str, str]]:
    return [(m["path"], m["function"]) for m in FRAME.finditer(detail)]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


@pytest.mark.pipeline
def test_an_agent_exception_carries_its_type_message_and_the_agents_frames(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)

    run = run_script(agents.explode_on_boom, AgentConfig(), _one_event())

    (error,) = run.errors
    assert error.reason == "activation_error"
    head, title, *_ = error.detail.splitlines()
    assert head == "RuntimeError: agent failed on purpose"
    assert title == "Traceback (agent frames, innermost last):"
    assert _frames(error.detail) == [("tests/runtime/agents.py", "explode_on_boom")]
    (logged,) = _warnings(caplog)
    assert "activation_error" in logged.getMessage()
    assert "agents.py" in logged.getMessage()
    assert "in explode_on_boom" in logged.getMessage()


@pytest.mark.pipeline
def test_a_model_error_shows_the_agent_frame_that_called_the_model(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    provider = FakeLLM(name=f"fails-{uuid.uuid4().hex}", fail_first=1)
    provider.reset()

    run = run_script(agents.ask_model, AgentConfig(provider_factory=provider), _one_event())

    (error,) = run.errors
    assert error.reason == "model_error"
    assert error.detail.startswith("ModelCallError: ")
    assert _frames(error.detail)[-1] == ("tests/runtime/agents.py", "ask_model")
    assert len(_warnings(caplog)) == 1


@pytest.mark.pipeline
def test_a_model_error_follows_the_cause_into_a_user_written_provider() -> None:
    config = AgentConfig(provider_factory=agents.misconfigured_provider)

    run = run_script(agents.ask_model, config, _one_event())

    (error,) = run.errors
    assert error.reason == "model_error"
    assert error.detail.startswith("ModelCallError: KeyError: 'choices'\n")
    assert _frames(error.detail) == [
        ("tests/runtime/agents.py", "ask_model"),
        ("tests/runtime/agents.py", "complete"),
        ("tests/runtime/agents.py", "_body"),
    ]


@pytest.mark.pipeline
def test_a_summarizer_error_shows_the_users_extract_function() -> None:
    provider = FakeLLM(name=f"sum-{uuid.uuid4().hex}", default=b"S")
    provider.reset()
    summarizer = SummarizeCompactor(
        build_request=agents.summary_request,
        extract_summary=agents.broken_summary,
        source_keys=("log",),
        keep_recent=1,
        trigger_bytes=10,
    )
    config = AgentConfig(provider_factory=provider, summarizer=summarizer)
    script = Script().events(("k", b"event-01", 1_000), ("k", b"event-02", 2_000))

    run = run_script(agents.log_events, config, script)

    error = run.errors[0]
    assert error.reason == "summarizer_error"
    assert error.detail.startswith("summarizer: ValueError: cannot parse the summary\n")
    assert _frames(error.detail)[-1] == ("tests/runtime/agents.py", "broken_summary")


@pytest.mark.pipeline
def test_longterm_failures_carry_a_traceback() -> None:
    uri = f"memory://tracebacks-{uuid.uuid4().hex}"
    config = AgentConfig(longterm_memory=uri)

    with fail_store_reads(b"k", times=1):
        read = run_script(agents.load_profile, config, _one_event())
    with fail_store_writes(b"k", times=1):
        flush = run_script(agents.save_case, config, _one_event(b"x"))

    (read_error,) = read.errors
    assert read_error.reason == "longterm_read_failed"
    assert read_error.detail.startswith("LongtermReadError: long-term load 'profile' failed")
    assert _frames(read_error.detail)[-1] == ("tests/runtime/agents.py", "load_profile")
    (flush_error,) = flush.errors
    assert flush_error.reason == "longterm_flush_failed"
    # No agent code runs in the flush: the innermost frames are shown, marked as such.
    assert "Traceback (innermost frames, no agent code involved):" in flush_error.detail
    assert _frames(flush_error.detail)


@pytest.mark.pipeline
def test_credentials_never_reach_the_detail_or_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)

    run = run_script(agents.leak_a_password, AgentConfig(), _one_event())

    (error,) = run.errors
    assert "hunter2" not in error.detail
    assert "redis://app:***@127.0.0.1:1/0" in error.detail
    assert _frames(error.detail) == [("tests/runtime/agents.py", "leak_a_password")]
    assert "hunter2" not in caplog.text
    assert len(_warnings(caplog)) == 1


def test_a_password_cut_by_the_message_bound_is_still_scrubbed() -> None:
    """The message is scrubbed before it is bounded, so no prefix of a password survives."""
    padding = "x" * 780
    exc = RuntimeError(f"{padding} redis://app:hunter2hunter2@127.0.0.1:1/0")

    detail = describe_exception(exc)

    assert "hunter" not in detail
    assert detail.startswith(f"RuntimeError: {padding} redis://app:***@")


@pytest.mark.pipeline
def test_a_deep_traceback_is_bounded_to_the_innermost_frames() -> None:
    run = run_script(agents.deep_failure, AgentConfig(), _one_event())

    (error,) = run.errors
    frames = _frames(error.detail)
    assert len(frames) == MAX_FRAMES
    assert frames[-1] == ("tests/runtime/agents.py", "_descend")
    assert "outer frame(s) omitted" in error.detail


def test_dead_letters_are_rate_limited_per_reason(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    now = [0.0]
    log = DeadLetterLog(per_window=2, window_s=60.0, clock=lambda: now[0])
    poison = ActivationError.of(b"k", "invalid_event", "bad", 1)
    other = ActivationError.of(b"k", "activation_error", "RuntimeError: x", 1)

    first_window = [log.record(poison) for _ in range(5)] + [log.record(other)]
    now[0] = 61.0
    second_window = [log.record(poison)]

    assert first_window == [True, True, False, False, False, True]
    assert second_window == [True]
    messages = [r.getMessage() for r in _warnings(caplog)]
    assert len(messages) == 4
    assert "3 more invalid_event dead letter(s) were not logged in the last 60 s" in messages[-1]
