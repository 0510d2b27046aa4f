"""A context variable set for one block, undone even when the block is closed elsewhere.

A call the runtime abandons (agent code that caught every cancellation
past its deadline) is a coroutine nobody awaits again. The garbage
collector closes it later, in whatever context is current then, and
`ContextVar.reset` refuses a token made in another context: a plain
set-and-reset pair raises from that close, and Python prints it as an
ignored exception on stderr. The value to undo lives in the abandoned
call's own context, which nothing reads again, so there is nothing to
undo and `Scoped` lets it be.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Generic, TypeVar

__all__ = ["Scoped"]

T = TypeVar("T")


class Scoped(Generic[T]):
    """`with Scoped(var, value):` sets `var` for the block and resets it after."""

    __slots__ = ("_token", "_value", "_var")

    _token: Token[T]

    def __init__(self, var: ContextVar[T], value: T) -> None:
        self._var = var
        self._value = value

    def __enter__(self) -> T:
        self._token = self._var.set(self._value)
        return self._value

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with contextlib.suppress(ValueError):  # closed in another context: that one is gone
            self._var.reset(self._token)
