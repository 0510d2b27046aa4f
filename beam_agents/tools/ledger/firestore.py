"""The Firestore ledger: a document per intent, created with a precondition.

The collection is the store's with `-tool-ledger` appended, so the store's
queries and scans never see ledger documents; the document id is the intent
id itself (a canonical UUID: a valid id as it is). A first claim is
`create()`, which fails if the document exists; taking over an expired lease,
recording and releasing are writes preconditioned on the `last_update_time`
just read, so a write that lost a race fails whole and is decided again on
a fresh read. No transaction: one or two round trips per step, and racing
claimers never abort one another's unrelated work.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Final

from google.api_core import exceptions as api_errors
from google.cloud.firestore_v1 import DELETE_FIELD
from google.cloud.firestore_v1.async_document import AsyncDocumentReference

from beam_agents.memory.stores.errors import StoreError, StoreUnavailableError
from beam_agents.memory.stores.firestore import FirestoreMemoryStore
from beam_agents.memory.stores.google_errors import RETRYABLE_GOOGLE_ERRORS
from beam_agents.tools.ledger.base import (
    Busy,
    Claimed,
    ClaimOutcome,
    Clock,
    Recorded,
    ToolLedger,
    wall_clock_ms,
)

__all__ = ["COLLECTION_SUFFIX", "FirestoreToolLedger"]

COLLECTION_SUFFIX: Final = "-tool-ledger"
_ROUNDS: Final = 16
_TIMEOUT_S: Final = 10.0
_LOST: Final = (api_errors.FailedPrecondition, api_errors.NotFound, api_errors.AlreadyExists)
"""What a preconditioned write raises when the document changed since it was read."""


class FirestoreToolLedger(ToolLedger):
    """A `ToolLedger` in the collection `<store collection>-tool-ledger`."""

    def __init__(self, store: FirestoreMemoryStore, *, clock: Clock = wall_clock_ms) -> None:
        super().__init__(clock=clock)
        self._store = store
        self.collection_id = store.collection_id + COLLECTION_SUFFIX

    def __repr__(self) -> str:
        return f"FirestoreToolLedger({self._store.project}/{self.collection_id})"

    def _ref(self, intent_id: str) -> AsyncDocumentReference:
        return self._store.client().collection(self.collection_id).document(intent_id)

    async def _claim(self, intent_id: str, token: str, lease_ms: int) -> ClaimOutcome:
        ref = self._ref(intent_id)
        for _ in range(_ROUNDS):
            now = self.now_ms()
            lease = {"token": token, "until_ms": now + lease_ms}
            with self._errors("claim"), contextlib.suppress(*_LOST):
                await ref.create(lease, timeout=_TIMEOUT_S)
                return Claimed(intent_id, token)
            with self._errors("claim"):
                snapshot = await ref.get(timeout=_TIMEOUT_S)
            data: dict[str, Any] = snapshot.to_dict() or {}
            if not snapshot.exists:
                continue
            if "result" in data:
                return Recorded(intent_id, bytes(data["result"]))
            if int(data.get("until_ms", 0)) > now:
                return Busy(intent_id, int(data["until_ms"]) - now)
            with self._errors("claim"), contextlib.suppress(*_LOST):
                await ref.update(lease, option=self._as_read(snapshot), timeout=_TIMEOUT_S)
                return Claimed(intent_id, token)
        raise StoreUnavailableError(f"{self!r}: claim of {intent_id} kept racing; try again")

    async def _record(self, claim: Claimed, result: bytes) -> bool:
        ref = self._ref(claim.intent_id)
        for _ in range(_ROUNDS):
            with self._errors("record"):
                snapshot = await ref.get(timeout=_TIMEOUT_S)
            data: dict[str, Any] = snapshot.to_dict() or {}
            if not snapshot.exists or data.get("token") != claim.token or "result" in data:
                return False
            change = {"result": result, "token": DELETE_FIELD}
            with self._errors("record"), contextlib.suppress(*_LOST):
                await ref.update(change, option=self._as_read(snapshot), timeout=_TIMEOUT_S)
                return True
        raise StoreUnavailableError(f"{self!r}: record of {claim.intent_id} kept racing")

    async def _release(self, claim: Claimed) -> None:
        ref = self._ref(claim.intent_id)
        for _ in range(_ROUNDS):
            with self._errors("release"):
                snapshot = await ref.get(timeout=_TIMEOUT_S)
            data: dict[str, Any] = snapshot.to_dict() or {}
            if not snapshot.exists or data.get("token") != claim.token or "result" in data:
                return
            with self._errors("release"), contextlib.suppress(*_LOST):
                await ref.delete(option=self._as_read(snapshot), timeout=_TIMEOUT_S)
                return

    def _as_read(self, snapshot: Any) -> Any:
        """A write option that holds only if the document is still the version read."""
        return self._store.client().write_option(last_update_time=snapshot.update_time)

    async def close(self) -> None:
        await self._store.close()

    @contextlib.contextmanager
    def _errors(self, operation: str) -> Iterator[None]:
        try:
            yield
        except _LOST:
            raise
        except RETRYABLE_GOOGLE_ERRORS as exc:
            raise StoreUnavailableError(
                f"{self!r} unavailable during {operation}: {type(exc).__name__}"
            ) from None
        except api_errors.GoogleAPIError as exc:
            raise StoreError(f"{self!r}: {operation} failed: {type(exc).__name__}") from None
