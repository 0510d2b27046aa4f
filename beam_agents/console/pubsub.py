"""A deployed job as the console's source and sink: its Pub/Sub subscriptions and answers topic.

The console reads local files, so a deployed job is mirrored: `PubSubMirror`
pulls the job's output subscriptions (`intents`, `lifecycle`, `errors`,
`outputs`) and appends each message's data, one JSON line, to the file of
the same name in a spool directory, acknowledging a message only once its
line is written. Everything else (pending approvals, pages) works on that
directory as on a local run's.

`PubSubAnswers` publishes each accepted answer to the answers topic, with
the `service` attribute the pipeline keys answers by, and keeps the answers
it sent in the spool directory, so one intent is answered once by this
console even across restarts.

Addresses: `pubsub://PROJECT/SUBSCRIPTION_TEMPLATE` for the source, where
`{name}` in the template stands for each output (`pubsub://my-proj/triage-{name}-console`),
and `pubsub://PROJECT/TOPIC` for the answers sink. On the emulator,
`PUBSUB_EMULATOR_HOST` is honoured by the client library.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from beam_agents.console.activity import RunActivity
from beam_agents.console.answers import AnswerRefusedError, AnswersFile
from beam_agents.errors import ConfigurationError

__all__ = ["OUTPUTS", "PubSubAnswers", "PubSubMirror", "parse_pubsub"]

OUTPUTS = ("intents", "lifecycle", "errors", "outputs")
SCHEME = "pubsub://"
_PULL_TIMEOUT_S = 5.0
_PUBLISH_TIMEOUT_S = 30.0
_log = logging.getLogger(__name__)


def parse_pubsub(address: str, what: str) -> tuple[str, str]:
    """`pubsub://PROJECT/NAME` as `(project, name)`; ConfigurationError naming `what` if not."""
    project, _, name = address.removeprefix(SCHEME).partition("/")
    if not address.startswith(SCHEME) or not project or not name or "/" in name:
        raise ConfigurationError(what, f"expected pubsub://PROJECT/NAME, got {address!r}")
    return project, name


class PubSubMirror:
    """Pulls a job's output subscriptions into JSON-lines files under `spool`, until stopped."""

    def __init__(self, source: str, spool: Path, *, interval_s: float = 1.0) -> None:
        project, template = parse_pubsub(source, "SOURCE")
        if "{name}" not in template:
            raise ConfigurationError("SOURCE", "the subscription needs {name}: triage-{name}")
        self.subscriptions = {
            name: f"projects/{project}/subscriptions/{template.replace('{name}', name)}"
            for name in OUTPUTS
        }
        self.spool = spool
        self.interval_s = interval_s
        self.stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pubsub-mirror", daemon=True)

    def start(self) -> None:
        self.spool.mkdir(parents=True, exist_ok=True)
        self._thread.start()

    def _run(self) -> None:
        import google.cloud.pubsub_v1 as pubsub_v1

        subscriber = pubsub_v1.SubscriberClient()
        try:
            while not self.stop.is_set():
                for name, subscription in self.subscriptions.items():
                    self._pull_once(subscriber, name, subscription)
                self.stop.wait(self.interval_s)
        finally:
            subscriber.close()

    def _pull_once(self, subscriber: Any, name: str, subscription: str) -> None:
        from google.api_core import exceptions

        try:
            response = subscriber.pull(
                subscription=subscription, max_messages=500, timeout=_PULL_TIMEOUT_S
            )
        except exceptions.GoogleAPICallError as exc:
            _log.warning("pulling %s failed: %s", subscription, type(exc).__name__)
            return
        messages = list(response.received_messages)
        if not messages:
            return
        with (self.spool / f"{name}.jsonl").open("ab") as handle:
            for received in messages:
                handle.write(bytes(received.message.data).rstrip(b"\n") + b"\n")
        subscriber.acknowledge(subscription=subscription, ack_ids=[m.ack_id for m in messages])


class PubSubAnswers(AnswersFile):
    """Publishes each accepted answer to the answers topic; the spool keeps what was sent."""

    def __init__(
        self, sink: str, spool: Path, activity: RunActivity, signing_key: bytes | None = None
    ) -> None:
        project, topic = parse_pubsub(sink, "--answers")
        self.topic = f"projects/{project}/topics/{topic}"
        import google.cloud.pubsub_v1 as pubsub_v1

        self._publisher = pubsub_v1.PublisherClient()
        super().__init__(spool / "answers.jsonl", activity, signing_key)

    def deliver(self, line: str, answer: dict[str, Any]) -> None:
        from google.api_core import exceptions

        future = self._publisher.publish(
            self.topic, line.encode("utf-8"), service=str(answer["service"])
        )
        try:
            future.result(timeout=_PUBLISH_TIMEOUT_S)
        except (exceptions.GoogleAPICallError, TimeoutError) as exc:
            raise AnswerRefusedError(
                f"the answer could not be published ({type(exc).__name__}); try again"
            ) from None
        self._append(line)
