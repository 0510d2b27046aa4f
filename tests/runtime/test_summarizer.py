"""Tier-2 compaction: SummarizeCompactor through replay-cached model calls."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from beam_agents import AgentConfig, LlmRequest, intent_id
from beam_agents.memory import SummarizeCompactor
from beam_agents.model import FakeLLM
from beam_agents.testing.chaos import fail_commit_once
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime import agents

pytestmark = pytest.mark.pipeline

# Each event is 8 bytes (9 encoded in the ring): the seventh event takes the
# staged memory to 64 bytes, past a 60-byte trigger.
TRIGGER = 60


def _summarizer(
    build: Callable[[tuple[bytes, ...], bytes | None], LlmRequest] = agents.summary_request,
    extract: Callable[[bytes], bytes] = agents.summary_of,
) -> SummarizeCompactor:
    return SummarizeCompactor(
        build_request=build,
        extract_summary=extract,
        source_keys=("log",),
        keep_recent=2,
        trigger_bytes=TRIGGER,
    )


def _provider(name: str) -> FakeLLM:
    provider = FakeLLM(name=name, default=b"S{n}")
    provider.reset()
    return provider


def _events(n: int, key: str = "k") -> Script:
    script = Script()
    for i in range(n):
        t = 1_000 * (i + 1)
        script.events((key, b"event-%02d" % i, t)).watermark(t + 1)
    return script


def _run(n: int, provider: FakeLLM, summarizer: SummarizeCompactor) -> StreamRun:
    config = AgentConfig(provider_factory=provider, summarizer=summarizer)
    return run_script(agents.log_events, config, _events(n))


def test_no_summary_below_the_trigger() -> None:
    provider = _provider("sum-below")

    run = _run(6, provider, _summarizer())

    assert provider.call_count() == 0
    assert run.outputs[-1] == (b"k", b"6:6:-")


def test_a_trigger_folds_old_items_and_keeps_the_newest_keep_recent() -> None:
    provider = _provider("sum-trigger")

    run = _run(8, provider, _summarizer())

    # The agent sees memory before the summarizer runs; the next event sees the fold.
    assert [o for _, o in run.outputs][-2:] == [b"7:7:-", b"8:3:S1"]
    (request,) = provider.calls()
    assert request.messages == [
        {"prior": "", "items": [f"event-{i:02d}" for i in range(5)]},
    ]
    assert run.counter("beam_agents.runtime", "summarizations") == 1


def test_the_summary_accumulates_across_triggers() -> None:
    provider = _provider("sum-accumulate")

    run = _run(14, provider, _summarizer())

    _, second = provider.calls()
    assert second.messages[0]["prior"] == "S1"  # type: ignore[index]
    assert second.messages[0]["items"][0] == "event-05"  # type: ignore[index]
    assert run.outputs[-1] == (b"k", b"14:4:S2")


def test_a_summary_that_does_not_shrink_fails_closed() -> None:
    provider = _provider("sum-bloated")

    run = _run(8, provider, _summarizer(extract=agents.bloated_summary))

    assert run.reasons() == ["summarizer_error", "summarizer_error"]
    assert "not smaller" in run.errors[0].detail
    # Nothing committed: the eighth event still sees six items, not a fold.
    assert run.outputs[-1] == (b"k", b"6:6:-")


def test_a_raising_extract_summary_fails_closed() -> None:
    provider = _provider("sum-broken")

    run = _run(7, provider, _summarizer(extract=agents.broken_summary))

    assert run.reasons() == ["summarizer_error"]
    assert "cannot parse the summary" in run.errors[0].detail
    assert run.errors[0].payload == b"event-06"
    assert run.outputs[-1] == (b"k", b"6:6:-")


def test_a_retried_activation_makes_no_extra_summarizer_call() -> None:
    clean_provider = _provider("sum-retry-clean")
    clean = _run(8, clean_provider, _summarizer())

    faulty_provider = _provider("sum-retry-faulty")
    with fail_commit_once(b"k", 7) as fault:
        faulty = _run(8, faulty_provider, _summarizer())

    assert fault.fired == [(b"k", 7)]
    assert faulty.outputs == clean.outputs
    assert faulty_provider.call_count() == clean_provider.call_count() == 1


def test_a_resumed_activation_makes_no_extra_summarizer_call() -> None:
    provider = _provider("sum-resume")
    script = _events(6)
    script.events(("k", b"ask-0007", 10_000)).watermark(11_000)
    script.answers(("k", intent_id(b"k", 7, 0), b"yes", 12_000))
    config = AgentConfig(provider_factory=provider, summarizer=_summarizer())

    run = run_script(agents.log_then_approve, config, script, clock_ms=agents.clock_at_zero)

    assert run.outputs[-1] == (b"k", b"7:-")  # the agent saw memory before the fold
    assert provider.call_count() == 1  # summarized once, on the resumed completion


def test_an_impure_build_request_is_caught_by_the_retry_gate() -> None:
    """The re-run asks a different question, misses the cache and calls the provider again:
    the extra call is what the determinism check sees."""
    summarizer = _summarizer(build=agents.impure_summary_request)
    clean_provider = _provider("sum-impure-clean")
    clean = _run(8, clean_provider, summarizer)

    faulty_provider = _provider("sum-impure-faulty")
    with fail_commit_once(b"k", 7):
        faulty = _run(8, faulty_provider, summarizer)

    assert faulty_provider.call_count() == clean_provider.call_count() + 1
    assert faulty.outputs != clean.outputs


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"source_keys": ()}, "source_keys"),
        ({"source_keys": "log"}, "source_keys"),
        ({"summary_key": "log"}, "summary_key"),
        ({"keep_recent": -1}, "keep_recent"),
        ({"trigger_bytes": 0}, "trigger_bytes"),
        ({"build_request": "prompt"}, "build_request"),
    ],
)
def test_invalid_summarizer_configuration_names_the_field(
    kwargs: dict[str, object], field: str
) -> None:
    base: dict[str, object] = {
        "build_request": agents.summary_request,
        "extract_summary": agents.summary_of,
        "source_keys": ("log",),
    }
    with pytest.raises(ValueError, match=field):
        SummarizeCompactor(**{**base, **kwargs})  # type: ignore[arg-type]
