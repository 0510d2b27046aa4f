"""Typed agent results as Beam rows: the element type and coder of a typed RunAgent's outputs.

Beam reads a PCollection's schema from its element type, a
`RowTypeConstraint` of named, typed fields, and encodes such rows with its
`RowCoder`. It derives those fields itself only for NamedTuples and mutable
dataclasses, from their annotations as written: a `Literal` there becomes an
opaque pickled value that neither a DataFrame nor BigQuery can read, and a
pydantic model is not a row to it at all. So the runtime builds the row type
itself, from the same fields the validator reads, mapping each annotation
to a Beam field type or refusing the type when the transform is built.

Beam's `RowCoder` rebuilds each decoded row with the constructor its schema
registry holds for the schema's id. The runtime registers, under an id of
its own, one that rebuilds the output type (a pydantic model through
`model_construct`: its values were validated before they were encoded). In
the launching process, and in any worker that has loaded the transform, a
decoded element is an instance of the output type; a process that never saw
the type decodes the same bytes into Beam's generated row class, with the
same fields as attributes.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import threading
import types
import typing
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, Optional

import pydantic
from apache_beam import typehints
from apache_beam.coders.row_coder import RowCoder
from apache_beam.coders.typecoders import registry as coder_registry
from apache_beam.portability.api import schema_pb2
from apache_beam.typehints import batch, schemas
from apache_beam.typehints.row_type import RowTypeConstraint
from apache_beam.typehints.schema_registry import SCHEMA_REGISTRY

from beam_agents.errors import ConfigurationError
from beam_agents.model.errors import OutputInvalid
from beam_agents.model.structured import (
    OutputSchema,
    field_annotations,
    is_named_tuple,
    output_schema,
)

__all__ = ["OutputRowCoder", "OutputRowType", "TypedOutput", "typed_output", "untyped_output"]

FIELD: Final = "RunAgent.output_type"
_ATOMIC: Final[tuple[type, ...]] = (bool, int, float, str, bytes)
_NAMESPACE: Final = uuid.UUID("5b0f3c1e-8a51-4c55-9d7e-2f0d6c1b9a47")
"""Schema ids are uuid5s under this namespace: the same type gets the same id in every process."""
_SHOWN: Final = 4096
_ids_lock = threading.Lock()
_id_owners: dict[str, type] = {}


class TypedOutput:
    """One output type: how a result is held to it, and what its rows are to Beam."""

    __slots__ = ("coder", "fields", "output_type", "rebuild", "row_type", "schema")

    def __init__(self, output_type: type, schema: OutputSchema) -> None:
        self.output_type = output_type
        self.schema = schema
        self.fields = _row_fields(output_type)
        """(name, Beam field type) in declaration order."""
        self.rebuild = _rebuild(output_type, [name for name, _ in self.fields])
        """What turns a decoded row's values, in field order, back into the output type."""
        beam_schema = _register(output_type, self.fields, self.rebuild)
        self.row_type = OutputRowType(self, beam_schema.id)
        self.coder = OutputRowCoder(beam_schema, output_type)

    def element_type(self) -> Any:
        """`(entity_key, result)`: the type the outputs PCollection declares."""
        return typehints.Tuple[bytes, self.row_type]

    def check(self, value: object) -> Any:
        """`value` as an instance of the output type, or `OutputInvalid` naming every error.

        A value the validator accepts and Beam cannot carry (an integer
        beyond 64 bits, a string with a lone surrogate, a model attribute
        assigned without validation) would fail its bundle on every retry,
        so the value is encoded once here and refused instead.
        """
        try:
            checked = self.schema.check(value)
        except OutputInvalid as exc:
            raise OutputInvalid(exc.schema, exc.errors, exc.raw, what=_WHAT) from None
        encode: Callable[[Any], bytes] = self.coder.encode
        try:
            encode(checked)
        except Exception:  # a coder raises whatever its field's value provokes
            errors = self._unencodable(checked)
            raise OutputInvalid(self.schema.name, errors, _shown(checked), what=_WHAT) from None
        return checked

    def _unencodable(self, value: object) -> list[str]:
        """Each field of `value` its Beam coder refuses, with the coder's reason."""
        errors = []
        components: list[Any] = self.coder.components
        for (name, _), coder in zip(self.fields, components, strict=True):
            field = getattr(value, name)
            if field is None:
                continue
            try:
                coder.encode(field)
            except Exception as exc:  # as above
                errors.append(f"{name}: Beam cannot encode it: {exc}")
        return errors or ["(root): Beam cannot encode it as a row"]

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt (and registered) from the type wherever it is unpickled.
        return (typed_output, (self.output_type,))


_WHAT: Final = "the agent's result"


def untyped_output(value: object) -> OutputInvalid:
    """The error for a typed value completed under a RunAgent that declared no output type."""
    error = (
        f"(root): the agent completed with a {type(value).__name__}, and this RunAgent has "
        "no output_type: return bytes, or pass RunAgent(..., output_type=...)"
    )
    return OutputInvalid("bytes", [error], _shown(value), what=_WHAT)


def _shown(value: object) -> bytes:
    return repr(value)[:_SHOWN].encode("utf-8", "backslashreplace")


class OutputRowType(RowTypeConstraint):
    """The row type of one output type: Beam's schema-aware transforms read its fields.

    Its schema id is the runtime's (never written onto the user's class),
    so every schema Beam builds from it is the one whose constructor
    rebuilds the output type.
    """

    def __init__(self, typed: TypedOutput, schema_id: str) -> None:
        super().__init__(list(typed.fields), typed.output_type)
        self._typed = typed
        self._schema_id = schema_id

    def set_schema_id(self, schema_id: str) -> None:
        self._schema_id = schema_id

    def __eq__(self, other: object) -> bool:
        # A downstream step declared on the user's own class (`beam.Map` with
        # `Tuple[bytes, Decision]` hints) reads these rows as that class: Beam's
        # type check asks `sub == base` first, and here that is true.
        if other is self._typed.output_type:
            return True
        return type(other) is type(self) and self._fields == other._fields  # Beam's own rule

    def __hash__(self) -> int:
        return hash(self._fields)

    def __call__(self, *values: Any, **named: Any) -> Any:
        # Beam's row type builds its user type positionally; a model or dataclass needs names.
        return self._typed.rebuild(*values, **named)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_row_type_of, (self._typed.output_type,))


def _row_type_of(output_type: type) -> OutputRowType:
    return typed_output(output_type).row_type


class OutputRowCoder(RowCoder):
    """Beam's row coder over the output type's schema: deterministic, as grouping needs.

    It speaks Beam's standard row encoding, so a runner or another SDK reads
    it as any schema'd PCollection; only the registry lookup by schema id
    makes its decoded rows instances of the output type.
    """

    def __init__(self, schema: schema_pb2.Schema, output_type: type) -> None:
        build_row_coder: Callable[[schema_pb2.Schema], None] = super().__init__
        build_row_coder(schema)
        self._output_type = output_type

    @classmethod
    def from_type_hint(cls, type_hint: Any, registry: Any) -> Any:
        return type_hint._typed.coder

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt (and its schema registered) from the type wherever it is unpickled.
        return (_coder_of, (self._output_type,))


def _coder_of(output_type: type) -> RowCoder:
    return typed_output(output_type).coder


coder_registry.register_coder(OutputRowType, OutputRowCoder)


def _dataframe_batches(element_type: Any, batch_type: Any) -> Any:
    """Beam's DataFrame batches of a typed result's rows (`_typed_frames`); TypeError otherwise.

    A TypeError is how a batch converter declines: Beam asks the next one.
    """
    if not isinstance(element_type, OutputRowType):
        raise TypeError("not the row type of a typed agent result")
    pandas = importlib.import_module("pandas")  # loaded already: it is asking for a DataFrame
    if batch_type is not pandas.DataFrame:
        raise TypeError("typed agent results batch only as a pandas DataFrame")
    from beam_agents.runtime._typed_frames import TypedRowsToDataFrame

    return TypedRowsToDataFrame(element_type)


def _ask_first(name: str, constructor: Callable[[Any, Any], Any]) -> None:
    """Register a batch converter ahead of Beam's own, which are asked in registration order.

    Beam's pandas converter accepts any row type and would be asked first
    otherwise, whenever `apache_beam.dataframe` was imported before us.
    """
    converters = typing.cast(dict[str, Any], batch.BATCH_CONVERTER_REGISTRY)
    if name in converters:
        return
    others = dict(converters)
    converters.clear()
    converters[name] = constructor
    converters.update(others)


_ask_first("beam_agents_typed_results", _dataframe_batches)


@functools.lru_cache(maxsize=128)
def _typed_output(output_type: type) -> TypedOutput:
    try:
        schema = output_schema(output_type)
    except ConfigurationError as exc:
        raise ConfigurationError(FIELD, exc.problem) from None
    return TypedOutput(output_type, schema)


def typed_output(output_type: object) -> TypedOutput:
    """The `TypedOutput` of a pydantic model, dataclass or NamedTuple (cached per type).

    Raises `ConfigurationError` naming `RunAgent.output_type` for anything
    else (a JSON Schema mapping types no Python value, so no Beam row), and
    for a field whose type has no Beam schema.
    """
    if not isinstance(output_type, type):
        what = "a JSON Schema mapping" if isinstance(output_type, Mapping) else "a"
        raise ConfigurationError(
            FIELD,
            f"must be a pydantic model, a dataclass or a typing.NamedTuple (a Beam schema "
            f"needs a Python type), got {what} {type(output_type).__name__}",
        )
    return _typed_output(output_type)


def _row_fields(output_type: type) -> tuple[tuple[str, Any], ...]:
    """Each field with its Beam type, or `ConfigurationError` naming the field."""
    name = output_type.__qualname__
    if dataclasses.is_dataclass(output_type):
        _check_init_fields(output_type)
    annotations = field_annotations(output_type)
    if not annotations:
        raise ConfigurationError(FIELD, f"{name} has no fields: a Beam row needs at least one")
    return tuple((key, _beam_type(value, f"{name}.{key}")) for key, value in annotations.items())


def _check_init_fields(output_type: type) -> None:
    for field in dataclasses.fields(output_type):
        if not field.init:
            raise ConfigurationError(
                FIELD,
                f"{output_type.__qualname__}.{field.name} is not an __init__ argument "
                "(init=False): a decoded row could not be rebuilt with it",
            )


def _beam_type(annotation: Any, where: str) -> Any:
    """The Beam field type of `annotation`, or `ConfigurationError` naming `where`."""
    if annotation in _ATOMIC:
        return annotation
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:  # constraints (a pydantic Field) are the validator's
        return _beam_type(args[0], where)
    if origin is Literal:
        kinds = {type(arg) for arg in args}
        if len(kinds) == 1 and next(iter(kinds)) in _ATOMIC:
            return next(iter(kinds))
        raise _unsupported(where, annotation, "a Literal must list values of one type")
    if origin is typing.Union or origin is types.UnionType:
        rest = [arg for arg in args if arg is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return Optional[_beam_type(rest[0], where)]  # noqa: UP045  # Beam reads typing's
        raise _unsupported(where, annotation, "a union other than X | None has no Beam type")
    if origin in (list, Sequence) and len(args) == 1:
        return Sequence[_beam_type(args[0], where)]  # type: ignore[misc]
    if is_named_tuple(annotation) or dataclasses.is_dataclass(annotation):
        raise _unsupported(where, annotation, "nested rows are not supported: flatten them")
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        raise _unsupported(where, annotation, "nested rows are not supported: flatten them")
    raise _unsupported(
        where,
        annotation,
        "a field must be bool, int, float, str, bytes, a Literal of one of those, "
        "X | None, or list[X]",
    )


def _unsupported(where: str, annotation: Any, why: str) -> ConfigurationError:
    plain = isinstance(annotation, type) and not typing.get_args(annotation)
    shown = annotation.__qualname__ if plain else repr(annotation)
    return ConfigurationError(FIELD, f"{where}: {shown} has no Beam schema type ({why})")


def _rebuild(output_type: type, names: Sequence[str]) -> Callable[..., Any]:
    """What turns a decoded row's values, in field order, back into `output_type`."""
    if is_named_tuple(output_type):
        return output_type
    if issubclass(output_type, pydantic.BaseModel):
        model = output_type

        def rebuild_model(*values: Any) -> Any:
            return model.model_construct(**dict(zip(names, values, strict=True)))

        return rebuild_model

    def rebuild(*values: Any) -> Any:
        return output_type(**dict(zip(names, values, strict=True)))

    return rebuild


def _register(
    output_type: type, fields: Sequence[tuple[str, Any]], rebuild: Callable[..., Any]
) -> schema_pb2.Schema:
    """The output type's Beam schema, registered with the constructor that rebuilds it.

    The id is a uuid5 of the type's name and fields, so every process that
    loads the type registers the same id; a second class of the same name
    and fields in one process (a test's local class, redefined) gets an id
    of its own.
    """
    layout = schemas.named_fields_to_schema(list(fields), schema_id="layout")
    seed = f"{output_type.__module__}.{output_type.__qualname__}:{layout.SerializeToString()!r}"
    with _ids_lock:
        for attempt in range(1_000):
            schema_id = str(uuid.uuid5(_NAMESPACE, f"{seed}#{attempt}"))
            owner = _id_owners.setdefault(schema_id, output_type)
            if owner is output_type:
                break
        else:
            raise AssertionError("unreachable: a thousand classes of one name and layout")
        schema: schema_pb2.Schema = schemas.named_fields_to_schema(
            list(fields), schema_id=schema_id
        )
        add: Callable[[Any, schema_pb2.Schema], None] = SCHEMA_REGISTRY.add
        add(rebuild, schema)
    return schema
