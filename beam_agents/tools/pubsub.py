"""`PubSubPublish`: a tool that publishes the call to a Pub/Sub topic.

The message data is the call's JSON body; its attributes carry `intent_id`
and `tool`, so a subscriber deduplicates without parsing. Pub/Sub itself
does not deduplicate publishes: the ledger keeps this handler to one publish
per intent while leases hold, and a subscriber that drops repeated
`intent_id`s makes it effectively-once. The result is the message id.
`PUBSUB_EMULATOR_HOST` is honoured, as by every Pub/Sub client.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any, Final

from beam_agents.errors import ConfigurationError
from beam_agents.tools.calls import ToolCall, ToolHandler
from beam_agents.tools.errors import ToolCallError

__all__ = ["PubSubPublish"]

_TOPIC: Final = re.compile(r"projects/[A-Za-z0-9][A-Za-z0-9.:_-]*/topics/[A-Za-z][\w.~+%-]{2,254}")


class PubSubPublish(ToolHandler):
    """Publish each call to `topic` (`projects/P/topics/T`); the result is the message id."""

    def __init__(self, topic: str, *, timeout_s: float = 30.0) -> None:
        if not isinstance(topic, str) or not _TOPIC.fullmatch(topic):
            raise ConfigurationError(
                "PubSubPublish.topic", f"must be 'projects/<project>/topics/<topic>', got {topic!r}"
            )
        if not isinstance(timeout_s, int | float) or timeout_s <= 0:
            raise ConfigurationError("PubSubPublish.timeout_s", "must be a positive number")
        self.topic = topic
        self.timeout_s = float(timeout_s)
        self._publisher: Any = None

    def __repr__(self) -> str:
        return f"PubSubPublish({self.topic!r})"

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the configuration only; the client is built on the worker."""
        return {**self.__dict__, "_publisher": None}

    async def __call__(self, call: ToolCall) -> bytes:
        import google.cloud.pubsub_v1 as pubsub_v1
        from google.api_core import exceptions as api_errors

        if self._publisher is None:
            self._publisher = pubsub_v1.PublisherClient()
        future = self._publisher.publish(
            self.topic, call.body(), intent_id=call.intent_id, tool=call.tool
        )
        try:
            message_id = await asyncio.wait_for(asyncio.wrap_future(future), self.timeout_s)
        except (api_errors.GoogleAPIError, TimeoutError) as exc:
            raise ToolCallError(
                f"{call.tool}: publishing to {self.topic} failed: {type(exc).__name__}"
            ) from None
        return str(message_id).encode()

    async def aclose(self) -> None:
        """Flush and stop the publisher's background batching thread."""
        publisher, self._publisher = self._publisher, None
        if publisher is not None:
            await asyncio.to_thread(publisher.stop)
