"""FakeEmbedder: a deterministic, offline embedder whose similarity follows shared words.

Tests of recall need rankings they can reason about without a model: two
texts sharing more words score higher. Each lower-cased word is hashed with
SHA-256 (stable across processes and machines, unlike `hash()`) into one of
`dimensions` buckets with a sign; the vector is the sum, L2-normalised.

Like FakeLLM, it keeps its call log in a process-wide registry under its
`name`: pipelines build their embedder on the workers, and on the
DirectRunner the test and every DoFn instance share one process, so a test
can count the embedding calls a pipeline made.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from beam_agents.errors import BeamAgentsError, ConfigurationError
from beam_agents.model._call_log import CallLog
from beam_agents.model.embedders.protocol import Embedded

__all__ = ["MAX_FAKE_DIMENSIONS", "FakeEmbedder", "FakeEmbedderError", "word_tokens"]

MAX_FAKE_DIMENSIONS: Final = 8192
"""Widest vector a FakeEmbedder makes: wider buys tests nothing."""

_WORD = re.compile(r"\w+")
_log: CallLog[tuple[str, ...]] = CallLog()


class FakeEmbedderError(BeamAgentsError):
    """A failure FakeEmbedder was scripted to raise."""


def word_tokens(text: str) -> list[str]:
    """The lower-cased word tokens FakeEmbedder hashes (and counts as input tokens)."""
    return _WORD.findall(text.lower())


def _check_dimensions(value: object) -> int:
    if type(value) is not int or not 1 <= value <= MAX_FAKE_DIMENSIONS:
        raise ConfigurationError(
            "dimensions", f"must be an int from 1 to {MAX_FAKE_DIMENSIONS}, got {value!r}"
        )
    return value


@dataclass(frozen=True)
class FakeEmbedder:
    """A scripted embedder: hashed bag of words, after the configured latency and failures.

    - `delay_s` sleeps (asynchronously) before answering, so a test can make
      the call slow enough to park.
    - `fail_first` raises `FakeEmbedderError` on the first N calls (counted per name).
    - `fail_on` raises on every call where a text matches the regex.
    - `keep_calls=False` keeps no call log (a long-running demo would grow it
      without bound); `fail_first` then sees a count of 0.
    It is its own factory: `AgentConfig(embedder=FakeEmbedder(...))` is a
    picklable zero-argument callable returning the embedder.
    """

    dimensions: int = 256
    name: str = "fake-embed"
    delay_s: float = 0.0
    fail_first: int = 0
    fail_on: str | None = None
    keep_calls: bool = True
    _fail_on: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_dimensions(self.dimensions)
        if isinstance(self.delay_s, bool) or not isinstance(self.delay_s, int | float):
            raise ConfigurationError(
                "delay_s", f"must be a number of seconds, got {self.delay_s!r}"
            )
        if not math.isfinite(self.delay_s) or self.delay_s < 0:
            raise ConfigurationError("delay_s", f"must be finite and >= 0, got {self.delay_s!r}")
        if type(self.fail_first) is not int or self.fail_first < 0:
            raise ConfigurationError("fail_first", f"must be an int >= 0, got {self.fail_first!r}")
        try:
            compiled = None if self.fail_on is None else re.compile(self.fail_on)
        except re.error as exc:
            raise ConfigurationError("fail_on", f"is not a regex: {exc}") from None
        object.__setattr__(self, "_fail_on", compiled)

    def __call__(self) -> FakeEmbedder:
        return self

    @property
    def model_id(self) -> str:
        """`fake-embed-<dimensions>`: the width is the only setting that changes the vectors."""
        return f"fake-embed-{self.dimensions}"

    async def embed(self, texts: Sequence[str]) -> Embedded:
        """One hashed bag-of-words vector per text; `input_tokens` counts the words."""
        batch = tuple(texts)
        count = _log.record(self.name, batch) if self.keep_calls else 0
        if self.delay_s > 0:
            await asyncio.sleep(self.delay_s)
        if 0 < count <= self.fail_first:
            raise FakeEmbedderError(f"scripted failure {count} of {self.fail_first}")
        if self._fail_on is not None:
            for text in batch:
                if self._fail_on.search(text):
                    raise FakeEmbedderError(
                        f"scripted failure: a text matches {self._fail_on.pattern!r}"
                    )
        vectors = []
        tokens = 0
        for text in batch:
            words = word_tokens(text)
            tokens += len(words)
            vectors.append(self.vector(words))
        return Embedded(vectors=vectors, input_tokens=tokens)

    def vector(self, words: Sequence[str]) -> list[float]:
        """The unit vector of `words` (all zeros when there are none)."""
        sums = [0.0] * self.dimensions
        for word in words:
            digest = hashlib.sha256(word.encode("utf-8")).digest()
            bucket = int.from_bytes(digest[:8], "little") % self.dimensions
            sums[bucket] += 1.0 if digest[8] & 1 else -1.0
        norm = math.sqrt(math.fsum(value * value for value in sums))
        if norm == 0.0:
            return sums
        return [value / norm for value in sums]

    async def aclose(self) -> None:
        """A script holds nothing to release."""

    def calls(self) -> list[tuple[str, ...]]:
        """The texts of every `embed` call this name has received in this process, in order."""
        return _log.calls(self.name)

    def call_count(self) -> int:
        """How many `embed` calls this name has received in this process."""
        return _log.count(self.name)

    def reset(self) -> None:
        """Forget the call log (and so the `fail_first` count) of this name."""
        _log.reset(self.name)
