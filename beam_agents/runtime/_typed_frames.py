"""Typed agent results as DataFrame batches, for `apache_beam.dataframe.convert.to_dataframe`.

Beam builds a DataFrame batch with `pandas.DataFrame.from_records`, which
reads each element as a tuple of its field values: a NamedTuple is one, but
a dataclass is not iterable and a pydantic model iterates as (name, value)
pairs. This converter reads each field by name instead, for the row types of
typed results only; every other element type keeps Beam's converter.

Imported only when Beam asks for a DataFrame batch (pandas is loaded then),
never with the runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from apache_beam.typehints.pandas_type_compatibility import DataFrameBatchConverterDropIndex

__all__ = ["TypedRowsToDataFrame"]


class TypedRowsToDataFrame(DataFrameBatchConverterDropIndex):
    """A DataFrame batch of typed results, each field read as an attribute."""

    def produce_batch(self, elements: Iterable[Any]) -> Any:
        """The batch as Beam builds it from records: each element's fields, in order."""
        names = self._columns
        records = [tuple(getattr(element, name) for name in names) for element in elements]
        from_records: Callable[[list[tuple[Any, ...]]], Any] = super().produce_batch
        return from_records(records)
