"""Topics and subscriptions on the Pub/Sub emulator for one test, and a bounded pipeline run.

Used by the Pub/Sub tests: each test gets names of its own on the shared session
emulator, publishes with the real client, pulls until it has what it expects (or a
deadline passes), and runs its streaming pipeline in a subprocess it kills at the end —
cancelling a streaming DirectRunner pipeline that reads Pub/Sub takes ~30 s (FACTS).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.cloud import pubsub_v1

PROJECT = "test-project"
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Received:
    """One pulled message, decoded."""

    data: bytes
    attributes: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.data)


@dataclass
class Streams:
    """Topics (each with one subscription) named uniquely for one test."""

    names: Sequence[str]
    prefix: str = field(default_factory=lambda: f"t{uuid.uuid4().hex[:10]}")

    def __post_init__(self) -> None:
        self.publisher = pubsub_v1.PublisherClient()
        self.subscriber = pubsub_v1.SubscriberClient()
        for name in self.names:
            self.publisher.create_topic(name=self.topic(name))
            self.subscriber.create_subscription(
                name=self.subscription(name), topic=self.topic(name), ack_deadline_seconds=60
            )

    def topic(self, name: str) -> str:
        return f"projects/{PROJECT}/topics/{self.prefix}-{name}"

    def subscription(self, name: str) -> str:
        return f"projects/{PROJECT}/subscriptions/{self.prefix}-{name}"

    def publish(self, name: str, data: bytes, **attributes: str) -> None:
        self.publisher.publish(self.topic(name), data, **attributes).result(timeout=30)

    def pull_until(
        self,
        name: str,
        count: int,
        *,
        deadline: float,
        alive: subprocess.Popen[bytes],
        done: Callable[[list[Received]], bool] | None = None,
    ) -> list[Received]:
        """Pull and ack until `count` messages (or `done(messages)`), the deadline, or the end.

        Pulls at least once, so what already arrived is read even after the deadline.
        """
        got: list[Received] = []
        finished = done or (lambda messages: len(messages) >= count)
        first = True
        while not finished(got) and (
            first or (time.monotonic() < deadline and alive.poll() is None)
        ):
            first = False
            response = self.subscriber.pull(
                subscription=self.subscription(name), max_messages=50, timeout=5
            )
            messages = response.received_messages
            if messages:
                self.subscriber.acknowledge(
                    subscription=self.subscription(name), ack_ids=[m.ack_id for m in messages]
                )
            got += [Received(m.message.data, dict(m.message.attributes)) for m in messages]
            if not messages:
                time.sleep(0.5)
        return got

    def close(self) -> None:
        self.subscriber.close()


@contextlib.contextmanager
def streaming_run(argv: Sequence[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Run `python ARGV` in its own session (emulator env inherited); kill its group on exit."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, *argv],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            yield process
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def log_tail(log: Path, size: int = 4000) -> str:
    return log.read_bytes()[-size:].decode("utf-8", "replace")
