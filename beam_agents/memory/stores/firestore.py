"""Firestore backend: one document per (entity, key), one preconditioned commit per flush.

Document ids. A Firestore id cannot hold an arbitrary record key (`/` splits
paths, `.` and `..` are refused, `__x__` is reserved, 1500 bytes at most) and
a reversible encoding of a 1 KiB entity key plus a 1 KiB record key would not
fit. So the id is the SHA-256 of the length-prefixed entity key followed by
the UTF-8 record key: 64 hex characters, never reserved, and distinct inputs
collide only with a SHA-256 collision. The length prefix makes the pre-image
itself unambiguous (entity `a` + key `bc` never hashes the bytes of entity
`ab` + key `c`). The entity (bytes) and the key (string) are stored as fields,
and every read checks them, so even a collision could not return another
entity's row silently.

Search is `entity == E AND key >= prefix AND key < successor(prefix) ORDER BY
key LIMIT n`. Firestore orders strings by their UTF-8 bytes, which is code
point order, and the successor increments the prefix's last code point
(skipping the surrogate block, dropping trailing U+10FFFF). A `"\\uffff"`
sentinel would be wrong: every astral character (emoji, U+10000 and up)
sorts after U+FFFF. In production the query needs the composite index
(entity ASC, key ASC) on the collection, which `provision()` creates; the
emulator does not enforce indexes, so there `provision()` is a no-op.

Size. A document holds at most 1 MiB, less than the contract's largest value
(a whole working-memory blob plus headroom). An envelope that does not fit
inline is split into ~1 MB chunk documents in the main document's `chunks`
subcollection, named after the envelope's SHA-256 and written in the same
commit; the main document records the digest, so a reader that races a
rewrite notices and reads again. Collection queries never see the chunks.
One commit carries at most 10 MiB, so a flush over 9 MiB is refused with
`InvalidRecordError` before anything is sent.

`upsert_many` is one atomic commit guarded by preconditions, not a
transaction. A transaction costs three round trips (begin, read, commit) and
holds locks that make racing writers abort each other; instead the current
seqs come from one batched read, or from this instance's cache of the update
time and seq of every document it wrote or read (a key's activations run on
one worker, so its rows are usually cached), and the commit requires each
written document to be exactly that version (`last_update_time`) or still
absent (`create`). Update times are unique per document version, so a
precondition that holds proves the guard read the seq that is stored: the
guard stays atomic at one round trip per flush when cached, two otherwise.
A commit that loses a race fails whole; the racing documents are re-read and
the commit retried with exponential backoff and full jitter (I/O timing
only) until the deadline, past which `StoreContentionError` says it was
contention, not an outage. Every call is bounded by `timeout_s` (the
client's own retries would otherwise ride out an outage for a minute).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import random
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Iterator
from typing import Any, Final, Self, TypeVar

from google.api_core import exceptions as api_errors
from google.cloud.firestore_v1 import DELETE_FIELD, AsyncClient, FieldFilter
from google.cloud.firestore_v1.async_collection import AsyncCollectionReference
from google.cloud.firestore_v1.async_document import AsyncDocumentReference
from google.cloud.firestore_v1.base_document import DocumentSnapshot
from google.cloud.firestore_v1.field_path import FieldPath

from beam_agents.memory.stores._firestore_layout import (
    NO_VECTOR,
    Races,
    Row,
    Version,
    chunk_refs,
    guard,
    stage_chunks,
    vector_fields,
    vector_size,
)
from beam_agents.memory.stores._inflight import finish_in_flight
from beam_agents.memory.stores._nearest import rank_neighbours
from beam_agents.memory.stores.base import (
    MAX_SEARCH_LIMIT,
    Embedding,
    MemoryRecord,
    MemoryStore,
    Neighbour,
    prefix_upper_bound,
)
from beam_agents.memory.stores.envelope import decode_record, encode_record
from beam_agents.memory.stores.errors import (
    InvalidRecordError,
    InvalidStoreURIError,
    StoreContentionError,
    StoreError,
    StoreNotProvisionedError,
    StoreUnavailableError,
)
from beam_agents.memory.stores.google_errors import RETRYABLE_GOOGLE_ERRORS
from beam_agents.memory.stores.uri import StoreURI

__all__ = ["MAX_DOCUMENT_BYTES", "FirestoreMemoryStore", "document_id"]

_log = logging.getLogger(__name__)
_T = TypeVar("_T")

MAX_DOCUMENT_BYTES: Final = 1_048_576
"""Firestore's document size limit (1 MiB), counted by its storage-size rules."""

_EMULATOR_ENV: Final = "FIRESTORE_EMULATOR_HOST"
_SCAN_PAGE: Final = 300
_ROLLBACK_GRACE_S: Final = 1.0
_INDEX_TIMEOUT_S: Final = 600.0
_CHUNK_BYTES: Final = 1_000_000
_CHUNK_READ_ATTEMPTS: Final = 5
_MAX_COMMIT_BYTES: Final = 9 * 1_048_576
_VERSION_CACHE: Final = 8192
_BACKOFF_BASE_S: Final = 0.005
_BACKOFF_CAP_S: Final = 0.5
_CLEARED: Final[dict[str, Any]] = dict.fromkeys(("rec", "digest", "chunks"), DELETE_FIELD)
"""A rewrite replaces the whole layout: fields the new one does not set are removed."""
_LOST_RACE: Final[tuple[type[BaseException], ...]] = (
    api_errors.FailedPrecondition,  # the document changed since its version was read
    api_errors.AlreadyExists,  # a document read as absent was created meanwhile
    api_errors.Aborted,  # the server gave up on a contended write
)
_jitter = random.Random()  # noqa: S311 (timing jitter, not a secret)
"""Backoff jitter: times retries only, never decides what is written or returned."""


def document_id(entity_key: bytes, key: str) -> str:
    """The document id of one record: SHA-256 of the length-prefixed entity plus the key."""
    digest = hashlib.sha256(len(entity_key).to_bytes(4, "big") + entity_key + key.encode())
    return digest.hexdigest()


def document_size(collection: str, doc_id: str, entity_key: bytes, key: str, rec: bytes) -> int:
    """A document's size by Firestore's storage-size rules (name, fields, 32 bytes overhead)."""
    name = len(collection.encode()) + 1 + len(doc_id) + 1 + 16
    fields = (
        (len("entity") + 1 + len(entity_key))
        + (len("key") + 1 + len(key.encode()) + 1)
        + (len("seq") + 1 + 8)
        + (len("rec") + 1 + len(rec))
    )
    return name + fields + 32


class FirestoreMemoryStore(MemoryStore):
    """Long-term store on a Firestore collection (`firestore://project/collection[?database=]`)."""

    def __init__(
        self,
        *,
        project: str,
        collection: str,
        database: str = "(default)",
        timeout_s: float = 10.0,
    ) -> None:
        if not project or not collection or "/" in collection:
            raise InvalidStoreURIError(
                f"firestore needs a project and a top-level collection, got {project!r}, "
                f"{collection!r}"
            )
        if timeout_s <= 0:
            raise InvalidStoreURIError(f"firestore timeout_s must be positive, got {timeout_s}")
        self.project = project
        self.collection_id = collection
        self.database = database or "(default)"
        self._timeout_s = timeout_s
        self._client: AsyncClient | None = None
        self._versions: OrderedDict[str, Version] = OrderedDict()
        self._orphans: set[asyncio.Future[Any]] = set()

    @classmethod
    def from_uri(cls, uri: StoreURI) -> Self:
        """Build from a parsed `firestore://project/collection` URI (no I/O)."""
        return cls(project=uri.project, collection=uri.collection, database=uri.database)

    def __repr__(self) -> str:
        return f"FirestoreMemoryStore({self.project}/{self.database}/{self.collection_id})"

    def client(self) -> AsyncClient:
        """The client, created on first use; shared with the tool ledger."""
        return self._db()

    def _db(self) -> AsyncClient:
        # Created on first use so its gRPC channel binds to the caller's loop.
        if self._client is None:
            self._client = AsyncClient(project=self.project, database=self.database)
        return self._client

    def _collection(self) -> AsyncCollectionReference:
        return self._db().collection(self.collection_id)

    def _ref(self, entity_key: bytes, key: str) -> AsyncDocumentReference:
        return self._collection().document(document_id(entity_key, key))

    async def _load(self, entity_key: bytes, key: str) -> MemoryRecord | None:
        """The entity's record under `key`, or None."""
        raw = await self.read_raw(entity_key, key)
        return None if raw is None else decode_record(raw)

    async def read_raw(self, entity_key: bytes, key: str) -> bytes | None:
        """The envelope bytes stored for (entity_key, key), reassembled if chunked.

        Checks nothing: `load` has checked the keys, and a test passes valid ones.
        """
        return await self._bounded("load", self._read_raw(entity_key, key))

    async def _read_raw(self, entity_key: bytes, key: str) -> bytes | None:
        snapshot = await self._ref(entity_key, key).get()
        return await self._envelope(snapshot, entity_key, key)

    async def _search(self, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        """Up to `limit` records whose key starts with `prefix`, by key, in one indexed query."""
        return await self._range("search", entity_key, prefix, limit)

    async def _candidates(self, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        """Up to `limit` records under `prefix`, in queries of `MAX_SEARCH_LIMIT` documents.

        Each page resumes after the last key read and is bounded by
        `timeout_s` on its own, so a large bound never rides one long stream.
        """
        return await self._range("candidates", entity_key, prefix, limit)

    async def _range(
        self, what: str, entity_key: bytes, prefix: str, limit: int
    ) -> list[MemoryRecord]:
        query = self._collection().where(filter=FieldFilter("entity", "==", entity_key))
        query = query.where(filter=FieldFilter("key", ">=", prefix))
        upper = prefix_upper_bound(prefix)
        if upper is not None:
            query = query.where(filter=FieldFilter("key", "<", upper))
        query = query.order_by("key")

        async def run(page: Any) -> tuple[list[bytes], str | None, int]:
            found, last, count = [], None, 0
            async for snapshot in page.stream():
                count, last = count + 1, snapshot.get("key")
                raw = await self._envelope(snapshot, entity_key, last)
                if raw is not None:
                    found.append(raw)
            return found, last, count

        records: list[MemoryRecord] = []
        after: str | None = None
        while len(records) < limit:
            size = min(limit - len(records), MAX_SEARCH_LIMIT)
            page = query.limit(size) if after is None else query.start_after({"key": after})
            raws, after, count = await self._bounded(what, run(page.limit(size)))
            records += [decode_record(raw) for raw in raws]
            if count < size or after is None:
                break
        return records

    cross_entity_index = "Firestore vector search (find_nearest, COSINE)"

    async def _nearest(self, query: Embedding, k: int, prefix: str) -> list[Neighbour]:
        """Across entities: `find_nearest` on the `embedding` field, pre-filtered by embedder.

        In production it needs the composite vector index `provision`
        creates; the prefix is applied to what the index returns, so a
        narrow prefix can return fewer than `k` records.
        """
        from google.cloud.firestore_v1.base_vector_query import DistanceMeasure
        from google.cloud.firestore_v1.vector import Vector

        base = self._collection().where(filter=FieldFilter("model", "==", query.model_id))
        base = base.where(filter=FieldFilter("dims", "==", query.dimensions))
        vector_query = base.find_nearest(
            vector_field="embedding",
            query_vector=Vector(list(query.values())),
            distance_measure=DistanceMeasure.COSINE,
            limit=k,
        )

        async def run() -> list[tuple[bytes, bytes]]:
            found = []
            async for snapshot in vector_query.stream():
                entity_key, key = snapshot.get("entity"), snapshot.get("key")
                if isinstance(entity_key, bytes) and isinstance(key, str):
                    raw = await self._envelope(snapshot, entity_key, key)
                    if raw is not None:
                        found.append((entity_key, raw))
            return found

        rows = await self._bounded("nearest", run())
        return rank_neighbours(query, [(e, decode_record(raw)) for e, raw in rows], k, prefix)

    async def _upsert_many(self, entity_key: bytes, records: list[MemoryRecord]) -> list[bool]:
        """Guard and apply every record in one atomic commit: all of them land, or none.

        The guard is optimistic: the seqs come from this instance's version
        cache (the update time and seq of documents it wrote or read) or from
        one batched read, and the commit carries a precondition per written
        document (that exact update time, or "does not exist"). A lost race
        fails the whole commit, the racing documents are re-read and the
        commit retried with backoff until the deadline.
        """
        rows = [self._layout(entity_key, record) for record in records]
        total = sum(row.size for row in rows)
        if total > _MAX_COMMIT_BYTES:
            raise InvalidRecordError(
                f"this flush writes {total} bytes to Firestore, over the {_MAX_COMMIT_BYTES}"
                "-byte budget of one commit (Firestore caps a commit at 10 MiB)"
            )
        races = Races()
        return await self._bounded("upsert", self.guarded_commit(rows, races), races)

    async def guarded_commit(self, rows: list[Row], races: Races) -> list[bool]:
        """Commit `rows` under their preconditions, retrying lost races inside the deadline.

        Backoff is exponential with full jitter so racing writers spread out
        instead of colliding again in lockstep. The jitter only times I/O:
        what is written, and what each call returns, never depends on it.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout_s - _ROLLBACK_GRACE_S
        while True:
            try:
                return await self._commit_once(rows)
            except _LOST_RACE:
                for row in rows:
                    self._versions.pop(row.doc_id, None)
                ceiling = min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**races.lost)
                races.lost += 1
                delay = _jitter.uniform(0.0, ceiling)
                if loop.time() + delay >= deadline:
                    raise StoreContentionError(self._contention_message(races)) from None
                await asyncio.sleep(delay)

    async def _commit_once(self, rows: list[Row]) -> list[bool]:
        """One read (only of versions not cached) and one preconditioned commit."""
        client = self._db()
        collection = client.collection(self.collection_id)
        versions = await self._versions_of(client, collection, rows)
        applied, writes = guard(rows, versions)
        if not writes:
            return applied
        batch = client.batch()
        refs = {doc_id: collection.document(doc_id) for doc_id in writes}
        # Main documents first: write result i is then main document i.
        for doc_id, row in writes.items():
            version = versions[doc_id]
            if version is None:
                batch.create(refs[doc_id], row.fields)
            else:
                # Remove only what the stored layout has and the new one lacks.
                was_chunked = bool(version.chunks)
                fields = (
                    row.fields if was_chunked == bool(row.chunks) else {**_CLEARED, **row.fields}
                )
                if "embedding" not in fields:
                    fields = {**NO_VECTOR, **fields}
                option = client.write_option(last_update_time=version.update_time)
                batch.update(refs[doc_id], fields, option=option)
        chunk_paths = {
            doc_id: stage_chunks(client, batch, refs[doc_id], row, versions[doc_id])
            for doc_id, row in writes.items()
        }
        results = await finish_in_flight(batch.commit())
        for (doc_id, row), result in zip(writes.items(), results, strict=False):
            version = Version(result.update_time, row.fields["seq"], chunk_paths[doc_id])
            self._remember(doc_id, version)
        return applied

    async def _versions_of(
        self, client: AsyncClient, collection: AsyncCollectionReference, rows: list[Row]
    ) -> dict[str, Version | None]:
        """Each row's stored version: cached, else read in one round trip (None: absent)."""
        versions: dict[str, Version | None] = {}
        unknown: list[AsyncDocumentReference] = []
        for row in rows:
            if row.doc_id in versions:
                continue
            cached = self._versions.get(row.doc_id)
            versions[row.doc_id] = cached
            if cached is None:
                unknown.append(collection.document(row.doc_id))
        if unknown:
            async for snapshot in client.get_all(unknown):
                if snapshot.exists:
                    versions[snapshot.id] = Version(
                        snapshot.update_time,
                        snapshot.get("seq"),
                        tuple(ref.path for ref in chunk_refs(snapshot.reference, snapshot)),
                    )
        return versions

    def _remember(self, doc_id: str, version: Version) -> None:
        versions = self._versions
        versions[doc_id] = version
        versions.move_to_end(doc_id)
        if len(versions) > _VERSION_CACHE:
            versions.popitem(last=False)

    def _contention_message(self, races: Races) -> str:
        return (
            f"firestore {self.project}/{self.collection_id}: upsert lost the race for its "
            f"record(s) to concurrent writers {races.lost} time(s) within {self._timeout_s:g} s "
            "(contention, not an outage: the store answered every attempt)"
        )

    def _layout(self, entity_key: bytes, record: MemoryRecord) -> Row:
        """The documents one record becomes: inline if it fits 1 MiB, else chunked."""
        doc_id = document_id(entity_key, record.key)
        rec = encode_record(record)
        fields: dict[str, Any] = {"entity": entity_key, "key": record.key, "seq": record.seq}
        fields.update(vector_fields(record.embedding))
        size = document_size(self.collection_id, doc_id, entity_key, record.key, rec)
        size += vector_size(record.embedding)
        if size <= MAX_DOCUMENT_BYTES:
            return Row(doc_id, {**fields, "rec": rec}, [], size)
        digest = hashlib.sha256(rec).hexdigest()
        pieces = [rec[i : i + _CHUNK_BYTES] for i in range(0, len(rec), _CHUNK_BYTES)]
        chunks = [(f"{digest[:32]}-{i}", piece) for i, piece in enumerate(pieces)]
        fields.update(digest=digest, chunks=len(chunks))
        return Row(doc_id, fields, chunks, size + 512 * len(chunks))

    async def _envelope(
        self, snapshot: DocumentSnapshot[Any], entity_key: bytes, key: str
    ) -> bytes | None:
        """The envelope in a main document, only if it really belongs to (entity_key, key).

        A chunked envelope is read after its main document; a concurrent
        rewrite may replace the chunks in between, which the digest detects,
        and the read starts over from the main document.
        """
        for _ in range(_CHUNK_READ_ATTEMPTS):
            if not snapshot.exists:
                return None
            data = snapshot.to_dict() or {}
            if data.get("entity") != entity_key or data.get("key") != key:
                return None
            rec = data.get("rec")
            if isinstance(rec, bytes):
                return rec
            refs = chunk_refs(snapshot.reference, snapshot)
            pieces = {s.id: s.get("data") async for s in self._db().get_all(refs) if s.exists}
            joined = b"".join(pieces.get(ref.id, b"") for ref in refs)
            if hashlib.sha256(joined).hexdigest() == data.get("digest"):
                return joined
            snapshot = await snapshot.reference.get()
        raise StoreUnavailableError(
            f"firestore {self.collection_id}: record {key!r} kept changing while being read"
        )

    async def scan(self) -> AsyncIterator[tuple[bytes, MemoryRecord]]:
        """Every row of the collection, paged by document id so no stream outlives a timeout."""
        base = self._collection().order_by(FieldPath.document_id()).limit(_SCAN_PAGE)
        last: DocumentSnapshot[Any] | None = None
        while True:
            page = base if last is None else base.start_after(last)

            async def run(query: Any = page) -> tuple[list[tuple[bytes, bytes]], Any, int]:
                snapshots = [snapshot async for snapshot in query.stream()]
                rows = []
                for snapshot in snapshots:
                    entity_key, key = snapshot.get("entity"), snapshot.get("key")
                    if isinstance(entity_key, bytes) and isinstance(key, str):
                        raw = await self._envelope(snapshot, entity_key, key)
                        if raw is not None:
                            rows.append((entity_key, raw))
                return rows, (snapshots[-1] if snapshots else None), len(snapshots)

            rows, last, count = await self._bounded("scan", run())
            for entity_key, raw in rows:
                yield entity_key, decode_record(raw)
            if count < _SCAN_PAGE:
                return

    async def provision(self) -> None:
        """Create the composite index (entity ASC, key ASC) search needs; idempotent.

        The emulator has no admin API and does not enforce indexes, so with
        `FIRESTORE_EMULATOR_HOST` set this does nothing. In production it
        waits until the index is ready, so a provisioned store can search.
        """
        if os.environ.get(_EMULATOR_ENV):
            _log.info("Firestore emulator: indexes are not enforced, nothing to provision")
            return
        from google.cloud.firestore_admin_v1.services.firestore_admin import (
            FirestoreAdminAsyncClient,
        )
        from google.cloud.firestore_admin_v1.types import Index

        admin = FirestoreAdminAsyncClient()
        parent = (
            f"projects/{self.project}/databases/{self.database}"
            f"/collectionGroups/{self.collection_id}"
        )
        index = Index(
            query_scope=Index.QueryScope.COLLECTION,
            fields=[
                Index.IndexField(field_path="entity", order=Index.IndexField.Order.ASCENDING),
                Index.IndexField(field_path="key", order=Index.IndexField.Order.ASCENDING),
            ],
        )
        with self._translate("provision"):
            try:
                operation = await admin.create_index(
                    parent=parent, index=index, timeout=self._timeout_s
                )
            except api_errors.AlreadyExists:
                return
            await operation.result(timeout=_INDEX_TIMEOUT_S)  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        """Close the client's channel and drop any abandoned (timed-out) call."""
        for orphan in list(self._orphans):
            orphan.cancel()
        self._versions.clear()
        client, self._client = self._client, None
        if client is not None:
            # AsyncClient has no public close; its gRPC transport does.
            with contextlib.suppress(Exception):
                await client._firestore_api.transport.close()

    async def _bounded(self, what: str, operation: Awaitable[_T], races: Races | None = None) -> _T:
        """Run one call under `timeout_s`; past it, cancel and report the store unavailable.

        A cancelled call may still be unwinding in the client (its own
        retries against a dead server would run for a minute): it gets a
        short grace, then is cancelled again and left to finish on its own.
        A call that finishes within the grace, because its commit was
        already in flight, reports what it did: rows that were written are
        never reported as not written, whether the deadline or the caller
        cancelled it.
        """
        task = asyncio.ensure_future(operation)
        interrupted = False
        try:
            await asyncio.wait({task}, timeout=self._timeout_s)
        except asyncio.CancelledError:
            interrupted = True
        if not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=_ROLLBACK_GRACE_S)
        if task.done() and not task.cancelled():
            current = asyncio.current_task()
            if interrupted and current is not None:
                current.uncancel()  # the call's outcome stands
            with self._translate(what):
                return task.result()
        if not task.done():
            task.cancel()
            self._orphans.add(task)
            task.add_done_callback(self._orphans.discard)
        if interrupted:
            raise asyncio.CancelledError
        if races is not None and races.lost:
            raise StoreContentionError(self._contention_message(races))
        raise StoreUnavailableError(
            f"firestore {self.project}/{self.collection_id} unavailable during {what}: "
            f"no answer within {self._timeout_s:g} s"
        )

    @contextlib.contextmanager
    def _translate(self, what: str) -> Iterator[None]:
        """Map Google API errors onto store errors: retryable, not provisioned, or neither."""
        where = f"firestore {self.project}/{self.database}/{self.collection_id}"
        try:
            yield
        except (api_errors.NotFound, api_errors.FailedPrecondition) as exc:
            # A missing database, or a query whose composite index does not exist.
            raise StoreNotProvisionedError(
                f"{where}: {what} failed ({exc.message}); run `beam-agents provision`"
            ) from exc
        except RETRYABLE_GOOGLE_ERRORS as exc:
            raise StoreUnavailableError(
                f"{where} unavailable during {what}: {type(exc).__name__}"
            ) from exc
        except api_errors.GoogleAPIError as exc:
            raise StoreError(f"{where}: {what} failed: {type(exc).__name__}: {exc}") from exc
