"""Memories in FalkorDB: insert, read, update, delete, filter, page, count; and the reads recall
makes of them from the search state, as on the embedded engines.

A transaction here is one query sent at its end (graphmem.storage.falkordb.connection), so what
a write must know of the store is read before it buffers anything, and what must still hold
when it lands is the server's to check: a memory's id and a store key are unique, so a commit
that meets another node's write of the same fails whole (Conflict).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from graphmem.cursors import decode_cursor, encode_cursor
from graphmem.embeddings.base import EmbeddingSpace
from graphmem.errors import NotFound
from graphmem.idempotency import StoreKey
from graphmem.indexes.changes import MemoriesDeleted, MemoriesWritten
from graphmem.indexes.columns import Datetimes, ScoringRow
from graphmem.indexes.search_state import SearchState
from graphmem.models import Memory, MemoryFilter, MemoryPage, StoreStats, stored_time
from graphmem.storage.falkordb import schema
from graphmem.storage.falkordb.connection import FalkorConnection
from graphmem.storage.falkordb.graph_writes import forget_extraction
from graphmem.storage.falkordb.memory_rows import (
    RETURN_MEMORY,
    SET_FIELDS,
    filter_clause,
    memory_to_row,
    row_to_memory,
    selection_clause,
)
from graphmem.storage.falkordb.pending import FalkorPending
from graphmem.storage.falkordb.vectors import FalkorVectors, passage_table_for
from graphmem.storage.protocols.pending import EXTRACT, PASSAGES
from graphmem.storage.protocols.vectors import PassageVectors
from graphmem.storage.selection import MemorySelection

ENGINE = "falkordb"


class FalkorMemories:
    """graphmem.storage.protocols.Memories over one connection and the search state."""

    def __init__(
        self,
        conn: FalkorConnection,
        state: SearchState,
        vectors: FalkorVectors,
        pending: FalkorPending,
    ) -> None:
        self.conn = conn
        self.state = state
        self.vectors = vectors
        self.pending = pending

    # -- writes -----------------------------------------------------------------------------

    def insert(
        self,
        memories: Sequence[Memory],
        vectors: npt.NDArray[np.float32],
        space: EmbeddingSpace,
        passages: PassageVectors | None = None,
        keys: Sequence[tuple[StoreKey, str]] = (),
        deferred_passages: Sequence[str] = (),
    ) -> int:
        """One query: the rows, their vectors and passages, the store keys and the waiting
        work. A key in force that another node stored meanwhile fails the whole commit
        (Conflict)."""
        if not memories:
            return 0
        rows = [memory_to_row(m) for m in memories]
        for row, memory in zip(rows, memories, strict=True):  # an import keeps its layer
            row["layer"] = None if memory.layer == "surface" else memory.layer
        ids = [m.id for m in memories]
        at = memories[0].updated_at
        # what the commit must know of the store, read before anything is buffered
        self.vectors.ensure_space(space)
        if passages is not None and len(passages[0]):
            self.vectors.ensure_set(passage_table_for(space), space.dim)
        columns = ("id", *SET_FIELDS, "layer")
        assignments = ", ".join(f"{f}: r.{f}" for f in columns)
        with self.conn.transaction():
            self.conn.write(
                f"UNWIND $rows AS r CREATE (:Memory {{{assignments}, access_count: 0}})",
                {"rows": [{f: r[f] for f in columns} for r in rows]},
            )
            self.vectors.put(space, ids, vectors)
            if passages is not None:
                self.vectors.put_passages(space, *passages)
            if keys:
                self._put_store_keys(keys, at=at)
            self.pending.put(EXTRACT, ids, at=at)
            self.pending.put(PASSAGES, deferred_passages, at=at)
            self.conn.emit(MemoriesWritten(rows, [r["search_text"] for r in rows]))
        return len(memories)

    def _put_store_keys(self, keys: Sequence[tuple[StoreKey, str]], *, at: datetime) -> None:
        """Keys past their window, and these keys where their memory is gone, are dropped;
        then every key is CREATEd, so that a key still in force (another node stored under
        it since the caller read it) fails the whole commit on the unique constraint."""
        self.conn.write(
            "MATCH (s:StoreKey) WHERE s.expires_at IS NOT NULL AND s.expires_at <= $at DELETE s",
            {"at": at},
        )
        self.conn.write(
            "UNWIND $k AS k MATCH (s:StoreKey {key: k}) "
            "OPTIONAL MATCH (m:Memory {id: s.memory_id}) WITH s, m WHERE m IS NULL DELETE s",
            {"k": [k.key for k, _ in keys]},
        )
        self.conn.write(
            "UNWIND $rows AS r CREATE (:StoreKey {key: r.k, memory_id: r.m, digest: r.d, "
            "at: $at, expires_at: r.e})",
            {
                "rows": [
                    {"k": k.key, "m": memory_id, "d": k.digest, "e": k.expires_at}
                    for k, memory_id in keys
                ],
                "at": at,
            },
        )

    def update(
        self,
        memory: Memory,
        vector: npt.NDArray[np.float32] | None,
        space: EmbeddingSpace | None,
        passages: PassageVectors | None = None,
    ) -> None:
        """NotFound when no memory has the id now (read before the write is buffered)."""
        if not self.existing_ids([memory.id]):
            raise NotFound(f"no memory with id {memory.id!r}", id=memory.id)
        if vector is not None and space is not None:
            self.vectors.vector_sets()  # which sets to delete from, read before the writes
            self.vectors.ensure_space(space)
            if passages is not None and len(passages[0]):
                self.vectors.ensure_set(passage_table_for(space), space.dim)
        row = memory_to_row(memory)
        assignments = ", ".join(f"m.{f} = $p_{f}" for f in SET_FIELDS)
        with self.conn.transaction():
            self.conn.write(
                f"MATCH (m:Memory {{id: $id}}) SET {assignments}",
                {"id": memory.id, **{f"p_{f}": row[f] for f in SET_FIELDS}},
            )
            if vector is not None and space is not None:
                self.vectors.delete([memory.id])
                self.vectors.put(space, [memory.id], vector.reshape(1, -1))
                if passages is not None:
                    self.vectors.put_passages(space, *passages)
                    self.pending.finish(PASSAGES, [memory.id])
            self.conn.emit(MemoriesWritten([row], [row["search_text"]]))

    def delete(self, memory_id: str) -> None:
        """The memory with its edges (FalkorDB's DELETE takes them), vectors and waiting work,
        and the facts only it stated."""
        if not self.existing_ids([memory_id]):
            raise NotFound(f"no memory with id {memory_id!r}", id=memory_id)
        self.vectors.vector_sets()  # which sets to delete from, read before the writes
        with self.conn.transaction():
            forget_extraction(self.conn, [memory_id])
            self.conn.write(
                "MATCH (m:Memory {id: $id}) DELETE m", {"id": memory_id}, entity_graph=True
            )
            self.vectors.delete([memory_id])
            for work in (EXTRACT, PASSAGES):
                self.pending.finish(work, [memory_id])
            self.conn.emit(MemoriesDeleted([memory_id]))

    def add_accesses(self, rows: list[dict[str, Any]], *, at: datetime) -> None:
        self.conn.write(
            "UNWIND $rows AS r MATCH (m:Memory {id: r.id}) "
            "SET m.access_count = coalesce(m.access_count, 0) + r.n, "
            "m.targeted_count = coalesce(m.targeted_count, 0) + r.t, m.accessed_at = $at",
            {"rows": rows, "at": at},
        )

    def finish_absent(self, work: str, memory_ids: Sequence[str]) -> list[str]:
        """The check and the drop are one statement: a memory another node writes meanwhile
        keeps its work."""
        if not memory_ids:
            return []
        absent = sorted(set(memory_ids) - self.existing_ids(memory_ids))
        if absent:
            self.conn.write(
                "UNWIND $items AS i OPTIONAL MATCH (m:Memory {id: i}) WITH i, m WHERE m IS NULL "
                "MATCH (p:Pending {key: $w + ':' + i}) DELETE p",
                {"items": absent, "w": work},
            )
        return absent

    # -- reads ------------------------------------------------------------------------------

    def get(self, memory_id: str) -> Memory:
        rows = self.conn.read(
            f"MATCH (m:Memory {{id: $id}}) RETURN {RETURN_MEMORY}", {"id": memory_id}
        )
        if not rows:
            raise NotFound(f"no memory with id {memory_id!r}", id=memory_id)
        return row_to_memory(rows[0])

    def get_many(self, ids: Sequence[str]) -> dict[str, Memory]:
        ids = list(dict.fromkeys(ids))
        held = self.state.memories_if_loaded(ids)
        if held is not None:
            return held
        rows = self.conn.read(
            f"UNWIND $ids AS i MATCH (m:Memory {{id: i}}) RETURN {RETURN_MEMORY}", {"ids": ids}
        )
        return {row[0]: row_to_memory(row) for row in rows}

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        rows = self.conn.read(
            "UNWIND $ids AS i MATCH (m:Memory {id: i}) RETURN m.id", {"ids": list(ids)}
        )
        return {r[0] for r in rows}

    def all_ids(self) -> set[str]:
        return {r[0] for r in self.conn.read("MATCH (m:Memory) RETURN m.id")}

    def stored_by_keys(self, keys: Sequence[str], *, now: datetime) -> dict[str, tuple[str, str]]:
        rows = self.conn.read(
            "UNWIND $k AS k MATCH (s:StoreKey {key: k}) "
            "WHERE s.expires_at IS NULL OR s.expires_at > $now "
            "OPTIONAL MATCH (m:Memory {id: s.memory_id}) WITH s, m WHERE m IS NOT NULL "
            "RETURN s.key, s.memory_id, s.digest",
            {"k": list(dict.fromkeys(keys)), "now": now},
        )
        return {k: (m, d) for k, m, d in rows}

    def page(self, filters: MemoryFilter, *, limit: int, cursor: str | None) -> MemoryPage:
        params: dict[str, Any] = {"limit": limit + 1}
        where = filter_clause(filters, params)
        if cursor:
            params["c_at"], params["c_id"] = decode_cursor(cursor)
            # as a list: a string range on the indexed id matches every node (see the dialect
            # probes), and FalkorDB pushes `m.id < $c_id` into its index scan
            where += " AND [m.created_at, m.id] < [$c_at, $c_id]"
        rows = self.conn.read(
            f"MATCH (m:Memory) WHERE {where} RETURN m.id "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT $limit",
            params,
        )
        found = self.get_many([r[0] for r in rows[:limit]])
        memories = [found[r[0]] for r in rows[:limit] if r[0] in found]
        more = len(rows) > limit
        return MemoryPage(
            memories=memories,
            next_cursor=encode_cursor(memories[-1].created_at, memories[-1].id) if more else None,
        )

    def newest(
        self,
        filters: MemoryFilter,
        *,
        sessions: Sequence[str] | None,
        since: datetime | None,
        until: datetime | None,
        before: tuple[datetime, str] | None,
        limit: int,
    ) -> list[Memory]:
        params: dict[str, Any] = {"limit": limit}
        where = [filter_clause(filters, params)]
        if sessions is not None:
            where.append("m.session_id IN $sessions")
            params["sessions"] = list(sessions)
        if since is not None:
            where.append("m.created_at >= $since")
            params["since"] = since
        if until is not None:
            where.append("m.created_at < $until")
            params["until"] = until
        if before is not None:
            where.append("[m.created_at, m.id] < [$b_at, $b_key]")  # a list, as in page()
            params["b_at"], params["b_key"] = before
        rows = self.conn.read(
            f"MATCH (m:Memory) WHERE {' AND '.join(where)} RETURN m.id "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT $limit",
            params,
        )
        found = self.get_many([r[0] for r in rows])
        return [found[r[0]] for r in rows if r[0] in found]

    def export_page(self, cursor: str | None, *, limit: int) -> MemoryPage:
        params: dict[str, Any] = {"limit": limit + 1}
        where = "true"
        if cursor:
            params["c_at"], params["c_id"] = decode_cursor(cursor)
            where = "[m.created_at, m.id] > [$c_at, $c_id]"
        rows = self.conn.read(
            f"MATCH (m:Memory) WHERE {where} RETURN {RETURN_MEMORY} "
            "ORDER BY m.created_at, m.id LIMIT $limit",
            params,
        )
        memories = [row_to_memory(r) for r in rows[:limit]]
        more = len(rows) > limit
        return MemoryPage(
            memories=memories,
            next_cursor=encode_cursor(memories[-1].created_at, memories[-1].id) if more else None,
        )

    def select(self, selection: MemorySelection, *, limit: int) -> list[Memory]:
        params: dict[str, Any] = {"limit": limit}
        rows = self.conn.read(
            f"MATCH (m:Memory) WHERE {selection_clause(selection, params)} RETURN {RETURN_MEMORY} "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT $limit",
            params,
        )
        return [row_to_memory(r) for r in rows]

    def count(self) -> int:
        """Counted by the server each time: another node may have written since."""
        rows = self.conn.read("MATCH (m:Memory) RETURN count(m)")
        return int(rows[0][0]) if rows else 0

    def count_by(self, field: str, filters: MemoryFilter) -> dict[str, int]:
        params: dict[str, Any] = {}
        where = filter_clause(filters, params)
        rows = self.conn.read(f"MATCH (m:Memory) WHERE {where} RETURN m.{field}, count(m)", params)
        return {str(k) if k is not None else "": int(v) for k, v in rows}

    def labels(self, memory_ids: Sequence[str]) -> dict[str, str]:
        rows = self.conn.read(
            "UNWIND $ids AS i MATCH (m:Memory {id: i}) "
            "RETURN m.id, coalesce(m.title, left(m.content, 80))",
            {"ids": list(memory_ids)},
        )
        return {row[0]: row[1] or "" for row in rows}

    def backlog(self) -> dict[str, int]:
        memories = self.conn.read(
            "MATCH (m:Memory) WHERE m.lifecycle <> 'archived' AND m.extracted_by IS NULL "
            "RETURN count(m)"
        )
        chunks = self.conn.read("MATCH (c:Chunk) WHERE c.extracted_by IS NULL RETURN count(c)")
        return {
            "extraction": int(memories[0][0]) if memories else 0,
            "chunks": int(chunks[0][0]) if chunks else 0,
        }

    def stats(self, space: EmbeddingSpace) -> StoreStats:
        counts: dict[str, dict[str, int]] = {}
        for field in ("type", "kind", "context", "lifecycle", "layer"):
            rows = self.conn.read(f"MATCH (m:Memory) RETURN m.{field}, count(m)")
            counts[field] = {str(k) if k is not None else "": int(v) for k, v in rows}
        total = sum(counts["type"].values())
        layers: dict[str, int] = {}
        for layer, count in counts["layer"].items():
            layers[layer or "surface"] = layers.get(layer or "surface", 0) + count
        vectors = self.vectors.count(space)
        return StoreStats(
            total=total,
            by_type=counts["type"],
            by_kind=counts["kind"],
            by_context=counts["context"],
            by_lifecycle=counts["lifecycle"],
            by_layer=layers,
            backlog=self.backlog(),
            store_bytes=0,  # the server's: `graphmem stats` on this engine does not size it yet
            embedding_space=space.label,
            vectors=vectors,
            missing_vectors=max(total - vectors, 0),
            schema_version=schema.migration_status(self.conn).schema_version,
            engine=ENGINE,
            engine_version=self.conn.server_version(),
            path=str(self.conn.url),
        )

    # -- from the search state (as on the embedded engines) --------------------------------

    def scoring_rows(
        self, ids: Sequence[str], filters: MemoryFilter | None = None
    ) -> dict[str, ScoringRow]:
        with self.state.columns() as columns:
            rows = columns.get(ids)
        if filters is None:
            return rows
        return {k: row for k, row in rows.items() if row.passes(filters)}

    def newest_of(self, ids: Sequence[str], limit: int) -> list[str]:
        with self.state.columns() as columns:
            return columns.newest(list(ids), limit)

    def matching_ids(self, filters: MemoryFilter) -> set[str]:
        with self.state.columns() as columns:
            return columns.matching(filters)

    def warm_search(self) -> None:
        self.state.warm_memories()

    def keyword_search(self, text: str, *, top: int) -> list[tuple[str, float]]:
        if not text.strip():
            return []
        return self.state.keyword_search(text, top=top)

    def valid_at_mask(self, space: EmbeddingSpace, when: datetime) -> npt.NDArray[np.bool_]:
        ids = self.vectors.ids(space)

        def windows() -> tuple[Datetimes, Datetimes, Datetimes]:
            with self.state.columns() as columns:
                return columns.windows(list(ids))

        created, starts, ends = self.conn.until_write("validity", windows, space.name, len(ids))
        moment = np.datetime64(stored_time(when), "us")
        mask: npt.NDArray[np.bool_] = (
            (created <= moment)
            & (np.isnat(starts) | (starts <= moment))
            & (np.isnat(ends) | (ends > moment))
        )
        return mask

    def session_ids(self, ids: Sequence[str]) -> dict[str, str]:
        with self.state.columns() as columns:
            rows = columns.values(ids, ("id", "session_id"))
        return {k: row["session_id"] for k, row in rows.items() if row["session_id"]}

    def session_order(self, sessions: Sequence[str]) -> dict[str, list[str]]:
        with self.state.columns() as columns:
            return columns.in_sessions(sessions)

    def archived_among(self, memory_ids: Sequence[str]) -> set[str]:
        with self.state.columns() as columns:
            rows = columns.values(memory_ids, ("id", "lifecycle"))
        return {k for k, row in rows.items() if row["lifecycle"] == "archived"}

    def has_archived(self) -> bool:
        with self.state.columns() as columns:
            return columns.any_archived()

    def speakers(self) -> frozenset[str]:
        with self.state.columns() as columns:
            return columns.speakers()
