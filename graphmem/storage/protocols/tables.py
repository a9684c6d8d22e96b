"""A store's tables as its catalog states them, for copying a store between engines."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa


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


def digest(spec: TableSpec, tables: list[pa.Table]) -> Digest:
    """Rows and a hash of the table's content that does not depend on row order, chunking or
    the engine (every engine's `Tables.digest` is this, of the rows as the embedded engines read
    them into arrow): node rows in key order, each column in a canonical form (vectors as their
    float32 bytes); rel rows as sorted JSON lines."""
    hasher = hashlib.sha256()
    rows = 0
    for table in tables:
        rows += table.num_rows
        if spec.kind == "NODE":
            table = table.sort_by(spec.primary_key or table.column_names[0]).combine_chunks()
            for name in table.column_names:
                hasher.update(name.encode() + b"\0")
                hasher.update(_column_bytes(table.column(name)))
        else:
            lines = sorted(
                json.dumps(row, default=str, sort_keys=True) for row in table.to_pylist()
            )
            hasher.update("\n".join(lines).encode())
    return Digest(rows, hasher.hexdigest())


def _column_bytes(column: pa.ChunkedArray) -> bytes:
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    valid = np.asarray(array.is_valid()).tobytes()
    if pa.types.is_fixed_size_list(array.type):
        values = array.flatten().to_numpy(zero_copy_only=False)
        return valid + np.ascontiguousarray(values).tobytes()
    return valid + json.dumps(array.to_pylist(), default=str).encode()


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
