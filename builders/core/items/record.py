"""The typed records that source adapters produce and builders emit.

:class:`MCQRecord` is a multiple-choice item (every builder emits them); :class:`OpenItem` an open-ended
question with its gold answer (GSM8K, MATH), from which the prediction-based builders make multiple
choice. Both have a ``content_key``: the per-item random generators are keyed by it, so an item gets the
same draws whatever rows surround it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Every option of a release is labelled by one letter: by its lm-eval and inspect tasks, and by the papers' export
# layouts. A source item with more options is malformed (the loader refuses it, for every builder).
MAX_CHOICES = len(LETTERS)


@dataclass(frozen=True, slots=True)  # slots: a release of MMLU's 29 configs holds 415,483 of them
class MCQRecord:
    """A multiple-choice item.

    ``choices`` is a tuple so that no transform can mutate the list another record still reads
    (the WiCkeD reference code read the gold from a list it had already edited through a shallow copy).
    The gold is tracked by index, never looked up by text.
    """

    id: str
    question: str
    choices: tuple[str, ...]
    answer: int
    source: str
    source_config: str
    source_split: str
    source_index: int
    subject: str | None = None
    category: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # A builder's own top-level columns beyond the base ones (declared in ``Build.extra_columns``).
    columns: Mapping[str, Any] = field(default_factory=dict)

    @property
    def gold(self) -> str:
        return self.choices[self.answer]

    @property
    def content_key(self) -> str:
        """What the item says (question and options), not where it sits: the key of its random draws."""
        return content_key(self.question, *self.choices)

    def replace(self, **changes: Any) -> "MCQRecord":
        if "choices" in changes:
            changes["choices"] = tuple(changes["choices"])
        return _replaced(self, changes)

    def with_metadata(self, **fields: Any) -> "MCQRecord":
        return _replaced(self, {"metadata": {**self.metadata, **fields}})

    def with_columns(self, **values: Any) -> "MCQRecord":
        return _replaced(self, {"columns": {**self.columns, **values}})

    def to_row(self) -> dict[str, Any]:
        row = {name: getattr(self, name) for name in BASE_COLUMNS}
        row["choices"] = list(self.choices)
        row.update(self.columns)
        row["metadata"] = dict(self.metadata)
        return row


_FIELD_ORDER = tuple(f.name for f in dataclasses.fields(MCQRecord))
_RECORD_FIELDS = frozenset(_FIELD_ORDER)


def _replaced(record: MCQRecord, changes: dict[str, Any]) -> MCQRecord:
    """``dataclasses.replace(record, **changes)`` without its per-field ``__init__`` (the record has no
    ``__post_init__``): a build makes a record several times over for each of its items."""
    unknown = changes.keys() - _RECORD_FIELDS
    if unknown:
        raise TypeError(f"MCQRecord has no field {sorted(unknown)[0]!r}")
    new = object.__new__(MCQRecord)
    for name in _FIELD_ORDER:  # slots, set as a frozen dataclass's __init__ sets them
        object.__setattr__(new, name, changes[name] if name in changes else getattr(record, name))
    return new


# The features of a release's columns, described without importing ``datasets`` (0.6 s, which every command paid
# before its arguments were even parsed); record_features makes them ``datasets`` features when a schema is built.


@dataclass(frozen=True)
class Value:
    """``datasets.Value(dtype)``, made when a schema is built."""

    dtype: str


@dataclass(frozen=True)
class ListOf:
    """A list of ``feature`` (``datasets.List``, or ``Sequence`` for readers older than datasets 4)."""

    feature: Any


def as_datasets_feature(feature: Any) -> Any:
    """A feature description as ``datasets`` features (a ``datasets`` feature is kept as it is)."""
    import datasets

    if isinstance(feature, Value):
        return datasets.Value(feature.dtype)
    if isinstance(feature, ListOf):
        return getattr(datasets, "List", datasets.Sequence)(as_datasets_feature(feature.feature))
    if isinstance(feature, Mapping):
        return {name: as_datasets_feature(value) for name, value in feature.items()}
    return feature


BASE_FEATURES: dict[str, Any] = {
    "id": Value("string"),
    "question": Value("string"),
    "choices": ListOf(Value("string")),
    "answer": Value("int32"),
    "source": Value("string"),
    "source_config": Value("string"),
    "source_split": Value("string"),
    "source_index": Value("int64"),
    "subject": Value("string"),
    "category": Value("string"),
}
BASE_COLUMNS = tuple(BASE_FEATURES)


def release_features(metadata: Mapping[str, Any], columns: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A release table's columns, described: the base columns, a builder's extra ``columns``, then a typed
    ``metadata`` struct."""
    features = dict(BASE_FEATURES)
    features.update(columns or {})
    if metadata:
        features["metadata"] = dict(metadata)
    return features


def record_features(metadata: Mapping[str, Any], columns: Mapping[str, Any] | None = None):
    """Explicit Arrow schema (``datasets.Features``) of :func:`release_features`."""
    from datasets import Features

    return Features(as_datasets_feature(release_features(metadata, columns)))


# A release's schema as ``datasets`` writes it (the Arrow schema, the JSON of the Parquet files' metadata, the
# card's YAML), made from the descriptions without importing ``datasets`` (a second with pandas, where a build loads
# it for nothing else); a feature of ``datasets``' own is read by ``datasets``. tests/test_release.py holds the
# three to ``datasets``' on every kind of description.


def _described(feature: Any) -> bool:
    if isinstance(feature, ListOf):
        return _described(feature.feature)
    if isinstance(feature, Mapping):
        return all(_described(value) for value in feature.values())
    return isinstance(feature, Value)


def arrow_schema(features: Mapping[str, Any]):
    """The ``pyarrow.Schema`` of a table of ``features`` (``datasets.Features(...).arrow_schema``, without its
    metadata)."""
    import pyarrow as pa

    if not _described(features):
        from datasets import Features

        return Features(as_datasets_feature(features)).arrow_schema.remove_metadata()
    return pa.schema(_arrow_type(features))


def _arrow_type(feature: Any):
    import pyarrow as pa

    if isinstance(feature, Value):
        return pa.type_for_alias(feature.dtype)
    if isinstance(feature, ListOf):
        return pa.list_(_arrow_type(feature.feature))
    return pa.struct([pa.field(name, _arrow_type(value)) for name, value in feature.items()])


def features_json(features: Mapping[str, Any]) -> dict[str, Any]:
    """``datasets.Features(...).to_dict()`` of ``features``: what a Parquet file's metadata records."""
    if not _described(features):
        from datasets import Features

        return Features(as_datasets_feature(features)).to_dict()
    return {name: _json(value) for name, value in features.items()}


def _json(feature: Any) -> Any:
    if isinstance(feature, Value):
        return {"dtype": feature.dtype, "_type": "Value"}
    if isinstance(feature, ListOf):
        return {"feature": _json(feature.feature), "_type": "List"}
    return {name: _json(value) for name, value in feature.items()}


def features_yaml(features: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The card's ``features`` list of ``features`` (``datasets.Features(...)._to_yaml_list()``)."""
    if not _described(features):
        from datasets import Features

        return Features(as_datasets_feature(features))._to_yaml_list()
    return _yaml(features)["struct"]


def _yaml(feature: Any) -> dict[str, Any]:
    if isinstance(feature, Value):
        return {"dtype": feature.dtype}
    if isinstance(feature, ListOf):  # a list of one value or of one struct is written as that value or struct
        inner = _yaml(feature.feature)
        return {"list": inner["dtype"] if list(inner) == ["dtype"] else inner["struct"] if list(inner) == ["struct"]
                else inner}
    return {"struct": [{"name": name, **_yaml(value)} for name, value in feature.items()]}


def list_of(feature: Any) -> ListOf:
    return ListOf(feature)


def is_blank(text: str) -> bool:
    """Text with nothing to read: empty, whitespace, or only invisible format characters (a zero-width space, a
    soft hyphen, a word joiner, a byte-order mark), which ``str.strip`` keeps."""
    return all(char.isspace() or unicodedata.category(char) == "Cf" for char in text)


def normalize_text(text: str) -> str:
    """Whitespace-normalised text: two options are duplicates only when these are equal. Case matters:
    alleles ("Bb", "BB"), logic formulas ("Sc ≡ Ej", "sC ≡ eJ") and Roman numerals ("ii", "II") differ."""
    return " ".join(text.split())


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@lru_cache(maxsize=1 << 17)
def content_key(*parts: str) -> str:
    # kept per distinct content: a build reads an item's key for its draws, its sample, its folds and its order
    return text_hash("\x1f".join(parts))


@dataclass(frozen=True)
class OpenItem:
    """One open-ended question with its gold answer, as every option will spell it (GSM8K, MATH)."""

    id: str
    split: str
    index: int  # row in the split, in source order (subject configs concatenated in name order)
    question: str
    gold: str  # the answer as shown among the options
    gold_text: str  # the answer as written in the source
    solution: str
    config: str = "default"
    subject: str | None = None
    category: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)  # extra record metadata (MATH: level)
    # Other answers the source gives for this question (MATH: further boxed answers spelled differently);
    # the builder keeps the item only if they are all equivalent to the gold.
    gold_alternatives: tuple[str, ...] = ()

    @property
    def content_key(self) -> str:
        return content_key(self.question)
