from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MemoryEntry(_message.Message):
    __slots__ = ("key", "value", "last_access_ms")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    LAST_ACCESS_MS_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: bytes
    last_access_ms: int
    def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ..., last_access_ms: _Optional[int] = ...) -> None: ...

class MemoryBlob(_message.Message):
    __slots__ = ("state_schema_version", "entries", "total_value_bytes")
    STATE_SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_VALUE_BYTES_FIELD_NUMBER: _ClassVar[int]
    state_schema_version: int
    entries: _containers.RepeatedCompositeFieldContainer[MemoryEntry]
    total_value_bytes: int
    def __init__(self, state_schema_version: _Optional[int] = ..., entries: _Optional[_Iterable[_Union[MemoryEntry, _Mapping]]] = ..., total_value_bytes: _Optional[int] = ...) -> None: ...

class MemoryDelta(_message.Message):
    __slots__ = ("state_schema_version", "changes", "deleted", "total_value_bytes")
    STATE_SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_VALUE_BYTES_FIELD_NUMBER: _ClassVar[int]
    state_schema_version: int
    changes: _containers.RepeatedCompositeFieldContainer[MemoryChange]
    deleted: _containers.RepeatedScalarFieldContainer[str]
    total_value_bytes: int
    def __init__(self, state_schema_version: _Optional[int] = ..., changes: _Optional[_Iterable[_Union[MemoryChange, _Mapping]]] = ..., deleted: _Optional[_Iterable[str]] = ..., total_value_bytes: _Optional[int] = ...) -> None: ...

class MemoryHead(_message.Message):
    __slots__ = ("digest", "base_bytes", "log_values", "log_bytes", "total_value_bytes")
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    BASE_BYTES_FIELD_NUMBER: _ClassVar[int]
    LOG_VALUES_FIELD_NUMBER: _ClassVar[int]
    LOG_BYTES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_VALUE_BYTES_FIELD_NUMBER: _ClassVar[int]
    digest: bytes
    base_bytes: int
    log_values: int
    log_bytes: int
    total_value_bytes: int
    def __init__(self, digest: _Optional[bytes] = ..., base_bytes: _Optional[int] = ..., log_values: _Optional[int] = ..., log_bytes: _Optional[int] = ..., total_value_bytes: _Optional[int] = ...) -> None: ...

class MemoryChange(_message.Message):
    __slots__ = ("key", "last_access_ms", "value", "ring", "touched")
    KEY_FIELD_NUMBER: _ClassVar[int]
    LAST_ACCESS_MS_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    RING_FIELD_NUMBER: _ClassVar[int]
    TOUCHED_FIELD_NUMBER: _ClassVar[int]
    key: str
    last_access_ms: int
    value: bytes
    ring: RingTail
    touched: bool
    def __init__(self, key: _Optional[str] = ..., last_access_ms: _Optional[int] = ..., value: _Optional[bytes] = ..., ring: _Optional[_Union[RingTail, _Mapping]] = ..., touched: _Optional[bool] = ...) -> None: ...

class RingTail(_message.Message):
    __slots__ = ("cut", "items")
    CUT_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    cut: int
    items: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, cut: _Optional[int] = ..., items: _Optional[_Iterable[bytes]] = ...) -> None: ...

class LongTermRecord(_message.Message):
    __slots__ = ("state_schema_version", "key", "value", "seq", "updated_at_ms", "embedding")
    STATE_SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    state_schema_version: int
    key: str
    value: bytes
    seq: int
    updated_at_ms: int
    embedding: Embedding
    def __init__(self, state_schema_version: _Optional[int] = ..., key: _Optional[str] = ..., value: _Optional[bytes] = ..., seq: _Optional[int] = ..., updated_at_ms: _Optional[int] = ..., embedding: _Optional[_Union[Embedding, _Mapping]] = ...) -> None: ...

class Embedding(_message.Message):
    __slots__ = ("model_id", "dimensions", "vector")
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    VECTOR_FIELD_NUMBER: _ClassVar[int]
    model_id: str
    dimensions: int
    vector: bytes
    def __init__(self, model_id: _Optional[str] = ..., dimensions: _Optional[int] = ..., vector: _Optional[bytes] = ...) -> None: ...

class SeqState(_message.Message):
    __slots__ = ("state_schema_version", "seq", "continuation_clear", "spend", "expired", "ttl_at_ms", "memory_digest")
    STATE_SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    CONTINUATION_CLEAR_FIELD_NUMBER: _ClassVar[int]
    SPEND_FIELD_NUMBER: _ClassVar[int]
    EXPIRED_FIELD_NUMBER: _ClassVar[int]
    TTL_AT_MS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_DIGEST_FIELD_NUMBER: _ClassVar[int]
    state_schema_version: int
    seq: int
    continuation_clear: bool
    spend: _containers.RepeatedCompositeFieldContainer[TokenSpend]
    expired: bool
    ttl_at_ms: int
    memory_digest: bytes
    def __init__(self, state_schema_version: _Optional[int] = ..., seq: _Optional[int] = ..., continuation_clear: _Optional[bool] = ..., spend: _Optional[_Iterable[_Union[TokenSpend, _Mapping]]] = ..., expired: _Optional[bool] = ..., ttl_at_ms: _Optional[int] = ..., memory_digest: _Optional[bytes] = ...) -> None: ...

class TokenSpend(_message.Message):
    __slots__ = ("event_time_ms", "tokens")
    EVENT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    event_time_ms: int
    tokens: int
    def __init__(self, event_time_ms: _Optional[int] = ..., tokens: _Optional[int] = ...) -> None: ...

class CachedModelCall(_message.Message):
    __slots__ = ("call_key", "seq", "response", "model_id", "input_tokens", "output_tokens", "recorded_at_ms", "stop_reason")
    CALL_KEY_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    RECORDED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    STOP_REASON_FIELD_NUMBER: _ClassVar[int]
    call_key: str
    seq: int
    response: bytes
    model_id: str
    input_tokens: int
    output_tokens: int
    recorded_at_ms: int
    stop_reason: str
    def __init__(self, call_key: _Optional[str] = ..., seq: _Optional[int] = ..., response: _Optional[bytes] = ..., model_id: _Optional[str] = ..., input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., recorded_at_ms: _Optional[int] = ..., stop_reason: _Optional[str] = ...) -> None: ...

class ReplayCache(_message.Message):
    __slots__ = ("state_schema_version", "calls")
    STATE_SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    state_schema_version: int
    calls: _containers.RepeatedCompositeFieldContainer[CachedModelCall]
    def __init__(self, state_schema_version: _Optional[int] = ..., calls: _Optional[_Iterable[_Union[CachedModelCall, _Mapping]]] = ...) -> None: ...

class ToolIntent(_message.Message):
    __slots__ = ("state_schema_version", "intent_id", "entity_key", "seq", "index", "tool", "args_json", "event_time_ms", "awaits_answer", "prompt")
    STATE_SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    INTENT_ID_FIELD_NUMBER: _ClassVar[int]
    ENTITY_KEY_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGS_JSON_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    AWAITS_ANSWER_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    state_schema_version: int
    intent_id: str
    entity_key: bytes
    seq: int
    index: int
    tool: str
    args_json: bytes
    event_time_ms: int
    awaits_answer: bool
    prompt: bytes
    def __init__(self, state_schema_version: _Optional[int] = ..., intent_id: _Optional[str] = ..., entity_key: _Optional[bytes] = ..., seq: _Optional[int] = ..., index: _Optional[int] = ..., tool: _Optional[str] = ..., args_json: _Optional[bytes] = ..., event_time_ms: _Optional[int] = ..., awaits_answer: _Optional[bool] = ..., prompt: _Optional[bytes] = ...) -> None: ...

class Continuation(_message.Message):
    __slots__ = ("state_schema_version", "seq", "intent_id", "event", "event_id", "event_time_ms", "prompt", "deadline_ms", "reserved_indices", "suspended_at_ms", "buffered", "parked", "wake", "coalesced")
    STATE_SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    INTENT_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    RESERVED_INDICES_FIELD_NUMBER: _ClassVar[int]
    SUSPENDED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    BUFFERED_FIELD_NUMBER: _ClassVar[int]
    PARKED_FIELD_NUMBER: _ClassVar[int]
    WAKE_FIELD_NUMBER: _ClassVar[int]
    COALESCED_FIELD_NUMBER: _ClassVar[int]
    state_schema_version: int
    seq: int
    intent_id: str
    event: bytes
    event_id: str
    event_time_ms: int
    prompt: bytes
    deadline_ms: int
    reserved_indices: _containers.RepeatedScalarFieldContainer[int]
    suspended_at_ms: int
    buffered: _containers.RepeatedCompositeFieldContainer[BufferedEvent]
    parked: Parked
    wake: WakeMarker
    coalesced: _containers.RepeatedCompositeFieldContainer[BufferedEvent]
    def __init__(self, state_schema_version: _Optional[int] = ..., seq: _Optional[int] = ..., intent_id: _Optional[str] = ..., event: _Optional[bytes] = ..., event_id: _Optional[str] = ..., event_time_ms: _Optional[int] = ..., prompt: _Optional[bytes] = ..., deadline_ms: _Optional[int] = ..., reserved_indices: _Optional[_Iterable[int]] = ..., suspended_at_ms: _Optional[int] = ..., buffered: _Optional[_Iterable[_Union[BufferedEvent, _Mapping]]] = ..., parked: _Optional[_Union[Parked, _Mapping]] = ..., wake: _Optional[_Union[WakeMarker, _Mapping]] = ..., coalesced: _Optional[_Iterable[_Union[BufferedEvent, _Mapping]]] = ...) -> None: ...

class Parked(_message.Message):
    __slots__ = ("call_key", "element_time_ms", "answer", "drained", "prior_seq", "prior_cache", "answered", "expire_at_ms", "spent_tokens", "admitted_calls", "cache_clear", "ttl_at_ms", "memory_digest")
    CALL_KEY_FIELD_NUMBER: _ClassVar[int]
    ELEMENT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    DRAINED_FIELD_NUMBER: _ClassVar[int]
    PRIOR_SEQ_FIELD_NUMBER: _ClassVar[int]
    PRIOR_CACHE_FIELD_NUMBER: _ClassVar[int]
    ANSWERED_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_AT_MS_FIELD_NUMBER: _ClassVar[int]
    SPENT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    ADMITTED_CALLS_FIELD_NUMBER: _ClassVar[int]
    CACHE_CLEAR_FIELD_NUMBER: _ClassVar[int]
    TTL_AT_MS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_DIGEST_FIELD_NUMBER: _ClassVar[int]
    call_key: str
    element_time_ms: int
    answer: bytes
    drained: bool
    prior_seq: bytes
    prior_cache: bytes
    answered: int
    expire_at_ms: int
    spent_tokens: int
    admitted_calls: _containers.RepeatedScalarFieldContainer[str]
    cache_clear: bool
    ttl_at_ms: int
    memory_digest: bytes
    def __init__(self, call_key: _Optional[str] = ..., element_time_ms: _Optional[int] = ..., answer: _Optional[bytes] = ..., drained: _Optional[bool] = ..., prior_seq: _Optional[bytes] = ..., prior_cache: _Optional[bytes] = ..., answered: _Optional[int] = ..., expire_at_ms: _Optional[int] = ..., spent_tokens: _Optional[int] = ..., admitted_calls: _Optional[_Iterable[str]] = ..., cache_clear: _Optional[bool] = ..., ttl_at_ms: _Optional[int] = ..., memory_digest: _Optional[bytes] = ...) -> None: ...

class BufferedEvent(_message.Message):
    __slots__ = ("event", "event_time_ms", "event_id", "answer", "wake")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    WAKE_FIELD_NUMBER: _ClassVar[int]
    event: bytes
    event_time_ms: int
    event_id: str
    answer: BufferedAnswer
    wake: WakeMarker
    def __init__(self, event: _Optional[bytes] = ..., event_time_ms: _Optional[int] = ..., event_id: _Optional[str] = ..., answer: _Optional[_Union[BufferedAnswer, _Mapping]] = ..., wake: _Optional[_Union[WakeMarker, _Mapping]] = ...) -> None: ...

class WakeMarker(_message.Message):
    __slots__ = ("name", "scheduled_seq", "processing_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_SEQ_FIELD_NUMBER: _ClassVar[int]
    PROCESSING_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    scheduled_seq: int
    processing_time: bool
    def __init__(self, name: _Optional[str] = ..., scheduled_seq: _Optional[int] = ..., processing_time: _Optional[bool] = ...) -> None: ...

class PendingWakes(_message.Message):
    __slots__ = ("state_schema_version", "wakes")
    STATE_SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    WAKES_FIELD_NUMBER: _ClassVar[int]
    state_schema_version: int
    wakes: _containers.RepeatedCompositeFieldContainer[PendingWake]
    def __init__(self, state_schema_version: _Optional[int] = ..., wakes: _Optional[_Iterable[_Union[PendingWake, _Mapping]]] = ...) -> None: ...

class PendingWake(_message.Message):
    __slots__ = ("name", "due_ms", "payload", "processing_time", "scheduled_seq", "handed")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DUE_MS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PROCESSING_TIME_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_SEQ_FIELD_NUMBER: _ClassVar[int]
    HANDED_FIELD_NUMBER: _ClassVar[int]
    name: str
    due_ms: int
    payload: bytes
    processing_time: bool
    scheduled_seq: int
    handed: bool
    def __init__(self, name: _Optional[str] = ..., due_ms: _Optional[int] = ..., payload: _Optional[bytes] = ..., processing_time: _Optional[bool] = ..., scheduled_seq: _Optional[int] = ..., handed: _Optional[bool] = ...) -> None: ...

class BufferedAnswer(_message.Message):
    __slots__ = ("intent_id", "answer", "approver")
    INTENT_ID_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    APPROVER_FIELD_NUMBER: _ClassVar[int]
    intent_id: str
    answer: bytes
    approver: str
    def __init__(self, intent_id: _Optional[str] = ..., answer: _Optional[bytes] = ..., approver: _Optional[str] = ...) -> None: ...

class PendingIntents(_message.Message):
    __slots__ = ("state_schema_version", "intents")
    STATE_SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    INTENTS_FIELD_NUMBER: _ClassVar[int]
    state_schema_version: int
    intents: _containers.RepeatedCompositeFieldContainer[ToolIntent]
    def __init__(self, state_schema_version: _Optional[int] = ..., intents: _Optional[_Iterable[_Union[ToolIntent, _Mapping]]] = ...) -> None: ...

class ErrorRecord(_message.Message):
    __slots__ = ("state_schema_version", "entity_key", "reason", "detail", "event_time_ms", "payload")
    STATE_SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    ENTITY_KEY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    state_schema_version: int
    entity_key: bytes
    reason: str
    detail: str
    event_time_ms: int
    payload: bytes
    def __init__(self, state_schema_version: _Optional[int] = ..., entity_key: _Optional[bytes] = ..., reason: _Optional[str] = ..., detail: _Optional[str] = ..., event_time_ms: _Optional[int] = ..., payload: _Optional[bytes] = ...) -> None: ...

class LifecycleRecord(_message.Message):
    __slots__ = ("state_schema_version", "entity_key", "kind", "event_time_ms", "seq", "memory_bytes", "detail")
    STATE_SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    ENTITY_KEY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    state_schema_version: int
    entity_key: bytes
    kind: str
    event_time_ms: int
    seq: int
    memory_bytes: int
    detail: str
    def __init__(self, state_schema_version: _Optional[int] = ..., entity_key: _Optional[bytes] = ..., kind: _Optional[str] = ..., event_time_ms: _Optional[int] = ..., seq: _Optional[int] = ..., memory_bytes: _Optional[int] = ..., detail: _Optional[str] = ...) -> None: ...
