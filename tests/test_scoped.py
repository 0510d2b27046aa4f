"""A context variable set for a block is undone, and an abandoned block closes quietly."""

from __future__ import annotations

import contextvars
from collections.abc import Coroutine, Generator
from typing import Any

import pytest

from beam_agents._scoped import Scoped
from beam_agents.model._calls import metered_call
from beam_agents.model.flow import observe_flow

_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("test_scoped", default="outer")


class _Pending:
    """Awaits forever: the coroutine stops at its first suspension."""

    def __await__(self) -> Generator[None, None, None]:
        yield


def _suspended_in_its_own_context(coro: Coroutine[Any, Any, None]) -> None:
    """Start `coro` as a task would (in a copy of the context) and leave it suspended."""
    contextvars.copy_context().run(coro.send, None)


def test_a_block_sets_the_variable_and_the_earlier_value_comes_back_after() -> None:
    seen = []
    with Scoped(_VAR, "inner") as value:
        seen.append((value, _VAR.get()))
    seen.append(("after", _VAR.get()))

    assert seen == [("inner", "inner"), ("after", "outer")]


def test_an_abandoned_block_closed_in_another_context_ends_quietly() -> None:
    inside = []

    async def abandoned() -> None:
        with Scoped(_VAR, "abandoned"):
            inside.append(_VAR.get())
            await _Pending()

    coro = abandoned()
    _suspended_in_its_own_context(coro)

    coro.close()  # what the garbage collector does to a coroutine nobody awaits

    assert inside == ["abandoned"]
    assert _VAR.get() == "outer"


def test_an_abandoned_model_call_closes_without_an_ignored_exception(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The flow-control and attempt-counting scopes a model call runs in, abandoned mid-call."""
    ignored: list[BaseException | None] = []
    monkeypatch.setattr("sys.unraisablehook", lambda hook: ignored.append(hook.exc_value))

    async def call_left_waiting() -> None:
        with observe_flow(), metered_call("test", "model", secret=None):
            await _Pending()

    coro = call_left_waiting()
    _suspended_in_its_own_context(coro)

    coro.close()
    del coro

    assert ignored == []
