"""An evaluation touches nothing a production job shares: here, the fleet rate limiter's Redis."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest
import redis

from beam_agents import RateLimit
from beam_agents.eval import Candidate, run_eval
from beam_agents.eval.candidates import eval_config
from beam_agents.eval.recording import RecordingProvider
from beam_agents.model.flow._fleet_limiter import KEY_PREFIX
from tests.eval import agents
from tests.eval.logs import write_log


def _limiter_keys(client: redis.Redis) -> set[bytes]:
    return set(client.scan_iter(match=f"{KEY_PREFIX}*"))


def test_an_eval_of_a_fleet_limited_config_writes_no_key_of_the_limiter(
    tmp_path: Path, redis_url: str
) -> None:
    """New requests (first run) and recorded ones (second run) alike leave the Redis untouched."""
    key = f"eval-{uuid.uuid4().hex}"
    limit = RateLimit(requests_per_minute=600, scope=redis_url, key=key, fallback_share=0.5)
    config = dataclasses.replace(agents.CONFIG, rate_limit=limit)
    write_log(tmp_path)
    client = redis.Redis.from_url(redis_url)
    try:
        before = _limiter_keys(client)
        for out in ("recording", "recorded"):
            run_eval(
                tmp_path / "events.jsonl",
                [Candidate("prod", agents.triage_v1, config)],
                recording=tmp_path / "recording.jsonl",
                out_dir=tmp_path / out,
            )
        written = _limiter_keys(client) - before
    finally:
        client.close()
    assert agents.MODEL.call_count() == 5  # the first run's new requests did reach the provider
    assert written == set()


@pytest.mark.parametrize("scope", ["redis://10.0.0.3:6379/0", "process"])
def test_an_eval_paces_only_new_requests_on_a_schedule_of_its_own(scope: str) -> None:
    """A recorded answer waits for no slot; a new request waits on a per-process schedule."""
    limit = RateLimit(requests_per_minute=600, scope=scope, key="gpt", fallback_share=0.25)
    config = dataclasses.replace(agents.CONFIG, rate_limit=limit)

    swapped = eval_config(config, token="t", recording="r.jsonl", tools="record", stubs={})

    provider = swapped.provider_factory
    assert swapped.rate_limit is None
    assert isinstance(provider, RecordingProvider)
    assert provider.rate_limit is not None
    assert not provider.rate_limit.shared
    expected = 150 if limit.shared else 600
    assert provider.rate_limit.requests_per_minute == expected
    assert provider.rate_limit.max_hold_s == limit.max_hold_s
