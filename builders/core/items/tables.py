"""Statistics as data: a builder returns tables of numbers; the release renders them once, for the card,
the console summary and ``validation_report.json``.

Cells are numbers or short strings. A float column listed in ``percent`` holds fractions (0.25) and is
shown as a percentage; other floats are shown with four decimals. Tests read the numbers
(``table.row("test")["altered"]``), never the Markdown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

Cell = Any  # int | float | str | None


@dataclass(frozen=True)
class Table:
    # any sequences are accepted; __post_init__ stores them as tuples
    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Cell]]
    note: str = ""  # Markdown shown above the table: what the numbers are
    percent: Sequence[str] = ()  # columns of fractions, shown as percentages

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(self.columns))
        object.__setattr__(self, "rows", tuple(tuple(row) for row in self.rows))
        object.__setattr__(self, "percent", tuple(self.percent))
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(f"table {self.title!r}: row {row} has {len(row)} cells for {len(self.columns)} columns")

    def records(self) -> list[dict[str, Cell]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def row(self, *key: Cell) -> dict[str, Cell]:
        """The row whose first cells are ``key``."""
        for row in self.rows:
            if tuple(row[: len(key)]) == key:
                return dict(zip(self.columns, row, strict=True))
        raise KeyError(f"table {self.title!r} has no row {key}")

    def column(self, name: str) -> list[Cell]:
        index = self.columns.index(name)
        return [row[index] for row in self.rows]

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "note": self.note, "columns": list(self.columns),
                "rows": [list(row) for row in self.rows], "percent": list(self.percent)}

    def to_markdown(self) -> str:
        lines = [self.note, ""] if self.note else []
        if self.rows:
            lines += ["| " + " | ".join(self.columns) + " |", "|" + "---|" * len(self.columns)]
            lines += ["| " + " | ".join(self._cell(c, v) for c, v in zip(self.columns, row, strict=True)) + " |"
                      for row in self.rows]
        else:
            lines.append("(none)")
        return "\n".join(lines).strip()

    def _cell(self, column: str, value: Cell) -> str:
        if value is None:
            return "–"
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, float):
            return f"{value:.1%}" if column in self.percent else f"{value:.4f}".rstrip("0").rstrip(".") or "0"
        if isinstance(value, int):
            return f"{value:,}" if abs(value) >= 10_000 else str(value)
        return str(value).replace("|", "\\|").replace("\n", " ")


@dataclass
class Statistics:
    """A build's tables, in card order."""

    tables: list[Table] = field(default_factory=list)

    def add(self, table: Table) -> Table:
        if any(t.title == table.title for t in self.tables):
            raise ValueError(f"two statistics tables are titled {table.title!r}")
        self.tables.append(table)
        return table

    def extend(self, tables: Iterable[Table]) -> "Statistics":
        for table in tables:
            self.add(table)
        return self

    def __getitem__(self, title: str) -> Table:
        for table in self.tables:
            if table.title == title:
                return table
        raise KeyError(f"no statistics table {title!r}; tables: {[t.title for t in self.tables]}")

    def __contains__(self, title: str) -> bool:
        return any(t.title == title for t in self.tables)

    def __iter__(self):
        return iter(self.tables)

    def to_list(self) -> list[dict[str, Any]]:
        return [table.to_dict() for table in self.tables]


def counts_table(title: str, counts: Mapping[str, int], key: str = "reason", value: str = "items",
                 note: str = "") -> Table:
    """A two-column table of counts, sorted by key."""
    return Table(title, (key, value), tuple(sorted(counts.items())), note)


def table_from_records(title: str, records: Sequence[Mapping[str, Cell]], note: str = "",
                       percent: Sequence[str] = ()) -> Table:
    columns = tuple(records[0]) if records else ()
    return Table(title, columns, tuple(tuple(r[c] for c in columns) for r in records), note, tuple(percent))
