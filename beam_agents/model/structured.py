"""Output types: what a structured answer must look like, and how an answer is held to it.

One `OutputSchema` serves both ends of a typed agent: a model call that
asks for a structured answer (`LlmRequest.output_type`) and an agent whose
results are typed (`RunAgent(output_type=...)`). Both read JSON or Python
values and either return a value of the type or name every way the value
is wrong. Nothing is coerced: a "3" where an integer belongs is an error,
not a 3, because a decision that was silently bent into shape is worse than
a dead letter an operator can read.

Validation is a pure function of the bytes, so a replayed answer validates
to the same value (or the same errors) on every re-run of an activation.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pydantic
import pydantic_core

from beam_agents.errors import ConfigurationError
from beam_agents.model.errors import OutputInvalid

__all__ = [
    "OutputSchema",
    "field_annotations",
    "field_names",
    "is_named_tuple",
    "output_schema",
    "repair_messages",
    "value_json",
]

MAX_ERRORS: Final = 20
"""Errors kept per answer: enough to repair from, bounded for a dead letter."""

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)
_MAX_STARTS: Final = 64


def is_named_tuple(value: object) -> bool:
    """Whether `value` is a `typing.NamedTuple` class (a tuple with annotated fields)."""
    return (
        isinstance(value, type)
        and issubclass(value, tuple)
        and hasattr(value, "_fields")
        and hasattr(value, "__annotations__")
    )


def field_names(output_type: object) -> tuple[str, ...]:
    """The declared fields of a pydantic model, dataclass or NamedTuple type; () for others.

    The one reading of "a typed value's fields" that validation, Beam rows,
    eval's scorers and the adapters share.
    """
    if isinstance(output_type, type) and issubclass(output_type, pydantic.BaseModel):
        return tuple(output_type.model_fields)
    if dataclasses.is_dataclass(output_type) and isinstance(output_type, type):
        return tuple(field.name for field in dataclasses.fields(output_type))
    if is_named_tuple(output_type):
        return tuple(output_type._fields)  # type: ignore[attr-defined]
    return ()


def field_annotations(output_type: type) -> dict[str, Any]:
    """Each declared field of an output type with its resolved annotation, in order.

    Raises what `typing.get_type_hints` raises for an annotation that does
    not resolve (a name the type's module does not define).
    """
    if issubclass(output_type, pydantic.BaseModel):
        return {name: info.annotation for name, info in output_type.model_fields.items()}
    hints = typing.get_type_hints(output_type)
    return {name: hints[name] for name in field_names(output_type)}


def value_json(value: Any) -> str:
    """A typed value (or a plain JSON value) as compact JSON, fields in declared order.

    Fields are written under their JSON names (a pydantic alias), as the
    type's own JSON Schema names them and its validator reads them back; a
    NamedTuple is an object of named fields, not the array pydantic would
    make of a tuple.
    """
    if is_named_tuple(type(value)):
        value = value._asdict()
    plain = pydantic_core.to_jsonable_python(value, by_alias=True)
    return json.dumps(plain, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class OutputSchema:
    """An output type's name, its JSON Schema, and how a value is held to it."""

    name: str
    json_schema: Mapping[str, Any]
    python_type: type | None
    """The type values are returned as; None for a bare JSON Schema (plain JSON values)."""
    _validate_json: Callable[[str], Any] = dataclasses.field(repr=False, compare=False)
    _validate_python: Callable[[Any], Any] = dataclasses.field(repr=False, compare=False)
    json_text: str = dataclasses.field(init=False, repr=False, compare=False)
    """The JSON Schema as compact, sorted JSON: what a prompt shows the model."""

    def __post_init__(self) -> None:
        text = json.dumps(self.json_schema, sort_keys=True, separators=(",", ":"))
        object.__setattr__(self, "json_text", text)

    def wire(self) -> dict[str, Any]:
        """The schema as a request's canonical bytes carry it (and so its replay key)."""
        return {"name": self.name, "schema": self.json_schema}

    def read(self, raw: bytes) -> Any:
        """The value a model's answer holds, or `OutputInvalid` naming every error.

        The answer may be the JSON alone (native structured output) or prose
        around it (a server that ignored the request's schema): the JSON is
        taken from a fenced block, else from the first place a JSON value
        parses. A pure function of the bytes, so replays agree.
        """
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise OutputInvalid(self.name, ["(root): the answer is not UTF-8 text"], raw) from None
        candidate = extract_json(text)
        if candidate is None:
            raise OutputInvalid(self.name, ["(root): the answer holds no JSON value"], raw)
        try:
            return self._validate_json(candidate)
        except pydantic.ValidationError as exc:
            raise OutputInvalid(self.name, _pydantic_errors(exc), raw) from None
        except _SchemaErrors as exc:
            raise OutputInvalid(self.name, exc.errors, raw) from None

    def check(self, value: Any, raw: bytes = b"") -> Any:
        """`value` (an instance, a mapping, or JSON bytes/str) as this type, or `OutputInvalid`."""
        if isinstance(value, bytes | str):
            return self.read(value.encode("utf-8") if isinstance(value, str) else value)
        try:
            return self._validate_python(value)
        except pydantic.ValidationError as exc:
            raise OutputInvalid(self.name, _pydantic_errors(exc), raw or _shown(value)) from None
        except _SchemaErrors as exc:
            raise OutputInvalid(self.name, exc.errors, raw or _shown(value)) from None


class _SchemaErrors(Exception):
    """A JSON Schema's errors, carried out of a validator to `OutputSchema`."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


def output_schema(output_type: object) -> OutputSchema:
    """The `OutputSchema` of a pydantic model, dataclass, NamedTuple or JSON Schema mapping.

    Raises `ConfigurationError` naming what was given when it is none of
    those, or when its schema cannot be built (a field type JSON cannot
    carry, an invalid JSON Schema).
    """
    if isinstance(output_type, Mapping):
        return _from_json_schema(json.dumps(output_type, sort_keys=True, separators=(",", ":")))
    if isinstance(output_type, type):
        return _from_type(output_type)
    raise ConfigurationError(
        "output_type",
        f"must be a pydantic model, a dataclass, a typing.NamedTuple or a JSON Schema "
        f"mapping, got {type(output_type).__name__}",
    )


@functools.lru_cache(maxsize=256)
def _from_type(output_type: type) -> OutputSchema:
    if isinstance(output_type, type) and issubclass(output_type, pydantic.BaseModel):
        return _from_model(output_type)
    if dataclasses.is_dataclass(output_type) or is_named_tuple(output_type):
        return _from_fields(output_type)
    raise ConfigurationError(
        "output_type",
        f"{output_type.__qualname__} is not a pydantic model, a dataclass or a typing.NamedTuple",
    )


def _from_model(model: type[pydantic.BaseModel]) -> OutputSchema:
    schema = _schema_of(model.__qualname__, model.model_json_schema)

    def validate_python(value: Any) -> Any:
        if isinstance(value, model):
            # Its fields again: `model_construct` and plain assignment skip validation.
            value = {name: getattr(value, name) for name in type(value).model_fields}
        return model.model_validate(value, strict=True)

    return OutputSchema(
        name=model.__name__,
        json_schema=schema,
        python_type=model,
        _validate_json=lambda text: model.model_validate_json(text, strict=True),
        _validate_python=validate_python,
    )


def _from_fields(output_type: type) -> OutputSchema:
    """A dataclass or NamedTuple, validated as a model with the same named fields.

    Named fields, not pydantic's own reading: it takes a NamedTuple for an
    array (a model would answer `[1, "x"]`), and hands a dataclass instance
    back without looking inside it.
    """
    names, fields = _field_definitions(output_type)
    try:
        model: type[pydantic.BaseModel] = pydantic.create_model(
            output_type.__name__, __config__=pydantic.ConfigDict(extra="forbid"), **fields
        )
    except (TypeError, pydantic.PydanticSchemaGenerationError) as exc:
        raise ConfigurationError("output_type", f"{output_type.__qualname__}: {exc}") from None
    schema = _schema_of(output_type.__qualname__, model.model_json_schema)

    def build(validated: pydantic.BaseModel) -> Any:
        return output_type(**{name: getattr(validated, name) for name in names})

    def validate_python(value: Any) -> Any:
        if isinstance(value, output_type):
            value = {name: getattr(value, name) for name in names}
        return build(model.model_validate(value, strict=True))

    return OutputSchema(
        name=output_type.__name__,
        json_schema=schema,
        python_type=output_type,
        _validate_json=lambda text: build(model.model_validate_json(text, strict=True)),
        _validate_python=validate_python,
    )


def _field_definitions(output_type: type) -> tuple[list[str], dict[str, Any]]:
    """Each field as `pydantic.create_model` takes it: (annotation, default or ...)."""
    try:
        annotations = field_annotations(output_type)
    except Exception as exc:
        raise ConfigurationError(
            "output_type", f"{output_type.__qualname__}: its annotations do not resolve: {exc}"
        ) from None
    defaults: dict[str, Any] = dict(getattr(output_type, "_field_defaults", {}))
    if dataclasses.is_dataclass(output_type):
        for field in dataclasses.fields(output_type):
            if field.default is not dataclasses.MISSING:
                defaults[field.name] = field.default
            elif field.default_factory is not dataclasses.MISSING:
                defaults[field.name] = pydantic.Field(default_factory=field.default_factory)
    fields = {name: (hint, defaults.get(name, ...)) for name, hint in annotations.items()}
    return list(fields), fields


def _schema_of(name: str, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return build()
    except (
        TypeError,
        pydantic.PydanticSchemaGenerationError,
        pydantic.PydanticInvalidForJsonSchema,
    ) as exc:
        raise ConfigurationError("output_type", f"{name}: no JSON Schema: {exc}") from None


@functools.lru_cache(maxsize=64)
def _from_json_schema(text: str) -> OutputSchema:
    import jsonschema

    schema = json.loads(text)
    validator_class = jsonschema.validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ConfigurationError(
            "output_type", f"is not a valid JSON Schema: {exc.message}"
        ) from None
    validator = validator_class(schema)
    title = schema.get("title")
    named = isinstance(title, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,64}", title)
    name = title if named else "output"

    def validate_python(value: Any) -> Any:
        found = sorted(validator.iter_errors(value), key=lambda e: _path(e.absolute_path))
        errors = [f"{_path(error.absolute_path)}: {error.message}" for error in found]
        if errors:
            raise _SchemaErrors(errors[:MAX_ERRORS])
        return value

    def validate_json(text: str) -> Any:
        return validate_python(json.loads(text))

    return OutputSchema(
        name=name,
        json_schema=schema,
        python_type=None,
        _validate_json=validate_json,
        _validate_python=validate_python,
    )


def _path(parts: Sequence[object]) -> str:
    return ".".join(str(part) for part in parts) or "(root)"


def _pydantic_errors(exc: pydantic.ValidationError) -> list[str]:
    return [
        f"{_path(error['loc'])}: {error['msg']}"
        for error in exc.errors(include_url=False, include_input=False)[:MAX_ERRORS]
    ]


def _shown(value: object) -> bytes:
    """What a dead letter shows of a Python value that is not the type: its repr, bounded."""
    return repr(value)[:4096].encode("utf-8", "backslashreplace")


def extract_json(text: str) -> str | None:
    """The JSON value in a model's answer: all of it, a fenced block, or the first that parses.

    Deterministic and bounded: at most `_MAX_STARTS` candidate starts are tried.
    """
    stripped = text.strip()
    if _parses(stripped):
        return stripped
    fenced = _FENCE.search(text)
    if fenced is not None and _parses(fenced.group(1).strip()):
        return fenced.group(1).strip()
    decoder = json.JSONDecoder()
    tried = 0
    for match in re.finditer(r"[\[{]", text):
        tried += 1
        if tried > _MAX_STARTS:
            break
        try:
            _, end = decoder.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        return text[match.start() : end]
    return None


def _parses(text: str) -> bool:
    if not text or text[0] not in "[{":
        return False
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def repair_messages(
    messages: Sequence[Any], raw: bytes, error: OutputInvalid, schema: OutputSchema
) -> list[Any]:
    """The conversation that re-asks: the request, the answer as given, and what was wrong.

    Deterministic in its inputs, so a re-run of the activation sends the
    same repair and hits the replay cache with it.
    """
    listed = "\n".join(f"- {line}" for line in error.errors)
    schema_text = schema.json_text
    return [
        *messages,
        {"role": "assistant", "content": raw.decode("utf-8", "replace")},
        {
            "role": "user",
            "content": (
                f"That answer does not match the {schema.name} schema:\n{listed}\n"
                f"Answer again with only a JSON value matching this JSON Schema:\n{schema_text}"
            ),
        },
    ]
