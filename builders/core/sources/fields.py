"""Typed readers of a source row's fields, the one way every source adapter reads its columns.

The multiple-choice adapters (:mod:`builders.core.sources.benchmarks`) and the open-ended ones in the builders (GSM8K,
MATH, HumanEval, MBPP) read through these, so a wrong value is reported the same way whatever the source: a
:class:`MalformedRow` naming the row and the field ("malformed row mmlu/test/3: field 'answer': missing"),
which the loader turns into a ``malformed_row`` exclusion, or one error line under ``--strict``.
"""

from __future__ import annotations

from typing import Any, Mapping

from builders.core.errors import MalformedRow
from builders.core.items.record import is_blank


def required(row: Mapping[str, Any], name: str, row_id: str) -> Any:
    """The field's value, of any type; absent or null is malformed."""
    if name not in row or row[name] is None:
        raise MalformedRow(row_id, name, "missing")
    return row[name]


def text(row: Mapping[str, Any], name: str, row_id: str, *, non_empty: bool = False) -> str:
    """A string; with ``non_empty``, one that is not blank either (a blank question asks nothing; a zero-width
    space is blank)."""
    value = required(row, name, row_id)
    if not isinstance(value, str):
        raise MalformedRow(row_id, name, f"expected a string, got {type(value).__name__}")
    if non_empty and is_blank(value):
        raise MalformedRow(row_id, name, f"empty {name}")
    return value


def optional_text(row: Mapping[str, Any], name: str, row_id: str) -> str | None:
    """A string, or None where the field is absent, null or empty."""
    value = row.get(name)
    if value is not None and not isinstance(value, str):
        raise MalformedRow(row_id, name, f"expected a string, got {type(value).__name__}")
    return value or None


def integer(row: Mapping[str, Any], name: str, row_id: str) -> int:
    """An integer; a boolean is not one, although Python counts True as 1."""
    value = required(row, name, row_id)
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedRow(row_id, name, f"expected an integer, got {type(value).__name__}")
    return value


def string_list(value: Any, name: str, row_id: str, *, allow_empty: bool = False) -> tuple[str, ...]:
    """A list of strings (a value, not a row: lists sit nested, as ``choices.text``), named by its field."""
    if not isinstance(value, (list, tuple)):
        raise MalformedRow(row_id, name, f"expected a list of strings, got {type(value).__name__}")
    if not value and not allow_empty:
        raise MalformedRow(row_id, name, "empty list")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise MalformedRow(row_id, f"{name}[{i}]", f"expected a string, got {type(item).__name__}")
    return tuple(value)


def index(value: Any, size: int, name: str, row_id: str) -> int:
    """An integer index into ``size`` choices."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedRow(row_id, name, f"expected an integer index, got {type(value).__name__} {value!r}")
    if not 0 <= value < size:
        raise MalformedRow(row_id, name, f"index {value} out of range for {size} choices")
    return value


def label_index(label: Any, labels: tuple[str, ...], name: str, row_id: str) -> int:
    """The position of a label ("B", "3") among the choices' labels."""
    if not isinstance(label, str) or label not in labels:
        raise MalformedRow(row_id, name, f"{label!r} is not one of the labels {list(labels)}")
    return labels.index(label)
