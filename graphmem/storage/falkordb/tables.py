"""Copying a store table by table between FalkorDB and the embedded engines (graphmem.migration):
the embedded engines' tables, each as labelled nodes or typed relationships here, written to and
read from the same Parquet files with the same digest (graphmem.storage.protocols.tables), so a
table copied either way proves itself whole.

FalkorDB has no catalog: the tables are those the embedded schema's migrations make
(graphmem.schema, read here as the catalog would state them), plus one per recorded vector set.
What the two engines keep for themselves does not travel:

- `_Meta` rows that only this engine has (`schema_version`, `vector_set:<label>`) are left out
  of the table, and kept when it is loaded: a loaded vector set is recorded as this engine
  records one.
- `_Migration` is this engine's own migration record here. The embedded schema's history, the
  `_Migration` table of a copy, lives under `_EmbeddedMigration`; a graph made on this engine
  answers with the embedded schema's migrations, as applied when its own schema was, since its
  rows have the embedded schema's latest shape.

A load replaces a table's rows in batches (UNWIND of a few thousand rows per query, fewer for
vectors); the first batch deletes the old rows in the same query. A table bigger than one batch
is not loaded atomically: a load that stops halfway is found by the digest, and loading again
replaces what it left. Loading drops this node's search state and tells the other nodes to
drop theirs, as a caller's writing Cypher does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from graphmem.errors import InvalidInput, StorageError
from graphmem.indexes.search_state import SearchState
from graphmem.schema import migrations
from graphmem.storage.falkordb import stream
from graphmem.storage.falkordb.connection import STREAM_MAXLEN, FalkorConnection
from graphmem.storage.falkordb.schema import ensure_index
from graphmem.storage.falkordb.vectors import SET_KEY, FalkorVectors
from graphmem.storage.protocols.tables import Column, Digest, TableSpec, digest

Reader = Callable[[str, dict[str, Any]], list[list[Any]]]

MIGRATION = "_Migration"
EMBEDDED_MIGRATION = "_EmbeddedMigration"  # the label of the embedded schema's history here
META = "_Meta"
OWN_META = ("schema_version",)  # _Meta keys of this engine alone (and SET_KEY + label)
BATCH_ROWS = 2000  # rows per query of a load or a page of an export
BATCH_VALUES = 500_000  # vector components per query (a float travels as ~12 bytes of text)
_TYPES: dict[str, pa.DataType] = {
    "STRING": pa.string(),
    "INT64": pa.int64(),
    "INT32": pa.int32(),
    "DOUBLE": pa.float64(),
    "FLOAT": pa.float32(),
    "BOOL": pa.bool_(),
    "TIMESTAMP": pa.timestamp("us"),  # stored as integer microseconds
}
_LIST = re.compile(r"^(\w+)\[(\d*)\]$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# the embedded schema's DDL, as graphmem/schema/*.cypher writes it
_CREATE = re.compile(r"^CREATE\s+(NODE|REL)\s+TABLE\s+(\w+)\s*\((.*)\)$", re.S | re.I)
_ADD_PAIR = re.compile(r"^ALTER\s+TABLE\s+(\w+)\s+ADD\s+FROM\s+(\w+)\s+TO\s+(\w+)$", re.I)
_ADD = re.compile(r"^ALTER\s+TABLE\s+(\w+)\s+ADD\s+(\w+)\s+(\S+)$", re.I)
_DROP = re.compile(r"^DROP\s+TABLE\s+(\w+)$", re.I)
_DDL = re.compile(r"^(CREATE|ALTER|DROP)\s+(NODE\s+|REL\s+)?TABLE\b", re.I)
_PAIR = re.compile(r"^FROM\s+(\w+)\s+TO\s+(\w+)$", re.I)
_KEY = re.compile(r"^PRIMARY\s+KEY\s*\(\s*(\w+)\s*\)$", re.I)
_ALIASES = {"BOOLEAN": "BOOL", "INT": "INT32"}


def _type_name(text: str) -> str:
    """A DDL type as the embedded catalog names it (`BOOLEAN` is `BOOL` there)."""
    text = text.strip().upper()
    match = _LIST.match(text)
    if match:
        return f"{_ALIASES.get(match[1], match[1])}[{match[2]}]"
    return _ALIASES.get(text, text)


def _items(body: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, char in enumerate(body):
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            parts.append(body[start:i].strip())
            start = i + 1
    parts.append(body[start:].strip())
    return [p for p in parts if p]


def embedded_specs() -> list[TableSpec]:
    """The tables of an embedded store migrated to the latest schema, as its catalog states
    them: each migration's DDL applied in order (`_Migration` is made by the migration runner)."""
    return list(_embedded_specs())


@cache
def _embedded_specs() -> tuple[TableSpec, ...]:
    nodes: dict[str, tuple[list[Column], str]] = {
        MIGRATION: (
            [
                Column("version", "INT64"),
                Column("name", "STRING"),
                Column("applied_at", "TIMESTAMP"),
            ],
            "version",
        )
    }
    rels: dict[str, tuple[list[Column], list[tuple[str, str]]]] = {}
    for migration in migrations():
        for statement in migration.statements:
            statement = " ".join(statement.split())
            if not _DDL.match(statement):
                continue
            if created := _CREATE.match(statement):
                kind, name, body = created[1].upper(), created[2], created[3]
                columns, pairs, key = [], [], None
                for item in _items(body):
                    if pair := _PAIR.match(item):
                        pairs.append((pair[1], pair[2]))
                    elif named := _KEY.match(item):
                        key = named[1]
                    else:
                        words = item.split()
                        columns.append(Column(words[0], _type_name(words[1])))
                        if len(words) > 2 and " ".join(words[2:]).upper() == "PRIMARY KEY":
                            key = words[0]
                if kind == "NODE":
                    if key is None:
                        raise StorageError(f"node table {name} of the schema has no primary key")
                    nodes[name] = (columns, key)
                else:
                    rels[name] = (columns, pairs)
            elif pair := _ADD_PAIR.match(statement):
                rels[pair[1]][1].append((pair[2], pair[3]))
            elif added := _ADD.match(statement):
                table = nodes.get(added[1]) or rels[added[1]]
                table[0].append(Column(added[2], _type_name(added[3])))
            elif dropped := _DROP.match(statement):
                nodes.pop(dropped[1], None)
                rels.pop(dropped[1], None)
            else:  # a schema change this reading does not know would copy the wrong columns
                raise StorageError(f"cannot read the schema's statement: {statement[:120]}")
    specs = [
        TableSpec(name, "NODE", tuple(columns), primary_key=key)
        for name, (columns, key) in nodes.items()
    ]
    specs += [
        TableSpec(
            name,
            "REL",
            tuple(columns),
            pairs=tuple((a, b, nodes[a][1], nodes[b][1]) for a, b in pairs),
        )
        for name, (columns, pairs) in rels.items()
    ]
    return tuple(sorted(specs, key=lambda s: (s.kind != "NODE", s.name)))


def vector_spec(name: str, dim: int) -> TableSpec:
    """A vector set as the embedded engines' table of it (`id`, `vec FLOAT[dim]`)."""
    return TableSpec(
        name, "NODE", (Column("id", "STRING"), Column("vec", f"FLOAT[{dim}]")), primary_key="id"
    )


def arrow_type(name: str) -> pa.DataType:
    """The arrow type the embedded engines read a column of this type as."""
    match = _LIST.match(name)
    if match:
        item = pa.field("l", arrow_type(match[1]))
        return pa.list_(item, int(match[2])) if match[2] else pa.list_(item)
    try:
        return _TYPES[name]
    except KeyError:
        raise StorageError(f"no FalkorDB form for column type {name}") from None


def _dim(column: Column) -> int | None:
    """A vector column's dimension (`FLOAT[384]`); None for another column."""
    match = _LIST.match(column.type)
    return int(match[2]) if match and match[2] else None


def _label(spec: TableSpec) -> str:
    """Where a table's rows live in the graph (checked: names are interpolated into queries)."""
    label = EMBEDDED_MIGRATION if spec.name == MIGRATION else spec.name
    for name in (label, *(c.name for c in spec.columns), *(x for p in spec.pairs for x in p)):
        if not _NAME.match(name):
            raise InvalidInput(f"{name!r} is not a table or column name", table=spec.name)
    return label


def _batch_rows(spec: TableSpec) -> int:
    values = sum(_dim(c) or 0 for c in spec.columns)
    return max(1, min(BATCH_ROWS, BATCH_VALUES // values)) if values else BATCH_ROWS


def _own_meta() -> tuple[str, dict[str, Any]]:
    return "NOT (n.key IN $own OR n.key STARTS WITH $set)", {"own": list(OWN_META), "set": SET_KEY}


def _arrow(columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> pa.Table:
    """Rows as returned, in the column types the embedded engines read them as."""
    arrays = []
    for i, (_, kind) in enumerate(columns):
        values = [row[i] for row in rows]
        target = arrow_type(kind)
        if pa.types.is_fixed_size_list(target) and all(v is not None for v in values):
            size = target.list_size
            flat = np.asarray(values, np.float32).reshape(-1) if values else np.zeros(0, "f4")
            arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(flat), size).cast(target))
        else:
            arrays.append(pa.array(values, target))
    return pa.table(arrays, names=[name for name, _ in columns])


class FalkorTables:
    """graphmem.storage.protocols.Tables over one graph. `read` answers from another graph (a
    backup's copy) when given; loads always go to the store's own."""

    def __init__(
        self,
        conn: FalkorConnection,
        vectors: FalkorVectors,
        search: SearchState,
        read: Reader | None = None,
    ) -> None:
        self.conn = conn
        self.vectors = vectors
        self.search = search
        self.read: Reader = read or conn.read

    def specs(self) -> list[TableSpec]:
        rows = self.read(
            "MATCH (m:_Meta) WHERE m.key STARTS WITH $p RETURN m.key, m.value", {"p": SET_KEY}
        )
        sets = [vector_spec(str(k).removeprefix(SET_KEY), int(v)) for k, v in rows]
        specs = embedded_specs() + sets
        return sorted(specs, key=lambda s: (s.kind != "NODE", s.name))

    # -- reading --------------------------------------------------------------------------------

    def _node_rows(self, spec: TableSpec) -> list[list[Any]]:
        """Every row, paged by primary key (vectors make a whole reply too big to hold twice)."""
        label, key = _label(spec), spec.primary_key
        fields = ", ".join(f"n.`{c.name}`" for c in spec.columns)
        where, params = _own_meta() if spec.name == META else ("", {})
        rows: list[list[Any]] = []
        after: Any = None
        size = _batch_rows(spec)
        while True:
            conditions = [where] if where else []
            if after is not None:
                conditions.append(f"n.`{key}` > $after")
            clause = f" WHERE {' AND '.join(conditions)}" if conditions else ""
            page = self.read(
                f"MATCH (n:{label}){clause} RETURN {fields} ORDER BY n.`{key}` LIMIT {size}",
                {**params, "after": after} if after is not None else params,
            )
            rows += page
            if len(page) < size:
                break
            after = page[-1][[c.name for c in spec.columns].index(key or "")]
        if spec.name == MIGRATION and not rows:
            rows = self._embedded_history()
        return rows

    def _embedded_history(self) -> list[list[Any]]:
        """A graph made on this engine: the embedded schema's migrations, as applied when this
        engine's own schema was."""
        found = self.read("MATCH (m:_Migration) RETURN min(m.applied_at)", {})
        at = found[0][0] if found else None
        return [[m.version, m.name, at] for m in migrations()]

    def _tables(self, spec: TableSpec) -> list[pa.Table]:
        """The table's rows, one arrow table per file, as the embedded engines read them."""
        columns = [(c.name, c.type) for c in spec.columns]
        if spec.kind == "NODE":
            return [_arrow(columns, self._node_rows(spec))]
        _label(spec)
        found = []
        for a, b, key_a, key_b in spec.pairs:
            fields = "".join(f", r.`{c.name}`" for c in spec.columns)
            rows = self.read(
                f"MATCH (a:{a})-[r:{spec.name}]->(b:{b}) RETURN a.`{key_a}`, b.`{key_b}`{fields}",
                {},
            )
            found.append(_arrow([("from", "STRING"), ("to", "STRING"), *columns], rows))
        return found

    def export(self, spec: TableSpec, folder: Path) -> Digest:
        tables = self._tables(spec)
        for table, name in zip(tables, spec.files(), strict=True):
            tmp = folder / f".{name}.tmp"
            pq.write_table(table, tmp)
            tmp.replace(folder / name)  # a file under its name is whole
        return digest(spec, tables)

    def digest(self, spec: TableSpec) -> Digest:
        return digest(spec, self._tables(spec))

    # -- loading --------------------------------------------------------------------------------

    def load(self, spec: TableSpec, folder: Path) -> None:
        label = _label(spec)
        if spec.kind == "NODE":
            dim = next((d for c in spec.columns if (d := _dim(c))), None)
            if dim is not None:  # recorded as this engine records a set
                self.vectors.ensure_set(spec.name, dim)
            if spec.name != MIGRATION:
                ensure_index(self.conn, label, spec.primary_key or "")
            table = pq.read_table(folder / spec.files()[0])
            where, params = _own_meta() if spec.name == META else ("", {})
            delete = (f"MATCH (n:{label}){f' WHERE {where}' if where else ''} DELETE n", params)
            self._batches(delete, [(self._node_statement(spec, label), table)], spec)
        else:
            for a, b, key_a, key_b in spec.pairs:
                ensure_index(self.conn, a, key_a)
                ensure_index(self.conn, b, key_b)
            writes = [
                (self._rel_statement(spec, pair), pq.read_table(folder / name))
                for pair, name in zip(spec.pairs, spec.files(), strict=True)
            ]
            self._batches((f"MATCH ()-[r:{label}]->() DELETE r", {}), writes, spec)
        self._dropped()

    def _node_statement(self, spec: TableSpec, label: str) -> str:
        sets = ", ".join(
            f"n.`{c.name}` = vecf32($c{i}[i])" if _dim(c) else f"n.`{c.name}` = $c{i}[i]"
            for i, c in enumerate(spec.columns)
        )
        if spec.name == META:  # this engine's own keys stay, under their unique constraint
            return f"UNWIND range(0, $n - 1) AS i MERGE (n:{label} {{`key`: $c0[i]}}) SET {sets}"
        return f"UNWIND range(0, $n - 1) AS i CREATE (n:{label}) SET {sets}"

    def _rel_statement(self, spec: TableSpec, pair: tuple[str, str, str, str]) -> str:
        a, b, key_a, key_b = pair
        sets = ", ".join(f"r.`{c.name}` = $c{i}[i]" for i, c in enumerate(spec.columns))
        return (
            f"UNWIND range(0, $n - 1) AS i WITH i, $from[i] AS f, $to[i] AS t "
            f"MATCH (a:{a} {{`{key_a}`: f}}), (b:{b} {{`{key_b}`: t}}) "
            f"CREATE (a)-[r:{spec.name}]->(b)" + (f" SET {sets}" if sets else "")
        )

    def _batches(
        self,
        delete: tuple[str, dict[str, Any]],
        writes: list[tuple[str, pa.Table]],
        spec: TableSpec,
    ) -> None:
        """The delete and the first batch in one query, then a query per batch."""
        size = _batch_rows(spec)
        pending: list[tuple[str, dict[str, Any]]] = [delete]
        for statement, table in writes:
            for start in range(0, table.num_rows, size):
                pending.append((statement, _params(spec, table.slice(start, size))))
                self._send(pending)
                pending = []
        self._send(pending)

    def _send(self, statements: list[tuple[str, dict[str, Any]]]) -> None:
        if not statements:
            return
        with self.conn.transaction():
            for query, params in statements:
                self.conn.write(query, params, entity_graph=True)

    def _dropped(self) -> None:
        """Rows changed under every node's search state: this node reads its own again, and
        a reset entry has the others do the same."""
        self.search.discard()
        client: Any = self.conn.client
        entry = stream.reset_entry(node=self.conn.node_id)
        client.xadd(self.conn.stream_key, entry, maxlen=STREAM_MAXLEN, approximate=True)


def _params(spec: TableSpec, table: pa.Table) -> dict[str, Any]:
    """A batch's columns as parameter lists: times as integer microseconds, vectors as lists
    of their float32 values."""
    params: dict[str, Any] = {"n": table.num_rows}
    names = table.column_names
    if spec.kind == "REL":
        params["from"] = table.column("from").to_pylist()
        params["to"] = table.column("to").to_pylist()
    for i, column in enumerate(spec.columns):
        if column.name not in names:
            raise InvalidInput(f"the file of {spec.name} has no column {column.name}")
        values = table.column(column.name).combine_chunks()
        dim = _dim(column)
        if dim and values.null_count == 0:  # a matrix: converted to lists at once
            flat = values.flatten().to_numpy(zero_copy_only=False)
            params[f"c{i}"] = np.asarray(flat, np.float32).reshape(-1, dim)
            continue
        if pa.types.is_timestamp(values.type):
            values = values.cast(pa.timestamp("us")).cast(pa.int64())
        params[f"c{i}"] = values.to_pylist()
    return params
