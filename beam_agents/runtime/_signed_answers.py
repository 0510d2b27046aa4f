"""Answers under a signing key: verified before they reach a key's state.

The DoFn hands every answer here when `AgentConfig.answer_signing_key` is
set. One without a valid signature is dead-lettered (`unsigned_answer`,
`bad_answer_signature`) with its payload and touches no state; a verified
one resumes the suspension with the answer text only, and the approver it
was signed for is written into the `resumed` lifecycle record.
"""

from __future__ import annotations

from beam_agents.answer_signing import AnswerRefused, open_answer
from beam_agents.runtime import errors as reasons
from beam_agents.runtime._activation import Activator, Output
from beam_agents.runtime._cells import KeyCells

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
    return activator.on_answer(
        entity_key, intent_id, signed.answer, element_time_ms, cells, signed.approver
    )
