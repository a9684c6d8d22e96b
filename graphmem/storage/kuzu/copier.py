"""Copying a store table by table between engines: its schema as the catalog states it, each
table's rows as a Parquet file, and a digest of the rows to prove the copy whole.

The source and the target engine never share a process (`engines`), so a copy is two halves:
`export` in a process of the source's engine, `load` in one of the target's. Both
read and write what the catalog says (`CALL show_tables()`, `table_info`, `show_connection`),
so a table added by a later migration, or made at run time (a `Vec_<space>` table), copies
without a line here changing.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from graphmem.storage.kuzu.connection import KuzuConnection
from graphmem.storage.protocols.tables import Column, Digest, TableSpec, digest


def table_specs(store: KuzuConnection) -> list[TableSpec]:
    """Every table of the store, node tables first (rels name them), each in name order."""
    specs = []
    for name, kind in store.execute("CALL show_tables() RETURN name, type"):
        info = store.execute(f"CALL table_info('{name}') RETURN *")
        columns = tuple(Column(row[1], row[2]) for row in info)
        if kind == "NODE":
            key = next(row[1] for row in info if row[-1] is True)
            specs.append(TableSpec(name, kind, columns, primary_key=key))
        else:
            pairs = tuple(
                (a, b, pa_, pb)
                for a, b, pa_, pb in store.execute(f"CALL show_connection('{name}') RETURN *")
            )
            specs.append(TableSpec(name, kind, columns, pairs=pairs))
    return sorted(specs, key=lambda s: (s.kind != "NODE", s.name))


def _rows(store: KuzuConnection, spec: TableSpec) -> list[pa.Table]:
    """The table's rows, one arrow table per file, columns named as the table's."""
    names = [c.name for c in spec.columns]
    if spec.kind == "NODE":
        fields = ", ".join(f"n.`{c}`" for c in names)
        table = store.read_arrow(f"MATCH (n:`{spec.name}`) RETURN {fields}")
        return [table.rename_columns(names)]
    found = []
    for a, b, key_a, key_b in spec.pairs:
        fields = "".join(f", r.`{c}`" for c in names)
        table = store.read_arrow(
            f"MATCH (a:`{a}`)-[r:`{spec.name}`]->(b:`{b}`) RETURN a.`{key_a}`, b.`{key_b}`{fields}"
        )
        found.append(table.rename_columns(["from", "to", *names]))
    return found


def export_table(store: KuzuConnection, spec: TableSpec, folder: Path) -> Digest:
    """Write the table's Parquet file(s) into `folder`; returns the digest of its rows."""
    tables = _rows(store, spec)
    for table, name in zip(tables, spec.files(), strict=True):
        tmp = folder / f".{name}.tmp"
        pq.write_table(table, tmp)
        tmp.replace(folder / name)  # a file under its name is whole
    return digest(spec, tables)


def load_table(store: KuzuConnection, spec: TableSpec, folder: Path) -> None:
    """Replace the table's rows by those of its Parquet file(s), in one transaction; the
    table is made first when the store lacks it."""
    if spec.name not in store.table_names():
        store.execute(_ddl(spec))
        store.schema_changed()
    with store.transaction():
        if spec.kind == "NODE":
            store.execute(f"MATCH (n:`{spec.name}`) DETACH DELETE n", entity_graph=True)
            store.execute(f"COPY `{spec.name}` FROM '{folder / spec.files()[0]}'")
        else:
            store.execute(f"MATCH ()-[r:`{spec.name}`]->() DELETE r")
            for (a, b, _, _), name in zip(spec.pairs, spec.files(), strict=True):
                if pq.read_metadata(folder / name).num_rows:
                    store.execute(
                        f"COPY `{spec.name}` FROM '{folder / name}' (from='{a}', to='{b}')"
                    )
        store.checkpoint_at_commit()


def stored_digest(store: KuzuConnection, spec: TableSpec) -> Digest:
    return digest(spec, _rows(store, spec))


def _ddl(spec: TableSpec) -> str:
    cols = ", ".join(f"`{c.name}` {c.type}" for c in spec.columns)
    if spec.kind == "NODE":
        return f"CREATE NODE TABLE `{spec.name}`({cols}, PRIMARY KEY(`{spec.primary_key}`))"
    ends = ", ".join(f"FROM `{a}` TO `{b}`" for a, b, _, _ in spec.pairs)
    return f"CREATE REL TABLE `{spec.name}`({ends}{', ' + cols if cols else ''})"


class KuzuTables:
    """graphmem.storage.protocols.Tables over one connection."""

    def __init__(self, conn: KuzuConnection) -> None:
        self.conn = conn

    def specs(self) -> list[TableSpec]:
        return table_specs(self.conn)

    def export(self, spec: TableSpec, folder: Path) -> Digest:
        return export_table(self.conn, spec, folder)

    def load(self, spec: TableSpec, folder: Path) -> None:
        load_table(self.conn, spec, folder)

    def digest(self, spec: TableSpec) -> Digest:
        return stored_digest(self.conn, spec)
