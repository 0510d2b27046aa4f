"""The checkpointer: a graph's state kept in the key's working memory.

During an activation the saver holds what LangGraph writes (the latest
checkpoint of each namespace and the writes pending on it) in the run, so a
resume inside the activation finds its interrupt. What the activation
commits is one working-memory entry, `__langgraph__/checkpoint`: the root
namespace's latest checkpoint, and nothing else, because a committed
activation always ran its graph to the end (an interrupt suspends, and a
suspension commits no memory). Working memory holds one checkpoint per key,
not a history: time travel and forks are not kept.

LangGraph stamps checkpoints with time-based uuid6 ids and wall-clock
timestamps, and gives messages without an id a random uuid4. The committed
entry replaces all three with values derived from the key, the seq and the
event time, so a retried bundle, or a parked activation's re-run, commits
the same bytes.

The entry is what the adapter trusts least: the TTL flush copies it to the
long-term store, whose writers are not the pipeline's. It is read back only
through the allow-list serializer (`_serde`), and, under the job's signing
key, sealed when committed and verified before anything in it is decoded
(`beam_agents.state_signing`). A commit first reads its own bytes back, so
a graph whose state holds a class outside the allow-list fails then, with
the class named, not on the key's next event.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Final

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    CheckpointTuple,
    get_checkpoint_id,
)

from beam_agents._instants import utc_datetime
from beam_agents.adapters.langgraph._errors import CheckpointTypeError
from beam_agents.adapters.langgraph._run import GraphRun, Namespace, current_run
from beam_agents.errors import StateDecodeError
from beam_agents.state_signing import open_sealed, seal

__all__ = ["CHECKPOINT_KEY", "PREFIX", "WorkingMemorySaver", "load", "persist"]

PREFIX: Final = "__langgraph__/"
CHECKPOINT_KEY: Final = PREFIX + "checkpoint"
_MAGIC: Final = b"beam-agents/langgraph/1\0"
_NAMESPACE: Final = uuid.UUID("6b1f2c44-4f43-5d6e-9a0b-6c616e676772")


class WorkingMemorySaver(BaseCheckpointSaver):
    """A `BaseCheckpointSaver` over the running activation (see the module docstring)."""

    def get_tuple(self, config: dict[str, Any]) -> Any:
        return _get(current_run("the checkpointer"), self.serde, config)

    async def aget_tuple(self, config: dict[str, Any]) -> Any:
        return _get(current_run("the checkpointer"), self.serde, config)

    def list(self, config: Any, **_: Any) -> Iterator[Any]:
        found = _get(current_run("the checkpointer"), self.serde, config) if config else None
        if found is not None:
            yield found

    async def alist(self, config: Any, **_: Any) -> AsyncIterator[Any]:
        found = _get(current_run("the checkpointer"), self.serde, config) if config else None
        if found is not None:
            yield found

    def put(self, config: dict[str, Any], checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return _put(current_run("the checkpointer"), self.serde, config, checkpoint, metadata)

    async def aput(
        self, config: dict[str, Any], checkpoint: Any, metadata: Any, new_versions: Any
    ) -> Any:
        return _put(current_run("the checkpointer"), self.serde, config, checkpoint, metadata)

    def put_writes(
        self,
        config: dict[str, Any],
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        _put_writes(current_run("the checkpointer"), self.serde, config, writes, task_id, task_path)

    async def aput_writes(
        self,
        config: dict[str, Any],
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        _put_writes(current_run("the checkpointer"), self.serde, config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        current_run("the checkpointer").namespaces.clear()

    async def adelete_thread(self, thread_id: str) -> None:
        current_run("the checkpointer").namespaces.clear()


def _get(run: GraphRun, serde: Any, config: dict[str, Any]) -> Any:
    configurable = config["configurable"]
    ns = configurable.get("checkpoint_ns", "")
    saved = run.namespaces.get(ns)
    if saved is None:
        return None
    if saved.fresh:
        checkpoint, saved.fresh = saved.checkpoint, False
    else:
        checkpoint = serde.loads_typed(serde.dumps_typed(saved.checkpoint))
    wanted = get_checkpoint_id(config)
    if wanted is not None and wanted != checkpoint["id"]:
        return None  # only the latest checkpoint is kept
    thread_id = configurable["thread_id"]
    writes = sorted(saved.writes.values(), key=lambda w: (w[3], w[0]))
    return CheckpointTuple(
        config={
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint["id"],
            }
        },
        checkpoint=checkpoint,
        metadata=dict(saved.metadata),
        parent_config=(
            {
                "configurable": {
                    "thread_id": thread_id,
                    "checkpoint_ns": ns,
                    "checkpoint_id": saved.parent_id,
                }
            }
            if saved.parent_id
            else None
        ),
        pending_writes=[
            (task_id, channel, serde.loads_typed(value)) for task_id, channel, value, _ in writes
        ],
    )


def _put(
    run: GraphRun, serde: Any, config: dict[str, Any], checkpoint: Any, metadata: Any
) -> dict[str, Any]:
    configurable = config["configurable"]
    ns = configurable.get("checkpoint_ns", "")
    run.namespaces[ns] = Namespace(
        checkpoint={**checkpoint, "channel_values": dict(checkpoint["channel_values"])},
        metadata=(
            {
                "source": metadata.get("source", "loop"),
                "step": metadata.get("step", -1),
                "parents": dict(metadata.get("parents", {})),
            }
        ),
        parent_id=configurable.get("checkpoint_id"),
    )
    return {
        "configurable": {
            "thread_id": configurable["thread_id"],
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint["id"],
        }
    }


def _put_writes(
    run: GraphRun,
    serde: Any,
    config: dict[str, Any],
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
) -> None:
    configurable = config["configurable"]
    saved = run.namespaces.get(configurable.get("checkpoint_ns", ""))
    if saved is None:
        return
    for index, (channel, value) in enumerate(writes):
        key = (task_id, WRITES_IDX_MAP.get(channel, index))
        if key[1] >= 0 and key in saved.writes:
            continue
        saved.writes[key] = (task_id, channel, serde.dumps_typed(value), task_path)


def checkpoint_id(entity_key: bytes, seq: int) -> str:
    """The committed checkpoint's id: the same for every run of the activation."""
    return str(uuid.uuid5(_NAMESPACE, f"{entity_key.hex()}/{seq}"))


def persist(run: GraphRun, serde: Any) -> bytes | None:
    """The root checkpoint as the bytes the activation commits; None if the graph kept none."""
    saved = run.namespaces.get("")
    if saved is None:
        return None
    ctx = run.ctx
    checkpoint = dict(saved.checkpoint)
    metadata = saved.metadata
    new_id = checkpoint_id(ctx.entity_key, ctx.seq)
    checkpoint["id"] = new_id
    checkpoint["ts"] = utc_datetime(ctx.now_ms).isoformat()
    checkpoint["channel_values"] = {
        channel: _with_stable_ids(value, uuid.UUID(new_id), channel)
        for channel, value in checkpoint["channel_values"].items()
    }
    record = {
        "checkpoint": checkpoint,
        "metadata": {
            "source": metadata.get("source", "loop"),
            "step": metadata.get("step", -1),
            "parents": {},
        },
    }
    kind, data = serde.dumps_typed(record)
    try:
        serde.loads_typed((kind, data))
    except CheckpointTypeError as exc:
        raise CheckpointTypeError(
            exc.type_name,
            f"the graph's state holds {exc.type_name!r}, which a checkpoint does not restore: "
            "name the class in graph_agent(checkpoint_types=[...]) to keep it in state",
        ) from None
    encoded = _MAGIC + str(kind).encode("ascii") + b"\0" + bytes(data)
    return seal(CHECKPOINT_KEY, ctx.entity_key, encoded)


def load(run: GraphRun, serde: Any, data: bytes, thread_id: str) -> None:
    """Put a committed checkpoint back as the root namespace's latest.

    Raises `StateSignatureError` (under a signing key) or `CheckpointTypeError`
    for a checkpoint this pipeline did not write, before constructing anything.
    """
    data = open_sealed(CHECKPOINT_KEY, run.ctx.entity_key, data)
    if not data.startswith(_MAGIC) or b"\0" not in data[len(_MAGIC) :]:
        raise StateDecodeError(
            f"working memory {CHECKPOINT_KEY!r} does not hold a beam-agents LangGraph checkpoint"
        )
    kind, _, body = data[len(_MAGIC) :].partition(b"\0")
    try:
        record = serde.loads_typed((kind.decode("ascii"), body))
        checkpoint, metadata = record["checkpoint"], record["metadata"]
    except StateDecodeError:
        raise
    except Exception as exc:
        raise StateDecodeError(
            f"working memory {CHECKPOINT_KEY!r} holds a LangGraph checkpoint that does not "
            f"decode: {type(exc).__name__}"
        ) from exc
    run.namespaces[""] = Namespace(
        checkpoint=checkpoint,
        metadata=dict(metadata),
        parent_id=None,
        fresh=True,
    )


def _is_random(message_id: object) -> bool:
    """A uuid4 as LangGraph's message reducer assigns to messages that came without an id."""
    if not isinstance(message_id, str):
        return False
    try:
        return uuid.UUID(message_id).version == 4
    except ValueError:
        return False


def _with_stable_ids(value: Any, base: uuid.UUID, channel: str) -> Any:
    """`value` with each random message id replaced by one derived from its position."""
    if isinstance(value, BaseMessage):
        return _stable(value, base, f"{channel}")
    if isinstance(value, list) and any(isinstance(item, BaseMessage) for item in value):
        return [
            _stable(item, base, f"{channel}/{index}") if isinstance(item, BaseMessage) else item
            for index, item in enumerate(value)
        ]
    return value


def _stable(message: BaseMessage, base: uuid.UUID, where: str) -> BaseMessage:
    if not _is_random(message.id):
        return message
    return message.model_copy(update={"id": str(uuid.uuid5(base, where))})
