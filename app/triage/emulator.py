"""The triage app's Pub/Sub streams on the local emulator: create them, feed them, read them.

`python -m app.triage emulator-setup` creates the topics a deployment has
(`triage-alerts`, `triage-answers`, `triage-outputs`, `triage-intents`,
`triage-errors`, `triage-lifecycle`), each with a subscription of the same
name: the pipeline reads the first two, you read the others.
`publish-sample` publishes a few of the bundled alerts, stamped with the
current time as their `event_time` attribute. `pull NAME` prints what the
pipeline published on one of its topics, one JSON record per line.

Every command refuses to run unless `PUBSUB_EMULATOR_HOST` is set: they are
for the emulator, never a real project.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Final, TypeVar

from app.triage.alerts import Alert, read_alerts
from app.triage.data import DATA_DIR

__all__ = [
    "INPUTS",
    "OUTPUTS",
    "PROJECT",
    "EmulatorError",
    "publish_sample",
    "pull",
    "setup",
    "subscription",
    "topic",
]

PROJECT: Final = "local-dev"
"""The project id the local walk uses (the emulator accepts any)."""
INPUTS: Final = ("alerts", "answers")
OUTPUTS: Final = ("outputs", "intents", "errors", "lifecycle")
_READY_TIMEOUT_S: Final = 30.0
T = TypeVar("T")


class EmulatorError(RuntimeError):
    """The emulator is not configured or not answering."""


def topic(name: str, project: str = PROJECT) -> str:
    """`projects/P/topics/triage-NAME`."""
    return f"projects/{project}/topics/triage-{name}"


def subscription(name: str, project: str = PROJECT) -> str:
    """`projects/P/subscriptions/triage-NAME`."""
    return f"projects/{project}/subscriptions/triage-{name}"


def _emulator_host() -> str:
    host = os.environ.get("PUBSUB_EMULATOR_HOST", "")
    if not host:
        raise EmulatorError(
            "PUBSUB_EMULATOR_HOST is not set: these commands only talk to the local "
            "emulator (export PUBSUB_EMULATOR_HOST=127.0.0.1:8085)"
        )
    return host


def _when_ready(call: Callable[[], T]) -> T:
    """Retry `call` while the emulator is still starting (it takes a few seconds)."""
    from google.api_core import exceptions

    deadline = time.monotonic() + _READY_TIMEOUT_S
    while True:
        try:
            return call()
        except (exceptions.ServiceUnavailable, exceptions.RetryError) as exc:
            if time.monotonic() > deadline:
                raise EmulatorError(
                    f"the Pub/Sub emulator at {_emulator_host()} did not answer: {exc}"
                ) from None
            time.sleep(0.5)


def setup(project: str = PROJECT) -> list[str]:
    """Create every topic with its subscription; existing ones are kept. Returns what exists."""
    import google.cloud.pubsub_v1 as pubsub_v1
    from google.api_core.exceptions import AlreadyExists

    _emulator_host()
    publisher, subscriber = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
    created = []
    for name in (*INPUTS, *OUTPUTS):
        with contextlib.suppress(AlreadyExists):
            _when_ready(partial(publisher.create_topic, name=topic(name, project)))
        with contextlib.suppress(AlreadyExists):
            subscriber.create_subscription(
                name=subscription(name, project), topic=topic(name, project)
            )
        created.append(subscription(name, project))
    subscriber.close()
    return created


def sample_alerts(count: int, now_ms: int) -> list[Alert]:
    """The first `count` bundled alerts, one second apart, the last one at `now_ms`."""
    alerts = read_alerts(DATA_DIR / "alerts.jsonl")[:count]
    return [
        replace(alert, event_time_ms=now_ms - (len(alerts) - 1 - i) * 1000)
        for i, alert in enumerate(alerts)
    ]


def publish_sample(count: int, project: str = PROJECT) -> list[Alert]:
    """Publish sample alerts with the attributes a real source sets (`service`, `event_time`)."""
    import google.cloud.pubsub_v1 as pubsub_v1

    _emulator_host()
    publisher = pubsub_v1.PublisherClient()
    alerts = sample_alerts(count, int(time.time() * 1000))
    futures = [
        publisher.publish(
            topic(INPUTS[0], project),
            alert.to_bytes(),
            service=alert.service,
            event_time=str(alert.event_time_ms),
        )
        for alert in alerts
    ]
    for future in futures:
        _when_ready(partial(future.result, timeout=_READY_TIMEOUT_S))
    return alerts


def pull(name: str, *, limit: int, wait_s: float, project: str = PROJECT) -> Sequence[bytes]:
    """Up to `limit` messages of one output subscription, acknowledged; waits up to `wait_s`
    for the first (a streaming run takes a while to publish its first records)."""
    import google.cloud.pubsub_v1 as pubsub_v1

    _emulator_host()
    subscriber = pubsub_v1.SubscriberClient()
    deadline = time.monotonic() + wait_s
    received: list[bytes] = []
    try:
        while len(received) < limit:
            wanted = limit - len(received)
            response = _when_ready(
                partial(
                    subscriber.pull,
                    subscription=subscription(name, project),
                    max_messages=wanted,
                    timeout=10,
                )
            )
            messages = list(response.received_messages)
            if messages:
                subscriber.acknowledge(
                    subscription=subscription(name, project),
                    ack_ids=[m.ack_id for m in messages],
                )
                received += [bytes(m.message.data) for m in messages]
            elif received or time.monotonic() > deadline:
                break
            else:
                time.sleep(1.0)
    finally:
        subscriber.close()
    return received
