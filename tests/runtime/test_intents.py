"""Intents: emitted only on commit, with ids an external system can recompute."""

from __future__ import annotations

import json
import uuid

import pytest

from beam_agents import AgentConfig, intent_id
from beam_agents.runtime.intents import INTENT_NAMESPACE
from beam_agents.testing.streaming import Script, run_script
from tests.runtime import agents


def test_intent_ids_are_uuid5_of_entity_seq_and_index() -> None:
    expected = uuid.uuid5(INTENT_NAMESPACE, f"{b'ticket-17'.hex()}/3/0")

    assert intent_id(b"ticket-17", 3, 0) == str(expected)
    assert intent_id(b"ticket-17", 3, 0) == intent_id(b"ticket-17", 3, 0)
    ids = {
        intent_id(b"a", 1, 0),
        intent_id(b"a", 1, 1),
        intent_id(b"a", 2, 0),
        intent_id(b"b", 1, 0),
    }
    assert len(ids) == 4
    with pytest.raises(TypeError):
        intent_id("ticket-17", 3, 0)  # type: ignore[arg-type]


@pytest.mark.pipeline
def test_intents_are_emitted_only_when_the_activation_commits() -> None:
    script = Script().events(("k", b"ok", 1_000)).watermark(2_000).events(("k", b"boom", 3_000))

    run = run_script(agents.explode_on_boom, AgentConfig(), script)

    (intent,) = run.intents
    assert (intent.entity_key, intent.seq, intent.index, intent.tool) == (b"k", 1, 0, "notify")
    assert intent.intent_id == intent_id(b"k", 1, 0)
    assert json.loads(intent.args_json) == {"event": "ok"}
    assert intent.event_time_ms == 1_000
