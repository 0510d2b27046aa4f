"""A deployed job as source and sink: its subscriptions mirrored, answers published (emulator)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from beam_agents.answer_signing import open_answer
from beam_agents.console.pubsub import OUTPUTS, PubSubMirror
from beam_agents.errors import ConfigurationError
from tests.console.conftest import Served, approval

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
PROJECT = "console-test"
SIGNING_KEY = b"console-pubsub-signing-key-0123456789"


@pytest.fixture
def streams(pubsub_emulator_host: str) -> str:
    """Topics `PREFIX-NAME` with same-named subscriptions for every output, plus answers."""
    from google.cloud import pubsub_v1

    prefix = f"t{uuid.uuid4().hex[:8]}"
    publisher, subscriber = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
    for name in (*OUTPUTS, "answers"):
        topic = publisher.create_topic(name=f"projects/{PROJECT}/topics/{prefix}-{name}").name
        subscriber.create_subscription(
            name=f"projects/{PROJECT}/subscriptions/{prefix}-{name}", topic=topic
        )
    subscriber.close()
    return prefix


def _publish(prefix: str, name: str, record: dict[str, Any]) -> None:
    from google.cloud import pubsub_v1

    topic = f"projects/{PROJECT}/topics/{prefix}-{name}"
    pubsub_v1.PublisherClient().publish(topic, json.dumps(record).encode()).result(timeout=30)


def _pull(prefix: str, name: str) -> list[Any]:
    from google.cloud import pubsub_v1

    subscriber = pubsub_v1.SubscriberClient()
    subscription = f"projects/{PROJECT}/subscriptions/{prefix}-{name}"
    response = subscriber.pull(subscription=subscription, max_messages=10, timeout=10)
    messages = [m.message for m in response.received_messages]
    if response.received_messages:
        subscriber.acknowledge(
            subscription=subscription, ack_ids=[m.ack_id for m in response.received_messages]
        )
    subscriber.close()
    return messages


def _wait(found: Callable[[], Any], timeout_s: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := found():
            return value
        time.sleep(0.25)
    raise AssertionError("timed out")


def test_an_approval_from_the_subscriptions_is_answered_on_the_topic(
    streams: str, serve: Callable[..., Served], page: Any, tmp_path: Path
) -> None:
    spool = tmp_path / "spool"
    mirror = PubSubMirror(f"pubsub://{PROJECT}/{streams}-{{name}}", spool, interval_s=0.2)
    mirror.start()
    try:
        _publish(streams, "intents", approval("svc-7", "svc-7-0001", "db unreachable", "i-7"))
        _wait(lambda: (spool / "intents.jsonl").exists())
        sink = f"pubsub://{PROJECT}/{streams}-answers"
        served = serve(source=spool, answers_topic=sink, answer_signing_key=SIGNING_KEY)

        page.goto(f"{served.url}/approvals")
        page.locator("#approval-i-7 input[name=approver]").fill("Ada")
        page.locator("#approval-i-7 button[value=approve]").click()
        page.wait_for_url(f"{served.url}/approvals?answered=*")
        [message] = _wait(lambda: _pull(streams, "answers"))
    finally:
        mirror.stop.set()

    assert message.attributes["service"] == "svc-7"
    body = json.loads(message.data)
    assert (body["intent_id"], body["answer"], body["approver"]) == ("i-7", "approve", "Ada")
    # Signed: the message itself is the answer a pipeline holding the key resumes on.
    now_ms = int(time.time() * 1000)
    assert open_answer(SIGNING_KEY, b"svc-7", "i-7", message.data, now_ms=now_ms).approver == "Ada"
    assert (
        page.locator("#settled tr[data-intent=i-7] .outcome").inner_text()
        == "answered, awaiting the pipeline"
    )


@pytest.mark.parametrize(
    "address", ["pubsub://only-project", "gs://p/s", "pubsub://p/a/b", "pubsub://p/no-template"]
)
def test_a_malformed_pubsub_source_is_refused(address: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="SOURCE"):
        PubSubMirror(address, tmp_path)


def test_the_command_serves_a_deployed_jobs_subscriptions(
    streams: str, pubsub_emulator_host: str, tmp_path: Path
) -> None:
    import os
    import subprocess
    import sys

    import httpx

    from beam_agents.testing.services import free_port

    port, spool = free_port(), tmp_path / "spool"
    source, sink = f"pubsub://{PROJECT}/{streams}-{{name}}", f"pubsub://{PROJECT}/{streams}-answers"
    command = [sys.executable, "-m", "beam_agents.cli", "console", source, "--answers", sink]
    process = subprocess.Popen(
        [*command, "--port", str(port), "--spool", str(spool), "--no-token"],
        env={**os.environ, "PUBSUB_EMULATOR_HOST": pubsub_emulator_host},
        stderr=subprocess.PIPE,
    )
    try:
        _publish(streams, "intents", approval("svc-8", "svc-8-0001", "outage", "i-8"))

        def approvals() -> str | None:
            try:
                text = httpx.get(f"http://127.0.0.1:{port}/approvals").text
            except httpx.TransportError:
                return None
            return text if "approval-i-8" in text else None

        assert "svc-8-0001" in _wait(approvals, timeout_s=60)
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert f"mirroring {source} into {spool}" in stderr.decode()
