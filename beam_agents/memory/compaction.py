"""Tier-1 compaction: keeping a key's working memory under its caps.

A compactor runs synchronously inside a memory write (the facade calls it
at the soft cap and before refusing a write at the hard cap), so it cannot
await anything: no model, no store, no clock. It sees the facade itself and
mutates only through its guarded API, which keeps accounting exact. It goes
in `AgentConfig.compactor`; the model-written summary of tier 2
(`SummarizeCompactor`) is a different thing in a different field, and
`check_compactor` says so to whoever mixes them up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from beam_agents.errors import ConfigurationError

if TYPE_CHECKING:
    from beam_agents.memory.facade import Memory

__all__ = ["Compactor", "DropOldestCompactor", "check_compactor"]


@runtime_checkable
class Compactor(Protocol):
    """Tier 1: frees working memory inside a write, when the facade asks it to.

    Cap enforcement is suspended while `compact` runs, so its own writes
    cannot re-trigger it. Whatever it raises propagates unchanged.
    """

    def compact(self, memory: Memory) -> None:
        """Free space in `memory` through its public API."""
        ...


@dataclass(frozen=True, slots=True)
class DropOldestCompactor:
    """Evict least-recently-used entries until memory is at most `target_bytes`.

    Deterministic by construction: it reads only the staged entries (through
    `keys()` and `entry_size()`, which never re-stamp) and its frozen
    configuration, so a replayed activation evicts the identical set.

    Two kinds of entry are never evicted. Keys starting with one of
    `protected_prefixes` are ones the agent cannot do without, say a profile
    it would otherwise rebuild on every event; if only protected entries
    remain, the facade's hard cap refuses the write instead. The default,
    `("__langgraph__/",)`, protects the LangGraph adapter's checkpoint: the
    graph's state, which a suspended graph re-runs from when its answer
    comes; evicting it would lose the conversation and make the resumed run
    diverge from the one that asked. A tuple of your own replaces the
    default: keep `"__langgraph__/"` in it if you run a graph. And the most
    recently used entry is kept: after a write it is the value the agent
    just stored, which must still be there when the agent reads it back.
    """

    target_bytes: int = 524_288
    protected_prefixes: tuple[str, ...] = ("__langgraph__/",)

    def __post_init__(self) -> None:
        if type(self.target_bytes) is not int or self.target_bytes < 0:
            raise ConfigurationError(
                "DropOldestCompactor.target_bytes",
                f"must be a non-negative int, got {self.target_bytes!r}",
            )
        prefixes = self.protected_prefixes
        if isinstance(prefixes, str) or not all(isinstance(p, str) for p in prefixes):
            raise ConfigurationError(
                "DropOldestCompactor.protected_prefixes",
                f"must be a tuple of str, got {prefixes!r}",
            )
        object.__setattr__(self, "protected_prefixes", tuple(prefixes))

    def compact(self, memory: Memory) -> None:
        """Delete LRU entries, skipping protected ones, down to `target_bytes`."""
        if memory.size_bytes <= self.target_bytes:
            return
        protected = self.protected_prefixes
        candidates = memory.keys()[:-1]
        for key in candidates:
            if protected and key.startswith(protected):
                continue
            memory.delete(key)
            if memory.size_bytes <= self.target_bytes:
                return


def check_compactor(compactor: object) -> None:
    """Refuse anything `AgentConfig.compactor` cannot call, saying where it belongs."""
    if compactor is None or isinstance(compactor, Compactor):
        return
    kind = type(compactor).__name__
    if hasattr(compactor, "summarize"):
        problem = (
            f"a {kind} is tier-2 compaction, run once after the agent returns: pass it "
            "as AgentConfig.summarizer. compactor takes a tier-1 Compactor, whose "
            "compact(memory) runs inside memory writes at the caps, or None"
        )
    else:
        problem = (
            "must be a tier-1 Compactor (compact(memory), run inside memory writes at "
            f"the caps) or None for strict overflow, got {kind}"
        )
    raise ConfigurationError("AgentConfig.compactor", problem)
