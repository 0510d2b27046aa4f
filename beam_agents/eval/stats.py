"""Bootstrap intervals: how sure a mean, or a change in one, is on this many events.

Percentile bootstrap, 2,000 resamples, 95%. The generator is seeded from
the metric's name, so a rerun on the same scores writes the same bytes.
A change between two candidates resamples the per-event paired
difference: each event is compared with itself, which is what makes a
small log able to show a real change.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

__all__ = ["RESAMPLES", "Interval", "bootstrap_mean", "paired_delta"]

RESAMPLES: Final = 2_000
_CHUNK: Final = 100
_DIGITS: Final = 6


@dataclass(frozen=True, slots=True)
class Interval:
    """A mean and its 95% interval over `n` values (all None when `n` is 0)."""

    mean: float | None
    low: float | None
    high: float | None
    n: int


def _round(value: float) -> float:
    return round(float(value), _DIGITS)


def bootstrap_mean(values: Sequence[float], seed_name: str) -> Interval:
    """The mean of `values` with its percentile-bootstrap 95% interval."""
    n = len(values)
    if n == 0:
        return Interval(None, None, None, 0)
    data = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(zlib.crc32(seed_name.encode("utf-8")))
    means = np.empty(RESAMPLES, dtype=np.float64)
    for start in range(0, RESAMPLES, _CHUNK):
        picks = rng.integers(0, n, size=(_CHUNK, n))
        means[start : start + _CHUNK] = data[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return Interval(_round(data.mean()), _round(low), _round(high), n)


def paired_delta(
    baseline: Sequence[float | None], candidate: Sequence[float | None], seed_name: str
) -> Interval:
    """Candidate minus baseline over the events both scored, with its paired interval."""
    pairs = [
        c - b for b, c in zip(baseline, candidate, strict=True) if b is not None and c is not None
    ]
    return bootstrap_mean(pairs, seed_name)
