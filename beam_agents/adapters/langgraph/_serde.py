"""The checkpoint serializer: LangGraph's encoding, read back only into allowed classes.

LangGraph's default serializer (`JsonPlusSerializer`) writes a value it has
no native encoding for as (module, name, arguments) and, reading it back,
imports that module and calls that name with those arguments, with no more
than a logged warning for a name it does not know. Whoever can write the
bytes (the long-term row a TTL flush wrote) picks the callable and its
arguments: `os.system` and a command is a checkpoint to it.

Here values are written as LangGraph writes them (a checkpoint of an
earlier release still reads), but read back through a table of classes
keyed by (module, name): a name outside the table, an encoding this
adapter never writes (pickle, LangGraph's legacy JSON) and a method call
other than `datetime.fromisoformat` are refused with `CheckpointTypeError`
before anything is imported, constructed or called. The table is what the
adapter's own checkpoints hold (LangChain messages and documents,
LangGraph's `Send`, `Interrupt` and `Overwrite`, and the date, time, uuid,
decimal, zone and collection types LangGraph encodes) plus the classes a
graph names in `graph_agent(checkpoint_types=...)`. Dicts, lists, text,
numbers, booleans and bytes need no entry.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any, Final, NoReturn
from uuid import UUID
from zoneinfo import ZoneInfo

import ormsgpack
from langchain_core.documents import Document
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    ChatMessage,
    ChatMessageChunk,
    FunctionMessage,
    FunctionMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    RemoveMessage,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import (
    EXT_CONSTRUCTOR_KW_ARGS,
    EXT_CONSTRUCTOR_POS_ARGS,
    EXT_CONSTRUCTOR_SINGLE_ARG,
    EXT_DELTA_SNAPSHOT,
    EXT_METHOD_SINGLE_ARG,
    EXT_PYDANTIC_V1,
    EXT_PYDANTIC_V2,
    JsonPlusSerializer,
)
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.types import Interrupt, Overwrite, Send

from beam_agents.adapters.langgraph._errors import CheckpointTypeError
from beam_agents.errors import StateDecodeError

__all__ = ["DEFAULT_TYPES", "CheckpointSerializer"]

DEFAULT_TYPES: Final[tuple[type, ...]] = (
    AIMessage,
    AIMessageChunk,
    ChatMessage,
    ChatMessageChunk,
    FunctionMessage,
    FunctionMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    RemoveMessage,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
    Document,
    Interrupt,
    Overwrite,
    Send,
    date,
    datetime,
    time,
    timedelta,
    timezone,
    ZoneInfo,
    UUID,
    Decimal,
    set,
    frozenset,
    deque,
)
"""The classes every checkpoint may hold; a graph adds its own with `checkpoint_types`."""

_ENCODINGS: Final = ("null", "bytes", "bytearray", "msgpack")
_HINT: Final = (
    "if the graph's own state holds it, name the class in graph_agent(checkpoint_types=[...])"
)


def _single(cls: type, args: Any) -> Any:
    return cls(args)


def _positional(cls: type, args: Any) -> Any:
    if not isinstance(args, list | tuple):
        raise TypeError("positional arguments are not a list")
    if cls is Send and len(args) == 3:
        return Send(args[0], args[1], timeout=args[2])
    return cls(*args)


def _keywords(cls: type, args: Any) -> Any:
    if not isinstance(args, dict) or not all(isinstance(name, str) for name in args):
        raise TypeError("keyword arguments are not a mapping of names")
    return cls(**args)


_BUILD: Final[Mapping[int, Callable[[type, Any], Any]]] = {
    EXT_CONSTRUCTOR_SINGLE_ARG: _single,
    EXT_CONSTRUCTOR_POS_ARGS: _positional,
    EXT_CONSTRUCTOR_KW_ARGS: _keywords,
    EXT_PYDANTIC_V1: _keywords,
    EXT_PYDANTIC_V2: _keywords,
}


class CheckpointSerializer(SerializerProtocol):
    """LangGraph's `SerializerProtocol`: its encoding out, only the allowed classes back in."""

    def __init__(self, extra_types: Iterable[type] = ()) -> None:
        self._writer = JsonPlusSerializer(pickle_fallback=False, allowed_msgpack_modules=None)
        self._types: dict[tuple[str, str], type] = {
            (cls.__module__, cls.__name__): cls for cls in (*DEFAULT_TYPES, *extra_types)
        }

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = self._writer.dumps_typed(obj)
        return str(kind), bytes(data)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, body = data
        if kind not in _ENCODINGS:
            raise CheckpointTypeError(
                str(kind),
                f"a checkpoint value is encoded as {str(kind)[:40]!r}, which this adapter "
                "never writes: refused without decoding it",
            )
        if kind == "null":
            return None
        if kind == "bytes":
            return bytes(body)
        if kind == "bytearray":
            return bytearray(body)
        return _Reading(self._types).load(bytes(body))


class _Refused(Exception):
    """Unwinds ormsgpack from a refused name; `_Reading.refused` holds the error to raise."""


class _Reading:
    """One `loads_typed`: ormsgpack reports any failure in its hook as one bare ValueError,
    so the hook leaves the refusal here for `load` to raise by name."""

    def __init__(self, types: Mapping[tuple[str, str], type]) -> None:
        self._types = types
        self.refused: CheckpointTypeError | None = None
        self.failed: str | None = None

    def load(self, body: bytes) -> Any:
        try:
            return self._unpack(body)
        except (ValueError, TypeError) as exc:
            if self.refused is not None:
                raise self.refused from None
            detail = self.failed or type(exc).__name__
            raise StateDecodeError(f"a checkpoint value does not decode: {detail}") from None

    def _unpack(self, body: bytes) -> Any:
        return ormsgpack.unpackb(body, ext_hook=self._ext, option=ormsgpack.OPT_NON_STR_KEYS)

    def _ext(self, code: int, data: bytes) -> Any:
        if code == EXT_DELTA_SNAPSHOT:
            return _DeltaSnapshot(self._unpack(data))
        if code != EXT_METHOD_SINGLE_ARG and code not in _BUILD:
            self._refuse(f"msgpack extension {code}", "an encoding this adapter never writes")
        parts = self._unpack(data)
        if not isinstance(parts, list | tuple) or len(parts) < 3:
            self.failed = f"msgpack extension {code} holds no (module, name, arguments)"
            raise TypeError(self.failed)
        module, name, args = parts[0], parts[1], parts[2]
        cls = self._allowed(module, name)
        try:
            if code == EXT_METHOD_SINGLE_ARG:
                method = parts[3] if len(parts) > 3 else None
                if cls is not datetime or method != "fromisoformat":
                    self._refuse(f"{module}.{name}.{method}", "a method call")
                return datetime.fromisoformat(args)
            return _BUILD[code](cls, args)
        except _Refused:
            raise
        except Exception as exc:
            self.failed = f"{module}.{name}: {type(exc).__name__}"
            raise TypeError(self.failed) from exc

    def _allowed(self, module: object, name: object) -> type:
        """The class (module, name) stands for, if the table holds it; refused else."""
        if not isinstance(module, str) or not isinstance(name, str):
            self.failed = "a constructor whose module or name is not text"
            raise TypeError(self.failed)
        cls = self._types.get((module, name))
        if cls is None:
            self._refuse(f"{module}.{name}", "a type outside the checkpoint allow-list")
        return cls

    def _refuse(self, type_name: str, what: str) -> NoReturn:
        shown = type_name[:200]
        self.refused = CheckpointTypeError(
            shown,
            f"a checkpoint names {shown!r}, {what}: refused, and nothing was imported, "
            f"constructed or called ({_HINT})",
        )
        raise _Refused(shown)
