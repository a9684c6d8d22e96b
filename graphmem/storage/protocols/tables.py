"""A store's tables as its catalog states them, for copying a store between engines."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class Column:
    name: str
    type: str


@dataclass(frozen=True)
class TableSpec:
    """A node table (with its primary key) or a rel table (with its FROM/TO pairs)."""

    name: str
    kind: str  # "NODE" | "REL"
    columns: tuple[Column, ...]
    primary_key: str | None = None
    pairs: tuple[tuple[str, str, str, str], ...] = field(default=())  # from, to, from_pk, to_pk

    def files(self) -> list[str]:
        """The Parquet files of this table: one, or one per FROM/TO pair of a rel table."""
        if self.kind == "NODE":
            return [f"{self.name}.parquet"]
        return [f"{self.name}.{a}.{b}.parquet" for a, b, _, _ in self.pairs]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TableSpec:
        return cls(
            name=data["name"],
            kind=data["kind"],
            columns=tuple(Column(**c) for c in data["columns"]),
            primary_key=data.get("primary_key"),
            pairs=tuple(tuple(p) for p in data.get("pairs", ())),
        )


@dataclass(frozen=True)
class Digest:
    rows: int
    sha256: str


class Tables(Protocol):
    def specs(self) -> list[TableSpec]:
        """Every table of the store, node tables first, each by name."""
        ...

    def export(self, spec: TableSpec, folder: Path) -> Digest:
        """Write the table's Parquet file(s) (`TableSpec.files`) into `folder`, each whole or
        absent; returns the digest of its rows."""
        ...

    def load(self, spec: TableSpec, folder: Path) -> None:
        """Replace the table's rows by those of its Parquet file(s), in one transaction; the
        table is made first when the store lacks it."""
        ...

    def digest(self, spec: TableSpec) -> Digest:
        """Rows and a hash of the table's content that does not depend on row order, chunking
        or the engine."""
        ...
