"""The recording: every model, embedding and tool answer an evaluation has seen, by content.

A recorded answer is keyed by what was asked, never by where: the SHA-256
of a model request's canonical bytes (`canonical_request_bytes`), of an
embedding call's model id and texts, of a tool's name and canonical args.
So an unchanged request anywhere in the log, for any key, at any seq, is
answered from the file, byte-identically and at no cost; only a request
the candidate changed reaches the real provider, and its answer joins the
file when the run ends.

The file is JSON lines, one answer per line, sorted, with sorted keys, so
two runs that saw the same answers write the same bytes and a reviewer can
read a diff of it (`docs/eval.md` shows the three kinds of line).

The DirectRunner runs every DoFn of a pipeline in threads of one process
and builds the providers there, from pickled factories: so each file is
loaded once per process into a registry keyed by its path, shared under a
lock, the way FakeLLM shares its call log, and saved by whoever ran the
evaluation once the pipelines are done.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from beam_agents._scrub import scrub_secrets
from beam_agents.errors import ConfigurationError, exception_text
from beam_agents.eval.errors import RecordingError
from beam_agents.eval.events import json_objects
from beam_agents.eval.recording_lines import check_recording_line
from beam_agents.model.embedders import (
    Embedded,
    EmbedderFactory,
    check_embedder,
    close_embedder,
)
from beam_agents.model.flow import FlowControlledProvider, RateLimit, flow_control
from beam_agents.model.messages import LlmRequest, LlmResponse, canonical_request_bytes
from beam_agents.model.provider import (
    ModelProvider,
    ProviderFactory,
    check_provider,
    close_provider,
)
from beam_agents.runtime.errors import ModelCallError

__all__ = [
    "Recording",
    "RecordingEmbedder",
    "RecordingProvider",
    "misses_flow_token",
    "recording_at",
    "request_key",
    "save_recording",
]

_MODEL: Final = "model"
_EMBED: Final = "embed"
_TOOL: Final = "tool"

_lock = threading.Lock()
_recordings: dict[str, Recording] = {}


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _canonical(value: object) -> bytes:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")


def request_key(request: LlmRequest) -> str:
    """The recording key of a model request: the SHA-256 of its canonical bytes."""
    return _digest(canonical_request_bytes(request))


def embed_key(model_id: str, texts: Sequence[str]) -> str:
    """The recording key of an embedding call."""
    return _digest(_canonical({"kind": _EMBED, "model_id": model_id, "texts": list(texts)}))


def tool_key(tool: str, args: Mapping[str, Any]) -> str:
    """The recording key of a tool call."""
    return _digest(_canonical({"kind": _TOOL, "tool": tool, "args": dict(args)}))


def _bytes_json(data: bytes) -> object:
    """Text when the bytes are UTF-8 (readable in a diff), else `{"b64": ...}`."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"b64": base64.b64encode(data).decode("ascii")}


def _json_bytes(value: object, where: str) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, dict) and isinstance(value.get("b64"), str):
        try:
            return base64.b64decode(value["b64"], validate=True)
        except ValueError:
            raise RecordingError(f"{where}: b64 is not base64") from None
    raise RecordingError(f"{where}: expected a string or {{'b64': ...}}, got {value!r:.80}")


@dataclass
class Recording:
    """One recording file's answers in this process, and what this process added to it."""

    path: str
    model: dict[str, dict[str, Any]] = field(default_factory=dict)
    embed: dict[str, dict[str, Any]] = field(default_factory=dict)
    tool: dict[str, dict[str, Any]] = field(default_factory=dict)
    added: int = 0
    """Answers recorded by this process and not yet saved."""
    _live: dict[tuple[str, str], int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def model_answer(self, key: str) -> dict[str, Any] | None:
        """The recorded model answer for `key`, or None."""
        with self._lock:
            return self.model.get(key)

    def model_entries(self) -> list[dict[str, Any]]:
        """Every model answer held, loaded or recorded since (a snapshot)."""
        with self._lock:
            return list(self.model.values())

    def embed_answer(self, key: str) -> dict[str, Any] | None:
        """The recorded embedding answer for `key`, or None."""
        with self._lock:
            return self.embed.get(key)

    def tool_answer(self, key: str) -> dict[str, Any] | None:
        """The recorded tool result for `key`, or None."""
        with self._lock:
            return self.tool.get(key)

    def record_model(
        self, token: str, request: LlmRequest, response: LlmResponse, latency_ms: float
    ) -> None:
        """Keep a live answer, and note it for the run `token` (see `claim_live`)."""
        entry = {
            "kind": _MODEL,
            "request": json.loads(canonical_request_bytes(request)),
            "response": _bytes_json(response.response),
            "model_id": response.model_id,
            "input_tokens": response.input_tokens,
            "output_tokens": response.output_tokens,
            "latency_ms": round(latency_ms, 3),
        }
        if response.stop_reason:
            # Only when set: a finished answer's line stays as it always was.
            entry["stop_reason"] = response.stop_reason
        key = request_key(request)
        with self._lock:
            if key not in self.model:
                self.model[key] = entry
                self.added += 1
            self._live[(token, key)] = self._live.get((token, key), 0) + 1

    def record_error(self, token: str, request: LlmRequest, error: str) -> None:
        """Keep a provider's failure: replayed, the same request fails the same way."""
        entry = {
            "kind": _MODEL,
            "request": json.loads(canonical_request_bytes(request)),
            "error": error,
        }
        key = request_key(request)
        with self._lock:
            if key not in self.model:
                self.model[key] = entry
                self.added += 1
            self._live[(token, key)] = self._live.get((token, key), 0) + 1

    def record_embed(
        self, token: str, model_id: str, texts: Sequence[str], embedded: Embedded, latency_ms: float
    ) -> None:
        """Keep a live embedding answer, and note it for the run `token`."""
        entry = {
            "kind": _EMBED,
            "model_id": model_id,
            "texts": list(texts),
            "vectors": [[float(x) for x in vector] for vector in embedded.vectors],
            "input_tokens": embedded.input_tokens,
            "latency_ms": round(latency_ms, 3),
        }
        key = embed_key(model_id, texts)
        with self._lock:
            if key not in self.embed:
                self.embed[key] = entry
                self.added += 1
            self._live[(token, key)] = self._live.get((token, key), 0) + 1

    def claim_live(self, token: str, key: str) -> bool:
        """Whether a call of run `token` with `key` went to the real provider (claimed once)."""
        with self._lock:
            count = self._live.get((token, key), 0)
            if not count:
                return False
            self._live[(token, key)] = count - 1
            return True

    def forget_run(self, token: str) -> None:
        """Drop the live-call notes of a finished run."""
        with self._lock:
            for pair in [pair for pair in self._live if pair[0] == token]:
                del self._live[pair]

    def lines(self) -> list[bytes]:
        """The file's lines: every answer, sorted by kind and key, keys sorted."""
        with self._lock:
            tables = ((_EMBED, self.embed), (_MODEL, self.model), (_TOOL, self.tool))
            return [_canonical(table[key]) + b"\n" for _, table in tables for key in sorted(table)]


def _load(path: str) -> Recording:
    from apache_beam.io.filesystems import FileSystems

    recording = Recording(path)
    if not FileSystems.exists(path):  # type: ignore[no-untyped-call]
        return recording
    for where, entry in json_objects(path, RecordingError):
        _add_loaded(recording, entry, where)
    return recording


def _add_loaded(recording: Recording, entry: dict[str, Any], where: str) -> None:
    check_recording_line(entry, where)
    kind = entry["kind"]
    if kind == _MODEL:
        # The line holds the request's canonical JSON, so its digest is the key the
        # request had: a structured request's output type cannot be rebuilt from
        # its schema, only its bytes can.
        recording.model[_digest(_canonical(entry["request"]))] = entry
    elif kind == _EMBED:
        recording.embed[embed_key(entry["model_id"], entry["texts"])] = entry
    else:
        recording.tool[tool_key(entry["tool"], entry["args"])] = entry


def recording_at(path: str) -> Recording:
    """The recording at `path`, loaded once per process; raises RecordingError if unreadable."""
    with _lock:
        recording = _recordings.get(path)
        if recording is None:
            recording = _recordings[path] = _load(path)
        return recording


def save_recording(path: str) -> int:
    """Write the recording back if this process added to it; returns how many answers were new."""
    from apache_beam.io.filesystems import FileSystems

    with _lock:
        recording = _recordings.get(path)
    if recording is None or not recording.added:
        return 0
    added = recording.added
    with FileSystems.create(path) as handle:
        for line in recording.lines():
            handle.write(line)
    recording.added = 0
    return added


def unload_recording(path: str) -> None:
    """Forget the process's copy of `path`: the next `recording_at` reads the file again."""
    with _lock:
        _recordings.pop(path, None)


def model_response(entry: Mapping[str, Any]) -> LlmResponse:
    """The `LlmResponse` a model line records."""
    return LlmResponse(
        response=_json_bytes(entry["response"], "response"),
        model_id=entry["model_id"],
        input_tokens=entry["input_tokens"],
        output_tokens=entry["output_tokens"],
        stop_reason=entry.get("stop_reason", ""),
    )


def tool_result(entry: Mapping[str, Any]) -> bytes:
    """The result bytes a tool line records."""
    return _json_bytes(entry["result"], "result")


def misses_flow_token(token: str) -> str:
    """The flow control of run `token`'s new requests: one per run, forgotten when it ends."""
    return f"eval-misses:{token}"


@dataclass(frozen=True)
class RecordingProvider:
    """A provider factory answering from the recording, asking `inner` only for new requests.

    The real provider is built on the first request the recording cannot
    answer, so a fully recorded evaluation needs no credentials at all.
    With `rate_limit` (a per-process one: an evaluation reaches no shared
    limiter), only those new requests wait for their turn and wait out
    429s within `budget_s`: an answer from the file costs the quota nothing,
    so it waits for nothing.
    """

    path: str
    inner: ProviderFactory
    token: str
    rate_limit: RateLimit | None = None
    budget_s: float = 60.0

    def __post_init__(self) -> None:
        if self.rate_limit is not None and self.rate_limit.shared:
            raise ConfigurationError(
                "RecordingProvider.rate_limit",
                "must be per process: an evaluation reaches no shared limiter",
            )

    def __call__(self) -> _RecordingProvider:
        return _RecordingProvider(self)

    def real_provider(self) -> ModelProvider:
        """The provider new requests go to, behind the run's own flow control if limited."""
        provider = check_provider(self.inner())
        if self.rate_limit is None:
            return provider
        control = flow_control(misses_flow_token(self.token), self.rate_limit, 1)
        return FlowControlledProvider(provider, control, budget_s=self.budget_s, windowed=False)


class _RecordingProvider:
    def __init__(self, spec: RecordingProvider) -> None:
        self._spec = spec
        self._recording = recording_at(spec.path)
        self._inner: Any = None

    async def complete(self, request: LlmRequest) -> LlmResponse:
        entry = self._recording.model_answer(request_key(request))
        if entry is not None:
            if "error" in entry:
                raise ModelCallError(entry["error"])
            return model_response(entry)
        if self._inner is None:
            self._inner = self._spec.real_provider()
        started = time.monotonic()
        try:
            response: LlmResponse = await self._inner.complete(request)
        except Exception as exc:
            # Kept like an answer, so a rerun fails the same way at no cost.
            error = scrub_secrets(f"{type(exc).__name__}: {exception_text(exc)}")
            self._recording.record_error(self._spec.token, request, error)
            raise ModelCallError(error) from exc
        latency_ms = (time.monotonic() - started) * 1000
        self._recording.record_model(self._spec.token, request, response, latency_ms)
        return response

    async def aclose(self) -> None:
        if self._inner is not None:
            await close_provider(self._inner)


@dataclass(frozen=True)
class RecordingEmbedder:
    """An embedder factory answering from the recording, embedding only new texts for real.

    The real embedder is built at once: its `model_id` and `dimensions` are
    part of what the runtime needs before the first call.
    """

    path: str
    inner: EmbedderFactory
    token: str

    def __call__(self) -> _RecordingEmbedder:
        return _RecordingEmbedder(self)


class _RecordingEmbedder:
    def __init__(self, spec: RecordingEmbedder) -> None:
        self._spec = spec
        self._recording = recording_at(spec.path)
        self._inner = check_embedder(spec.inner())
        self.model_id: str = self._inner.model_id
        self.dimensions: int = self._inner.dimensions

    async def embed(self, texts: Sequence[str]) -> Embedded:
        entry = self._recording.embed_answer(embed_key(self.model_id, texts))
        if entry is not None:
            return Embedded(vectors=entry["vectors"], input_tokens=entry["input_tokens"])
        started = time.monotonic()
        embedded = await self._inner.embed(texts)
        latency_ms = (time.monotonic() - started) * 1000
        self._recording.record_embed(self._spec.token, self.model_id, texts, embedded, latency_ms)
        return embedded

    async def aclose(self) -> None:
        await close_embedder(self._inner)
