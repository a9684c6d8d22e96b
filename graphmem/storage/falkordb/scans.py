"""FalkorScans: the whole-graph reads the search state is built from (graphmem.indexes.
search_state.SearchSource), in FalkorDB's dialect. A node reads them at start (or loads its
search cache) and then follows the change stream.

Every scan is here: the memories', the documents' and the entity graph's."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import pyarrow as pa

from graphmem.indexes.columns import FIELDS
from graphmem.indexes.entity_log import EntityLog
from graphmem.indexes.vectors import Matrix
from graphmem.storage.falkordb.connection import FalkorConnection
from graphmem.storage.falkordb.memory_rows import RETURN_COLUMNS, columns_table, values_of
from graphmem.storage.falkordb.vectors import SET_KEY


class FalkorScans:
    def __init__(self, conn: FalkorConnection) -> None:
        self.conn = conn

    @property
    def entity_log(self) -> EntityLog:
        return self.conn.entity_log

    def content_stamp(self) -> str:
        return self.conn.content_stamp()

    def writer_paused(self) -> AbstractContextManager[None]:
        return self.conn.writer_paused()

    def has_vector_set(self, name: str) -> bool:
        return bool(self.conn.read("MATCH (m:_Meta {key: $k}) RETURN m.key", {"k": SET_KEY + name}))

    def vector_rows(self, name: str, dim: int) -> tuple[list[str], Matrix]:
        rows = self.conn.read(f"MATCH (v:{name}) RETURN v.id, v.vec")
        if not rows:
            return [], np.zeros((0, dim), np.float32)
        return [r[0] for r in rows], np.asarray([r[1] for r in rows], np.float32).reshape(-1, dim)

    def memory_columns(self) -> pa.Table:
        return columns_table(self.conn.read(f"MATCH (m:Memory) RETURN {RETURN_COLUMNS}"))

    def memory_rows(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        rows = self.conn.read(
            f"UNWIND $ids AS i MATCH (m:Memory {{id: i}}) RETURN {RETURN_COLUMNS}",
            {"ids": list(ids)},
        )
        return [values_of(FIELDS, row) for row in rows]

    def search_texts(self) -> pa.Table:
        rows = self.conn.read("MATCH (m:Memory) RETURN m.id, m.search_text")
        return pa.table(
            {
                "id": pa.array([r[0] for r in rows], pa.string()),
                "search_text": pa.array([r[1] for r in rows], pa.string()),
            }
        )

    def entity_graph(self) -> tuple[pa.Table, ...]:
        """The six scans of graphmem.indexes.entity_index.EntityIndex, as string tables (typed:
        an empty graph gives empty columns of the right width)."""
        return tuple(
            self._strings(query, width)
            for query, width in (
                ("MATCH (m:Memory)-[:MENTIONS]->(e:Entity) RETURN m.id, e.id", 2),
                ("MATCH (e:Entity) RETURN e.id, e.name, e.label", 3),
                (
                    "MATCH (s:Entity)<-[:SUBJECT]-(f:Fact)-[:OBJECT]->(o:Entity) "
                    "RETURN s.id, f.predicate, o.id, f.id",
                    4,
                ),
                ("MATCH (n:Memory)-[:SUPERSEDES]->(o:Memory) RETURN n.id, o.id", 2),
                ("MATCH (f:Fact)-[:EXTRACTED_FROM]->(m:Memory) RETURN f.id, m.id", 2),
                ("MATCH (a:EntityAlias) RETURN a.norm, a.entity", 2),
            )
        )

    def _strings(self, query: str, width: int) -> pa.Table:
        rows = self.conn.read(query)
        return pa.table(
            {f"c{i}": pa.array([r[i] for r in rows], pa.string()) for i in range(width)}
        )

    def document_rows(
        self,
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        docs = self.conn.read(
            "MATCH (d:Document) WHERE d.indexed_sha IS NOT NULL "
            "RETURN d.uid, d.path, d.root, d.rel, d.title, d.source_type"
        )
        sections = self.conn.read(
            "MATCH (s:Section) RETURN s.key, s.doc, s.section_key, s.title, s.level, "
            "s.breadcrumb, s.ord, s.start_line, s.end_line"
        )
        chunks = self.conn.read(
            "MATCH (c:Chunk) RETURN c.id, c.doc, c.section, c.ord, c.text, c.start_line, "
            "c.end_line, c.search_text"
        )
        return [tuple(r) for r in docs], [tuple(r) for r in sections], [tuple(r) for r in chunks]
