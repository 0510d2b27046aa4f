"""Per-key token budgets: one entity must not burn the whole model budget.

`AgentConfig(token_budget=TokenBudget(per_key=N, window_ms=W))` refuses a
model call that would start once the key has spent N tokens within the W
milliseconds of event time up to the activation's event time. The refusal
fails the activation as `budget_exceeded`: nothing it staged is committed.

The spend is state, not a counter: SEQ (`SeqState.spend`) holds what each
committed activation of the key spent and at which event time, pruned to
the window, and every commit that writes SEQ writes it. A parked attempt
commits no SEQ of its own: what it spent rides in its `Parked` record
(`spent_tokens`) and is committed by the re-run that completes. A retried bundle or
a replay therefore starts from the same spend and refuses exactly the same
calls. Only calls the provider answers spend: a replay-cache hit was paid
for by the attempt that asked.

A call is checked once, when it is about to start, against the spend of the
calls that answered before it. A re-run of a parked activation reaches the
same call later, when calls started beside it may have answered: checking it
again there would refuse, parked, a call the activation runs in place. So a
call admitted by a parked attempt stays admitted in every re-run of that
activation: its replay-cache key rides in the `Parked` record
(`admitted_calls`) with the spend.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from beam_agents.coders import encode_deterministic
from beam_agents.errors import BeamAgentsError, ConfigurationError
from beam_agents.proto.beam_agents_pb2 import SeqState, TokenSpend

__all__ = ["BudgetExceeded", "Meter", "TokenBudget"]


@dataclass(frozen=True, slots=True)
class TokenBudget:
    """At most `per_key` tokens per entity key within a sliding `window_ms` of event time."""

    per_key: int
    window_ms: int

    def __post_init__(self) -> None:
        for name in ("per_key", "window_ms"):
            value = getattr(self, name)
            if type(value) is not int or value <= 0:
                raise ConfigurationError(
                    f"TokenBudget.{name}", f"must be a positive int, got {value!r}"
                )


class BudgetExceeded(BeamAgentsError):
    """A model call refused by the key's token budget; fails the activation."""


class Meter:
    """One activation's view of its key's spend: what was committed, plus its own calls."""

    __slots__ = ("_admitted", "_budget", "_committed", "_now_ms", "_spent")

    def __init__(
        self,
        budget: TokenBudget,
        seq_state: SeqState | None,
        now_ms: int,
        carried: int = 0,
        admitted: Iterable[str] = (),
    ) -> None:
        self._budget = budget
        self._now_ms = now_ms
        since = now_ms - budget.window_ms
        committed = seq_state.spend if seq_state is not None else ()
        # Entries from event times after this one (an out-of-order event) count too:
        # they were spent, and the window never slides backwards past them.
        self._committed: list[tuple[int, int]] = [
            (s.event_time_ms, s.tokens) for s in committed if s.event_time_ms > since
        ]
        self._spent = carried
        """This activation's spend, with what its parked attempts spent (`carried`)."""
        self._admitted = set(admitted)
        """Keys of the calls admitted in this activation, with its parked attempts'."""

    def spent_in_window(self) -> int:
        return sum(tokens for _, tokens in self._committed) + self._spent

    def check(self, model_id: str) -> None:
        """Raise `BudgetExceeded` when the key has spent its budget in the window."""
        spent = self.spent_in_window()
        if spent >= self._budget.per_key:
            raise BudgetExceeded(
                f"call to {model_id!r} refused: the key spent {spent} of its "
                f"{self._budget.per_key}-token budget in the last {self._budget.window_ms} ms "
                "of event time"
            )

    def admit(self, call_key: str, model_id: str) -> None:
        """Admit the call `call_key` about to start, or raise `BudgetExceeded`.

        A call admitted before, by this attempt or a parked one of this
        activation, stays admitted whatever was spent since.
        """
        if call_key not in self._admitted:
            self.check(model_id)
            self._admitted.add(call_key)

    @property
    def admitted(self) -> list[str]:
        """The admitted calls' keys, sorted (a park carries them to the re-run)."""
        return sorted(self._admitted)

    @property
    def spent(self) -> int:
        """This activation's own spend so far (a park carries it to the re-run)."""
        return self._spent

    def add(self, tokens: int) -> None:
        """Tokens of a call the provider answered for this activation."""
        self._spent += max(tokens, 0)

    def encoded(self, committed_only: bool = False) -> bytes:
        """`SeqState.spend` as bytes to append to SEQ's: the window, with this activation."""
        entries = list(self._committed)
        if self._spent and not committed_only:
            entries.append((self._now_ms, self._spent))
        if not entries:
            return b""
        state = SeqState(spend=[TokenSpend(event_time_ms=t, tokens=n) for t, n in entries])
        return encode_deterministic(state)
