"""KuzuScans: the whole-table reads the search state is built from (graphmem.indexes.
search_state.SearchSource), in Kùzu's Cypher."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import pyarrow as pa

from graphmem.indexes.columns import COLUMNS, FIELDS
from graphmem.indexes.entity_log import EntityLog
from graphmem.indexes.vectors import Matrix
from graphmem.storage.kuzu.connection import KuzuConnection
from graphmem.storage.kuzu.memory_rows import by_id


class KuzuScans:
    def __init__(self, conn: KuzuConnection) -> None:
        self.conn = conn

    @property
    def entity_log(self) -> EntityLog:
        return self.conn.entity_log

    def content_stamp(self) -> str:
        return self.conn.content_stamp()

    def writer_paused(self) -> AbstractContextManager[None]:
        return self.conn.writer_paused()

    def has_vector_set(self, name: str) -> bool:
        return name in self.conn.table_names()

    def vector_rows(self, name: str, dim: int) -> tuple[list[str], Matrix]:
        """On the writer's connection: the caller holds the writer, so no commit lands between
        this read and the caching of what it read."""
        result = self.conn.query_result(f"MATCH (v:{name}) RETURN v.id, v.vec")
        arrow = result.get_as_arrow(chunk_size=100_000)
        if not arrow.num_rows:
            return [], np.zeros((0, dim), np.float32)
        flat = arrow.column(1).combine_chunks().flatten().to_numpy(zero_copy_only=False)
        return arrow.column(0).to_pylist(), np.asarray(flat, dtype=np.float32).reshape(-1, dim)

    def memory_columns(self) -> pa.Table:
        return self.conn.read_arrow(f"MATCH (m:Memory) RETURN {COLUMNS}")

    def memory_rows(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        return [dict(zip(FIELDS, row, strict=True)) for row in by_id(self.conn, ids, COLUMNS)]

    def search_texts(self) -> pa.Table:
        """On a pooled connection, so a writer waiting for the search lock inside its
        transaction cannot block the read."""
        return self.conn.read_arrow("MATCH (m:Memory) RETURN m.id, m.search_text")

    def entity_graph(self) -> tuple[pa.Table, ...]:
        read = self.conn.read_arrow
        return (
            read("MATCH (m:Memory)-[:MENTIONS]->(e:Entity) RETURN m.id, e.id"),
            read("MATCH (e:Entity) RETURN e.id, e.name, e.label"),
            read(
                "MATCH (s:Entity)<-[:SUBJECT]-(f:Fact)-[:OBJECT]->(o:Entity) "
                "RETURN s.id, f.predicate, o.id, f.id"
            ),
            read("MATCH (n:Memory)-[:SUPERSEDES]->(o:Memory) RETURN n.id, o.id"),
            read("MATCH (f:Fact)-[:EXTRACTED_FROM]->(m:Memory) RETURN f.id, m.id"),
            read("MATCH (a:EntityAlias) RETURN a.norm, a.entity"),
        )

    def document_rows(
        self,
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        docs = self.conn.read_tuples(
            "MATCH (d:Document) WHERE d.indexed_sha IS NOT NULL "
            "RETURN d.uid, d.path, d.root, d.rel, d.title, d.source_type"
        )
        sections = self.conn.read_tuples(
            "MATCH (s:Section) RETURN s.key, s.doc, s.section_key, s.title, s.level, "
            "s.breadcrumb, s.ord, s.start_line, s.end_line"
        )
        chunks = self.conn.read_tuples(
            "MATCH (c:Chunk) RETURN c.id, c.doc, c.section, c.ord, c.text, c.start_line, "
            "c.end_line, c.search_text"
        )
        return docs, sections, chunks
