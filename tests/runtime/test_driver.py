"""The loop driver's eager start: the coroutine cannot tell it from a task run by the loop."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterator

import pytest

from beam_agents.runtime._calls.driver import _DRAIN_EVERY, _EAGER_TASKS, LoopDriver

KEPT_TASK = pytest.mark.skipif(
    _EAGER_TASKS, reason="3.11's path keeps the task; asyncio's eager tasks (3.12 on) do not"
)
EAGER_TASK = pytest.mark.skipif(not _EAGER_TASKS, reason="asyncio's eager tasks are 3.12 on")

_var: contextvars.ContextVar[str] = contextvars.ContextVar("_var", default="outside")


@pytest.fixture
def driver() -> Iterator[LoopDriver]:
    driver = LoopDriver()
    yield driver
    driver.close()


def test_a_coroutine_that_never_waits_finishes_without_iterating_the_loop(
    driver: LoopDriver,
) -> None:
    seen = []

    async def agent() -> str:
        seen.append((asyncio.get_running_loop(), asyncio.current_task()))
        return "done"

    assert driver.run(agent(), 5.0) == "done"
    loop, task = seen[0]
    assert loop is driver.loop
    assert task is not None
    assert not driver.loop.is_running()
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()  # the loop is not left marked running


def test_a_coroutine_that_waits_is_resumed_by_its_own_task(driver: LoopDriver) -> None:
    tasks_seen = []

    async def agent() -> int:
        tasks_seen.append(asyncio.current_task())
        await asyncio.sleep(0.01)
        tasks_seen.append(asyncio.current_task())
        await asyncio.sleep(0)
        tasks_seen.append(asyncio.current_task())
        return 7

    assert driver.run(agent(), 5.0) == 7
    assert tasks_seen[0] is tasks_seen[1] is tasks_seen[2]


def test_task_groups_and_timeouts_work_from_the_first_step(driver: LoopDriver) -> None:
    async def child(n: int) -> int:
        await asyncio.sleep(0.001 * n)
        return n

    async def agent() -> list[int]:
        async with asyncio.timeout(5):
            async with asyncio.TaskGroup() as group:
                futures = [group.create_task(child(n)) for n in (3, 1, 2)]
        return [f.result() for f in futures]

    assert driver.run(agent(), 5.0) == [3, 1, 2]


def test_a_task_group_failure_cancels_its_siblings_and_propagates(driver: LoopDriver) -> None:
    cancelled = []

    async def slow() -> None:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def failing() -> None:
        await asyncio.sleep(0.001)
        raise ValueError("boom")

    async def agent() -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(slow())
            group.create_task(failing())

    with pytest.raises(ExceptionGroup) as caught:
        driver.run(agent(), 5.0)
    assert caught.group_contains(ValueError)
    assert cancelled == [True]


def test_the_timeout_counts_from_the_start_and_cancels_a_waiting_coroutine(
    driver: LoopDriver,
) -> None:
    cleaned = []

    async def agent() -> None:
        try:
            await asyncio.sleep(10)
        finally:
            cleaned.append(True)

    with pytest.raises(TimeoutError, match=r"0\.05 s"):
        driver.run(agent(), 0.05)
    assert cleaned == [True]


def test_exceptions_propagate_from_the_eager_step_and_after_waiting(driver: LoopDriver) -> None:
    async def at_once() -> None:
        raise KeyError("first step")

    async def later() -> None:
        await asyncio.sleep(0)
        raise KeyError("after a wait")

    with pytest.raises(KeyError, match="first step"):
        driver.run(at_once(), 5.0)
    with pytest.raises(KeyError, match="after a wait"):
        driver.run(later(), 5.0)


def test_context_changes_stay_inside_the_activation(driver: LoopDriver) -> None:
    async def agent() -> str:
        _var.set("inside")
        await asyncio.sleep(0)
        return _var.get()

    async def quick() -> str:
        _var.set("inside")
        return _var.get()

    async def after() -> str:
        return _var.get()

    assert driver.run(agent(), 5.0) == "inside"
    assert driver.run(quick(), 5.0) == "inside"
    assert driver.run(after(), 5.0) == "outside"
    assert _var.get() == "outside"


def test_spawned_tasks_run_and_eager_wrappers_do_not_accumulate(driver: LoopDriver) -> None:
    ran = []

    async def background() -> None:
        ran.append(True)

    async def agent() -> None:
        asyncio.get_running_loop().create_task(background())

    for _ in range(_DRAIN_EVERY * 3):
        driver.run(agent(), 5.0)
    assert len(ran) >= _DRAIN_EVERY * 2
    assert len(asyncio.all_tasks(driver.loop)) < _DRAIN_EVERY * 2


@KEPT_TASK
def test_an_eagerly_finished_activation_leaves_nothing_on_the_loop(driver: LoopDriver) -> None:
    """Nothing queued, even when it raised; its task waits, unstarted, for the next one."""
    import weakref

    seen: list[weakref.ref[asyncio.Task[object]]] = []

    async def agent(fail: bool) -> str:
        task = asyncio.current_task()
        assert task is not None
        seen.append(weakref.ref(task))
        if fail:
            raise KeyError("eager failure")
        return "done"

    assert driver.run(agent(False), 5.0) == "done"
    with pytest.raises(KeyError):
        driver.run(agent(True), 5.0)

    assert len(driver.loop._ready) == 0  # type: ignore[attr-defined]
    assert seen[0]() is seen[1]()
    assert asyncio.all_tasks(driver.loop) == {seen[0]()}
    driver.close()
    assert seen[0]() is None  # freed with the driver, without a collection


@EAGER_TASK
def test_an_eager_task_finishes_in_place_and_leaves_nothing_on_the_loop(
    driver: LoopDriver,
) -> None:
    """asyncio's own eager task: done and freed, nothing queued, even when it raised."""
    import weakref

    seen: list[weakref.ref[asyncio.Task[object]]] = []

    async def agent(fail: bool) -> str:
        task = asyncio.current_task()
        assert task is not None
        seen.append(weakref.ref(task))
        if fail:
            raise KeyError("eager failure")
        return "done"

    assert driver.run(agent(False), 5.0) == "done"
    with pytest.raises(KeyError):
        driver.run(agent(True), 5.0)

    assert driver.loop.queued == 0  # type: ignore[attr-defined]
    assert asyncio.all_tasks(driver.loop) == set()
    assert seen[0]() is None  # freed at once, without a collection


@EAGER_TASK
def test_each_activation_runs_as_its_own_eager_task_before_and_after_waiting(
    driver: LoopDriver,
) -> None:
    async def waits() -> tuple[asyncio.Task[object] | None, asyncio.Task[object] | None]:
        before = asyncio.current_task()
        async with asyncio.timeout(5):
            await asyncio.sleep(0.001)
        return before, asyncio.current_task()

    first_before, first_after = driver.run(waits(), 5.0)
    second_before, _ = driver.run(waits(), 5.0)
    assert first_before is first_after
    assert first_before is not None
    assert first_before.done()
    assert second_before is not first_before


@KEPT_TASK
def test_a_task_reused_by_the_next_activation_runs_it_as_its_own(driver: LoopDriver) -> None:
    async def quick() -> asyncio.Task[object] | None:
        return asyncio.current_task()

    async def waits() -> tuple[asyncio.Task[object] | None, asyncio.Task[object] | None]:
        before = asyncio.current_task()
        async with asyncio.timeout(5):
            await asyncio.sleep(0.001)
        return before, asyncio.current_task()

    first = driver.run(quick(), 5.0)
    before, after = driver.run(waits(), 5.0)
    assert before is first
    assert after is first
    assert first is not None
    assert first.done()
    assert driver.run(quick(), 5.0) is not first  # a finished task is never reused


@pytest.mark.parametrize("mark", ["cancel", "done_callback", "rename", "context"])
def test_a_task_its_agent_marked_is_not_handed_to_the_next_activation(
    driver: LoopDriver, mark: str
) -> None:
    """A cancel, a callback, a name or a context change stays with the activation that made it."""
    fired: list[object] = []

    async def marking() -> asyncio.Task[object] | None:
        task = asyncio.current_task()
        assert task is not None
        if mark == "cancel":
            task.cancel()
        elif mark == "done_callback":
            task.add_done_callback(fired.append)
        elif mark == "rename":
            task.set_name("renamed-by-an-agent")
        else:
            _var.set("inside")
        return task

    async def waits() -> tuple[asyncio.Task[object] | None, str, str]:
        await asyncio.sleep(0)
        task = asyncio.current_task()
        assert task is not None
        return task, task.get_name(), _var.get()

    if mark == "cancel" and _EAGER_TASKS:
        # A real task that cancels itself ends cancelled, whatever it returns.
        with pytest.raises(asyncio.CancelledError):
            driver.run(marking(), 5.0)
        marked = None
    else:
        marked = driver.run(marking(), 5.0)
    task, name, value = driver.run(waits(), 5.0)  # neither cancelled nor calling back
    assert task is not marked
    assert (name != "renamed-by-an-agent", value) == (True, "outside")
    # The marked task's own callback may fire (a real task completes); never the next one's.
    assert all(called is marked for called in fired)


def test_the_thread_context_of_each_activation_reaches_it(driver: LoopDriver) -> None:
    async def agent() -> str:
        return _var.get()

    assert driver.run(agent(), 5.0) == "outside"
    token = _var.set("set by the runner")
    try:
        assert driver.run(agent(), 5.0) == "set by the runner"
    finally:
        _var.reset(token)
    assert driver.run(agent(), 5.0) == "outside"


def test_closing_never_waits_on_a_finished_task_an_agent_kept() -> None:
    import threading

    kept: list[asyncio.Task[object] | None] = []

    async def agent() -> str:
        kept.append(asyncio.current_task())
        return "done"

    driver = LoopDriver()
    assert driver.run(agent(), 5.0) == "done"
    closer = threading.Thread(target=driver.close, daemon=True)
    closer.start()
    closer.join(timeout=10)

    assert not closer.is_alive()
    assert kept[0] is not None


@pytest.fixture
def plain_driver(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopDriver]:
    """A driver on an interpreter without asyncio's task bookkeeping hooks."""
    monkeypatch.setattr("beam_agents.runtime._calls.driver._EAGER_HOOKS", False)
    driver = LoopDriver()
    yield driver
    driver.close()


def test_without_the_eager_hooks_coroutines_run_as_plain_tasks(plain_driver: LoopDriver) -> None:
    """Same results, exceptions, timeouts and context isolation, only slower."""

    async def answer() -> str:
        await asyncio.sleep(0)
        assert asyncio.current_task() is not None
        _var.set("inside")
        return "done"

    async def fail() -> None:
        raise KeyError("boom")

    async def hang() -> None:
        await asyncio.sleep(60)

    assert plain_driver.run(answer(), 5.0) == "done"
    assert _var.get() == "outside"
    with pytest.raises(KeyError, match="boom"):
        plain_driver.run(fail(), 5.0)
    with pytest.raises(TimeoutError):
        plain_driver.run(hang(), 0.05)
    assert plain_driver.run(answer()) == "done"
