"""Answers under a signing key: verified before they reach a key's state.

The DoFn hands every answer here when `AgentConfig.answer_signing_key` is
set. One without a valid signature is dead-lettered (`unsigned_answer`,
`bad_answer_signature`) with its payload and touches no state; a verified
one resumes the suspension with the answer text only, and the approver it
was signed for is written into the `resumed` lifecycle record.
"""

from __future__ import annotations

import dataclasses

from apache_beam.pvalue import TaggedOutput

from beam_agents.answer_signing import AnswerRefused, open_answer
from beam_agents.runtime import errors as reasons
from beam_agents.runtime._activation import Activator, Output
from beam_agents.runtime._cells import KeyCells
from beam_agents.runtime.lifecycle import LIFECYCLE_TAG, RESUMED, LifecycleEvent

__all__ = ["on_signed_answer"]


def on_signed_answer(
    activator: Activator,
    key: bytes,
    entity_key: bytes,
    intent_id: str,
    payload: bytes,
    element_time_ms: int,
    cells: KeyCells,
) -> list[Output]:
    """Verify, then resume; a refused answer is one dead letter and nothing else."""
    try:
        signed = open_answer(key, entity_key, intent_id, payload)
    except AnswerRefused as refused:
        reason = reasons.UNSIGNED_ANSWER if refused.unsigned else reasons.BAD_ANSWER_SIGNATURE
        return activator.emit.refusal(entity_key, reason, refused.detail, element_time_ms, payload)
    out = activator.on_answer(entity_key, intent_id, signed.answer, element_time_ms, cells)
    return [_with_approver(o, intent_id, signed.approver) for o in out]


def _with_approver(output: Output, intent_id: str, approver: str) -> Output:
    """The `resumed` record of this answer with detail `INTENT_ID by APPROVER`."""
    if not isinstance(output, TaggedOutput) or output.tag != LIFECYCLE_TAG:
        return output
    event = output.value
    if not isinstance(event, LifecycleEvent) or event.kind != RESUMED:
        return output
    if event.detail != intent_id:
        return output
    return TaggedOutput(
        LIFECYCLE_TAG, dataclasses.replace(event, detail=f"{intent_id} by {approver}")
    )
