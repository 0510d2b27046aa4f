"""`embedder_from_spec`: naming an embedder on a command line, like `provider_from_spec`.

    fake[:DIMS]
    openai:MODEL[?OPTIONS]
    gemini:MODEL[?OPTIONS]
    local:PATH_OR_PACKAGE[?sha256=HEX]
    py:package.module:attribute

OPTIONS are the providers' (`key=value` joined by `&`, percent-decoded),
plus `dimensions` (both) and `task_type` (gemini). The width must be known
here: `dimensions`, or the known default of the named model. A `local:`
model is a package name (dotted) or a path (holding a `/`), pinned by
`sha256` unless it is the known packaged model. Everything is checked on the
machine that builds the pipeline; the factory handed back is picklable,
holds where secrets live (never a secret) and builds the embedder, reading
the key or loading the weights, only when a worker calls it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Final, cast
from urllib.parse import unquote

from beam_agents.errors import ConfigurationError
from beam_agents.model._spec_grammar import (
    GEMINI_OPTIONS,
    OPENAI_OPTIONS,
    ClassFactory,
    Option,
    check_gemini_credentials,
    read_int,
    read_text,
    split_model,
    split_options,
)
from beam_agents.model.embedders.fake import FakeEmbedder
from beam_agents.model.embedders.gemini import KNOWN_GEMINI_DIMENSIONS, check_task_type
from beam_agents.model.embedders.local import check_sha256, check_source, pin_for
from beam_agents.model.embedders.openai_compat import (
    KNOWN_OPENAI_DIMENSIONS,
    check_dimensions,
    width_of,
)
from beam_agents.model.embedders.protocol import Embedder, EmbedderFactory
from beam_agents.model.spec import ImportedFactory, _parse_py

__all__ = ["EmbedderSpecFactory", "ImportedEmbedderFactory", "embedder_from_spec"]

_SCHEMES: Final = ("fake", "openai", "gemini", "local", "py")
_EMBEDDER_CLASSES: Final = {
    "openai": ("beam_agents.model.embedders.openai_compat", "OpenAIEmbedder"),
    "gemini": ("beam_agents.model.embedders.gemini", "GeminiEmbedder"),
    "local": ("beam_agents.model.embedders.local", "LocalEmbedder"),
}
_DIMENSIONS: Final[Option] = (read_int, check_dimensions)
_OPTIONS: Final[Mapping[str, Mapping[str, Option]]] = {
    "openai": {**OPENAI_OPTIONS, "dimensions": _DIMENSIONS},
    "gemini": {
        **GEMINI_OPTIONS,
        "dimensions": _DIMENSIONS,
        "task_type": (read_text, check_task_type),
    },
    "local": {"sha256": (read_text, check_sha256)},
}
_KNOWN: Final = {"openai": KNOWN_OPENAI_DIMENSIONS, "gemini": KNOWN_GEMINI_DIMENSIONS}


@dataclass(frozen=True, slots=True)
class EmbedderSpecFactory(ClassFactory[Embedder]):
    """An embedder factory parsed from a spec: picklable, secret-free, called on the worker."""

    classes: ClassVar[Mapping[str, tuple[str, str]]] = _EMBEDDER_CLASSES


@dataclass(frozen=True, slots=True)
class ImportedEmbedderFactory:
    """A user's zero-argument embedder factory, `module:attribute`, imported on the worker."""

    module: str
    attribute: str

    def __call__(self) -> Embedder:
        return cast(Embedder, ImportedFactory(self.module, self.attribute).resolve()())


def _parse_fake(rest: str | None) -> FakeEmbedder:
    if rest is None:
        return FakeEmbedder(name="spec:fake", keep_calls=False)
    if not (rest.isascii() and rest.isdigit()):
        raise ConfigurationError("fake", f"expected fake or fake:DIMS (an int), got 'fake:{rest}'")
    return FakeEmbedder(dimensions=int(rest), name="spec:fake", keep_calls=False)


def _parse_hosted(scheme: str, rest: str) -> EmbedderSpecFactory:
    model, options = split_model(scheme, rest, _OPTIONS[scheme])
    width, explicit = width_of(scheme, model, options.get("dimensions"), _KNOWN[scheme])
    if explicit:
        options["dimensions"] = width
    if scheme == "gemini":
        check_gemini_credentials(options)
    return EmbedderSpecFactory(scheme, model, tuple(sorted(options.items())))


def _parse_local(rest: str) -> EmbedderSpecFactory:
    source_text, has_query, query = rest.partition("?")
    source = check_source(unquote(source_text))
    options = split_options("local", query, _OPTIONS["local"]) if has_query else {}
    pin_for(source, cast("str | None", options.get("sha256")))
    return EmbedderSpecFactory("local", source, tuple(sorted(options.items())))


def embedder_from_spec(spec: str) -> EmbedderFactory:
    """Parse an embedder spec into a picklable factory that holds no secret.

    Raises ConfigurationError naming the wrong part: the scheme, the model,
    an unknown option, a bad value, a width that is not known, a local model
    without a pin, or a `py:` target that does not import.
    """
    if type(spec) is not str:
        raise ConfigurationError("spec", f"must be a str, got {type(spec).__name__}")
    scheme, sep, rest = spec.partition(":")
    if scheme not in _SCHEMES:
        raise ConfigurationError(
            "scheme",
            f"unknown scheme {scheme!r}; expected one of fake[:DIMS], openai:MODEL, "
            "gemini:MODEL, local:PATH_OR_PACKAGE, py:module:attribute",
        )
    if scheme == "fake":
        return _parse_fake(rest if sep else None)
    if scheme == "py":
        imported = _parse_py(rest)
        return ImportedEmbedderFactory(imported.module, imported.attribute)
    if not sep or not rest:
        what = "PATH_OR_PACKAGE" if scheme == "local" else "MODEL"
        raise ConfigurationError("model", f"{scheme} needs a model: {scheme}:{what}")
    if scheme == "local":
        return _parse_local(rest)
    return _parse_hosted(scheme, rest)
