"""`PubSubPublish` against the Pub/Sub emulator."""

from __future__ import annotations

import asyncio
import json
import pickle
import uuid

import pytest
from google.cloud import pubsub_v1

from beam_agents.errors import ConfigurationError
from beam_agents.tools import ToolCall, ToolCallError
from beam_agents.tools.pubsub import PubSubPublish

PROJECT = "test-project"


def test_publish_sends_the_call_with_its_intent_id_attribute(pubsub_emulator_host: str) -> None:
    suffix = uuid.uuid4().hex
    publisher = pubsub_v1.PublisherClient()
    subscriber = pubsub_v1.SubscriberClient()
    topic = publisher.topic_path(PROJECT, f"tools-{suffix}")
    subscription = subscriber.subscription_path(PROJECT, f"tools-sub-{suffix}")
    publisher.create_topic(name=topic)
    subscriber.create_subscription(name=subscription, topic=topic)
    handler = pickle.loads(pickle.dumps(PubSubPublish(topic)))
    call = ToolCall(str(uuid.uuid4()), "page_oncall", b"svc-1", {"team": "db"})

    async def publish() -> bytes:
        try:
            return await handler(call)
        finally:
            await handler.aclose()

    message_id = asyncio.run(publish())
    pulled = subscriber.pull(subscription=subscription, max_messages=10, timeout=30)
    (received,) = pulled.received_messages
    assert received.message.message_id == message_id.decode()
    assert received.message.attributes["intent_id"] == call.intent_id
    assert received.message.attributes["tool"] == "page_oncall"
    assert json.loads(received.message.data)["args"] == {"team": "db"}
    subscriber.close()


def test_publish_to_a_missing_topic_is_a_tool_call_error(pubsub_emulator_host: str) -> None:
    handler = PubSubPublish(f"projects/{PROJECT}/topics/missing-{uuid.uuid4().hex}", timeout_s=10)
    call = ToolCall(str(uuid.uuid4()), "page_oncall", b"svc-1", {})

    async def publish() -> bytes:
        try:
            return await handler(call)
        finally:
            await handler.aclose()

    with pytest.raises(ToolCallError, match="publishing to projects/"):
        asyncio.run(publish())


@pytest.mark.parametrize("topic", ["alerts", "projects/p/topics/", "projects/p/subscriptions/s"])
def test_a_topic_that_is_not_a_full_name_is_refused(topic: str) -> None:
    with pytest.raises(ConfigurationError, match=r"PubSubPublish\.topic"):
        PubSubPublish(topic)
