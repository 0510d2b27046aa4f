"""DoFn instances that outlive their bundle on the local DirectRunner, as on deployed runners.

The DirectRunner unpickles a ParDo's DoFn and runs its `setup()` for every
bundle, and its `teardown()` after it; a deployed runner keeps an instance
for many bundles. An agent's `setup()` builds its model client (a TLS
context), opens its store and its tools' ledger: per bundle, that was most
of a local replay's CPU, and a replay whose calls park runs many small
bundles (each step's events, each round of polls). The runner also reads
each DoFn's state and timer specs (by signature inspection) several times
per bundle; for an instance it reuses, they are read once.

While `reusing_dofns()` is active, an instance whose bundle finished goes
to the same transform's next bundle, already set up. One whose bundle
failed is dropped, not reused, as a runner drops the instance of a failed
bundle (and, as before, without a teardown). At the end each instance kept
is torn down. A DoFn whose `setup()` takes parameters is left to the runner.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import threading
from collections.abc import Iterator
from typing import Any

import apache_beam as beam
from apache_beam.internal import pickler as beam_pickler
from apache_beam.runners.direct import transform_evaluator
from apache_beam.transforms import userstate

__all__ = ["reusing_dofns"]

_log = logging.getLogger(__name__)
_evaluators: Any = transform_evaluator
"""The DirectRunner's evaluators module, patched while a pool is active."""
_pickler: Any = beam_pickler
_userstate: Any = userstate


def _kept() -> None:
    """An instance's setup() and teardown() while it is reused: the pool runs the real ones."""


class _Pool:
    """The set-up instances of one run, idle between bundles, by the DoFn they were copied from."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[int, list[Any]] = {}
        self._specs: dict[int, tuple[object, Any]] = {}
        """The state and timer specs of the DoFns that last the run, by id (each kept alive)."""

    def take(self, original: beam.DoFn) -> Any:
        with self._lock:
            idle = self._idle.get(id(original))
            if idle:
                return idle.pop()
        fresh: Any = _pickler.roundtrip(original)
        fresh.setup()
        fresh.setup = fresh.teardown = _kept
        with self._lock:
            for lasting in (original, fresh):
                self._specs.setdefault(id(lasting), (lasting, None))
        return fresh

    def specs(self, dofn: Any) -> Any:
        """`get_dofn_specs(dofn)`, read once for a DoFn that lasts the run."""
        with self._lock:
            known = self._specs.get(id(dofn))
        if known is None or known[0] is not dofn:
            return _originals["get_dofn_specs"](dofn)
        if known[1] is None:
            specs = _originals["get_dofn_specs"](dofn)
            with self._lock:
                self._specs[id(dofn)] = (dofn, specs)
            return specs
        return known[1]

    def give_back(self, original: beam.DoFn, instance: Any) -> None:
        with self._lock:
            self._idle.setdefault(id(original), []).append(instance)

    def tear_down(self) -> None:
        """Tear down every idle instance; those of failed bundles were dropped before.

        On a thread of its own, as the runner's worker threads ran it: a
        teardown closes event loops, and must not touch the caller's thread's.
        """
        with self._lock:
            idle = [d for instances in self._idle.values() for d in instances]
            self._idle.clear()
            self._specs.clear()
        if idle:
            worker = threading.Thread(target=_tear_down, args=(idle,), name="dofn-teardown")
            worker.start()
            worker.join()


def _tear_down(instances: list[Any]) -> None:
    for instance in instances:
        try:
            type(instance).teardown(instance)
        except Exception:
            _log.exception("tearing down a reused %s failed", type(instance).__name__)


_lock = threading.Lock()
_pools: list[_Pool] = []
_handed = threading.local()
"""The instance the current thread's bundle got, with the DoFn it was copied from."""
_originals: dict[str, Any] = {}


def _reusable(dofn: object) -> bool:
    if not isinstance(dofn, beam.DoFn):
        return False
    return len(inspect.signature(type(dofn).setup).parameters) == 1  # self only


class _Pickler:
    """`pickler` as the DirectRunner's evaluators see it: a DoFn copy comes from the pool."""

    def roundtrip(self, value: Any) -> Any:
        with _lock:
            pool = _pools[0] if len(_pools) == 1 else None
        if pool is None or not _reusable(value):
            return _pickler.roundtrip(value)
        instance = pool.take(value)
        _handed.value = (pool, value, instance)
        return instance

    def __getattr__(self, name: str) -> Any:
        return getattr(_pickler, name)


def _dofn_specs(dofn: Any) -> Any:
    with _lock:
        pool = _pools[0] if len(_pools) == 1 else None
    return pool.specs(dofn) if pool is not None else _originals["get_dofn_specs"](dofn)


def _start_bundle(evaluator: Any) -> None:
    _handed.value = None
    _originals["start_bundle"](evaluator)
    evaluator._beam_agents_reused = _handed.value
    _handed.value = None


def _finish_bundle(evaluator: Any) -> Any:
    result = _originals["finish_bundle"](evaluator)
    handed = getattr(evaluator, "_beam_agents_reused", None)
    if handed is not None:
        pool, original, instance = handed
        pool.give_back(original, instance)
    return result


def _install() -> None:
    """Patch the ParDo evaluator (under `_lock`, by the first active pool)."""
    evaluator = _evaluators._ParDoEvaluator
    _originals["start_bundle"] = evaluator.start_bundle
    _originals["finish_bundle"] = evaluator.finish_bundle
    _originals["pickler"] = _evaluators.pickler
    _originals["get_dofn_specs"] = _userstate.get_dofn_specs
    evaluator.start_bundle = _start_bundle
    evaluator.finish_bundle = _finish_bundle
    _evaluators.pickler = _Pickler()
    _evaluators.get_dofn_specs = _userstate.get_dofn_specs = _dofn_specs


def _uninstall() -> None:
    evaluator = _evaluators._ParDoEvaluator
    evaluator.start_bundle = _originals.pop("start_bundle")
    evaluator.finish_bundle = _originals.pop("finish_bundle")
    _evaluators.pickler = _originals.pop("pickler")
    _evaluators.get_dofn_specs = _userstate.get_dofn_specs = _originals.pop("get_dofn_specs")


@contextlib.contextmanager
def reusing_dofns() -> Iterator[None]:
    """While active, one local run's DoFn instances are reused across its bundles.

    With two local runs at once in one process neither reuses (whose
    bundle is whose cannot be told here): both set up per bundle, as before.
    """
    pool = _Pool()
    with _lock:
        if not _pools and not _originals:
            _install()
        _pools.append(pool)
    try:
        yield
    finally:
        with _lock:
            _pools.remove(pool)
            if not _pools:
                _uninstall()
        pool.tear_down()
