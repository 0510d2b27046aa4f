"""What the triage agent decided about one alert: a typed record, a Beam row downstream.

The pipeline runs the agent with `RunAgent(..., output_type=Decision)`, so
its outputs are `(service, Decision)` with a Beam schema: a later step
groups by `priority`, filters on `decision` or writes rows to BigQuery
without parsing anything. Beam rows hold flat fields, so the incidents
recall showed are two parallel lists (`recalled_keys`, `recalled_scores`)
rather than a list of objects.

The JSON name of `priority` is `class`, the name every outputs line, label
and eval scorer has always used for it (`field:class`); in Python and in
Beam it is `priority`, since `class` is a keyword. `decision_json` writes
a decision as the outputs line it has always been.

Alerts of a storm (`storm`) were decided by one activation: their rows
share its seq, class and decision, and each names the storm's alert ids.

A follow-up (`app.triage.follow_ups`) completes with a `Decision` too: the
row of the case it rechecked (its alert id and class) at the recheck's seq
and due time, whose outcome is `escalated` (or `resolved`, when it found
the case settled). `FOLLOW_UP_OUTCOMES` tells those rows from the alerts'.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, get_args

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from app.triage.alerts import canonical_json
from app.triage.prompts import History, Priority

__all__ = [
    "FOLLOW_UP_OUTCOMES",
    "OUTCOMES",
    "AlertOutcome",
    "Decision",
    "FollowUpOutcome",
    "Outcome",
    "decision_json",
]

AlertOutcome: TypeAlias = Literal["paged", "denied", "ticket", "remembered"]
"""What the agent did about an alert: paged after an approval, noted a denial, opened a
ticket, or remembered."""
FollowUpOutcome: TypeAlias = Literal["escalated", "resolved"]
"""What a recheck did: escalated a case still open, or found it settled."""
Outcome: TypeAlias = Literal[AlertOutcome, FollowUpOutcome]
OUTCOMES: Final[tuple[Outcome, ...]] = get_args(Outcome)
FOLLOW_UP_OUTCOMES: Final[tuple[FollowUpOutcome, ...]] = get_args(FollowUpOutcome)


class Decision(BaseModel):
    """One triaged alert (or one recheck of its case): its class, what was done and why.

    `history`, `recalled_keys` and `recalled_scores` are None when recall
    is off; with recall on, the two lists have one entry per incident shown
    to the model, most similar first.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    service: str
    alert_id: str
    priority: Priority = Field(
        validation_alias=AliasChoices("class", "priority"), serialization_alias="class"
    )
    decision: Outcome
    reason: str
    note: str
    """The human's answer to the approval of a P1 (paged or denied), or the id the target of
    an escalation answered; else empty."""
    seq: int
    event_time_ms: int
    rehydrated: bool
    """The service's profile was read back from long-term memory for this alert."""
    history: History | None = None
    recalled_keys: list[str] | None = None
    recalled_scores: list[float] | None = None
    storm: list[str] | None = None
    """The alert ids decided together with this one, in arrival order, itself included: a
    storm one activation decided (`coalesce_max`); None when it was decided alone."""

    @model_validator(mode="after")
    def _recall_fields_agree(self) -> Decision:
        """The recall fields come together: all three set (lists of one length), or none."""
        keys, scores = self.recalled_keys, self.recalled_scores
        present = {self.history is not None, keys is not None, scores is not None}
        if len(present) > 1:
            raise ValueError("history, recalled_keys and recalled_scores are set together or not")
        if keys is not None and scores is not None and len(keys) != len(scores):
            raise ValueError(
                f"recalled_keys has {len(keys)} entries and recalled_scores {len(scores)}"
            )
        return self


def decision_json(decision: Decision) -> bytes:
    """The decision as its outputs line: canonical JSON, `recalled` as `{key, score}` objects.

    The fields recall fills are left out when it is off, as they always were,
    and `storm` when the alert was decided alone.
    """
    record = decision.model_dump(
        by_alias=True, exclude={"history", "recalled_keys", "recalled_scores", "storm"}
    )
    if decision.storm is not None:
        record["storm"] = decision.storm
    if decision.history is not None:
        record["history"] = decision.history
        record["recalled"] = [
            {"key": key, "score": score}
            for key, score in zip(
                decision.recalled_keys or (), decision.recalled_scores or (), strict=True
            )
        ]
    return canonical_json(record)
