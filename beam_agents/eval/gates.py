"""Gates: the conditions a CI job holds a change to.

    METRIC>=X  METRIC<=X      a scorer's mean (every candidate but the
                              baseline; the only one, when there is one)
    delta(METRIC)>=X          change against the baseline, for every other
                              candidate (the point estimate)
    dead_letters<=N           dead letters of each candidate checked
    cost_usd<=X               estimated cost of each candidate checked

A gate naming a metric the run does not compute is a usage error, found
before anything runs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from beam_agents.eval.errors import GateError

__all__ = ["Gate", "check_gates", "evaluate_gates", "parse_gate"]

_GATE: Final = re.compile(
    r"\s*(?:(?P<delta>delta)\(\s*(?P<dmetric>[A-Za-z0-9_.:-]+)\s*\)|(?P<metric>[A-Za-z0-9_.:-]+))"
    r"\s*(?P<op>>=|<=)\s*(?P<value>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*"
)
_TOTALS: Final = ("dead_letters", "cost_usd")


@dataclass(frozen=True, slots=True)
class Gate:
    """One parsed gate."""

    expr: str
    metric: str
    delta: bool
    op: str
    value: float


def parse_gate(expr: str) -> Gate:
    """Parse one gate; raises GateError saying what the grammar is."""
    found = _GATE.fullmatch(expr)
    if found is None:
        raise GateError(
            f"gate {expr!r} does not parse; write METRIC>=X, METRIC<=X, delta(METRIC)>=X, "
            "dead_letters<=N or cost_usd<=X"
        )
    delta = found.group("delta") is not None
    metric = found.group("dmetric") if delta else found.group("metric")
    return Gate(expr.strip(), metric, delta, found.group("op"), float(found.group("value")))


def check_gates(exprs: Sequence[str], scorer_names: Sequence[str]) -> list[Gate]:
    """Parse every gate and refuse one naming a metric no scorer computes."""
    gates = [parse_gate(expr) for expr in exprs]
    for gate in gates:
        known = list(scorer_names) if gate.delta else [*scorer_names, *_TOTALS]
        if gate.metric not in known:
            raise GateError(
                f"gate {gate.expr!r} names {gate.metric!r}; known: {', '.join(known) or 'none'}"
            )
    return gates


def _passes(value: float | None, gate: Gate) -> bool:
    if value is None:
        return False
    return value >= gate.value if gate.op == ">=" else value <= gate.value


def evaluate_gates(gates: Sequence[Gate], summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each gate with the value it saw (the worst over the candidates checked) and its verdict."""
    baseline = summary["baseline"]
    candidates = summary["candidates"]
    checked = [c for c in candidates if c["name"] != baseline] or candidates
    results: list[dict[str, Any]] = []
    for gate in gates:
        values: list[float | None] = []
        if gate.delta:
            for comparison in summary["comparisons"]:
                values.append(comparison["deltas"][gate.metric]["delta"])
        else:
            for candidate in checked:
                if gate.metric == "dead_letters":
                    values.append(float(sum(candidate["dead_letters"].values())))
                elif gate.metric == "cost_usd":
                    values.append(candidate["cost_usd"])
                else:
                    values.append(candidate["metrics"][gate.metric]["mean"])
        passed = bool(values) and all(_passes(value, gate) for value in values)
        known = [v for v in values if v is not None]
        worst: float | None = None
        if known and len(known) == len(values):
            worst = min(known) if gate.op == ">=" else max(known)
        results.append({"expr": gate.expr, "value": worst, "passed": passed})
    return results
