"""Memories in Kùzu: insert in batches, read, update, delete, filter, page, count; and the reads
recall makes of them, from the search state's columns and keyword index.

A memory's vectors, passages and waiting work (graphmem.storage.protocols.pending) are written
in the same transaction as its row, and every write emits its change event there.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from graphmem.cursors import decode_cursor, encode_cursor
from graphmem.embeddings.base import EmbeddingSpace
from graphmem.errors import NotFound
from graphmem.idempotency import StoreKey
from graphmem.indexes.changes import MemoriesDeleted, MemoriesWritten
from graphmem.indexes.columns import Datetimes, ScoringRow
from graphmem.indexes.search_state import SearchState
from graphmem.models import Memory, MemoryFilter, MemoryPage, StoreStats, stored_time
from graphmem.storage.kuzu.connection import KuzuConnection
from graphmem.storage.kuzu.graph_writes import forget_extraction
from graphmem.storage.kuzu.memory_rows import (
    ARROW_TYPES,
    RETURN_MEMORY,
    SET_FIELDS,
    by_id,
    filter_clause,
    memory_to_row,
    param,
    row_to_memory,
    selection_clause,
)
from graphmem.storage.kuzu.migrations import migration_status
from graphmem.storage.kuzu.pending import KuzuPending
from graphmem.storage.kuzu.vectors import COPY_MIN_ROWS, KuzuVectors
from graphmem.storage.protocols.pending import EXTRACT, PASSAGES
from graphmem.storage.protocols.vectors import PassageVectors
from graphmem.storage.selection import MemorySelection


class KuzuMemories:
    """graphmem.storage.protocols.Memories over one connection and the search state."""

    def __init__(
        self,
        conn: KuzuConnection,
        state: SearchState,
        vectors: KuzuVectors,
        pending: KuzuPending,
    ) -> None:
        self.conn = conn
        self.state = state
        self.vectors = vectors
        self.pending = pending

    def insert(
        self,
        memories: Sequence[Memory],
        vectors: npt.NDArray[np.float32],
        space: EmbeddingSpace,
        passages: PassageVectors | None = None,
        keys: Sequence[tuple[StoreKey, str]] = (),
        deferred_passages: Sequence[str] = (),
    ) -> int:
        """Insert rows, their vectors and their passages' atomically, with the store keys
        (graphmem.idempotency) that find them again; returns how many were inserted. Each new
        memory waits for extraction, and those of `deferred_passages` for their passages: rows
        of the Pending table (graphmem.storage.kuzu.pending), in the same transaction, or for a
        batch that is COPYed, in one of their own just before it (`_pending_before_copy`)."""
        if not memories:
            return 0
        rows = [memory_to_row(m) for m in memories]
        for row, memory in zip(rows, memories, strict=True):  # an import keeps its layer
            row["layer"] = None if memory.layer == "surface" else memory.layer
        columns = ("id", *SET_FIELDS, "layer")
        table = pa.table(
            {f: pa.array([r[f] for r in rows], ARROW_TYPES.get(f, pa.string())) for f in columns}
        )
        ids = [m.id for m in memories]
        at = memories[0].updated_at
        bulk = len(rows) >= COPY_MIN_ROWS
        conn = self.conn
        with conn.writer_paused():  # one writer from the Pending rows to the COPY's commit
            if bulk:
                self._pending_before_copy(ids, deferred_passages, at=at)
            with conn.transaction():
                if not bulk:
                    assignments = ", ".join(f"{f}: {f}" for f in columns)
                    conn.query_result(
                        f"LOAD FROM $rows CREATE (:Memory {{{assignments}, access_count: 0}})",
                        {"rows": table},
                    )
                else:  # ~4x faster at 1M rows; the vectors' COPY checkpoints the commit anyway
                    copied = table.append_column(
                        "access_count", pa.array([0] * len(rows), pa.int64())
                    )
                    names = ", ".join(copied.column_names)
                    conn.query_result(f"COPY Memory({names}) FROM $rows", {"rows": copied})
                    conn.checkpoint_at_commit()
                self.vectors.put(space, ids, vectors)
                if passages is not None:
                    self.vectors.put_passages(space, *passages)
                if keys:
                    self._put_store_keys(keys, at=at)
                if not bulk:
                    self.pending.put(EXTRACT, ids, at=at)
                    self.pending.put(PASSAGES, deferred_passages, at=at)
                conn.emit(MemoriesWritten(rows, table.column("search_text")))
        return len(memories)

    def _pending_before_copy(
        self, ids: Sequence[str], deferred_passages: Sequence[str], *, at: datetime
    ) -> None:
        """The Pending rows of a batch about to be COPYed, committed and checkpointed first, so
        that the COPY's transaction logs no new rows and its commit checkpoints a log holding
        nothing else, as before the Pending table. Kùzu 0.11.3 does not log a COPY's rows, and
        after a kill -9 during that commit's checkpoint it replayed the rows logged beside them
        over a half-written checkpoint ("duplicated primary key", or a crash: stores that would
        not open; see docs/operations.md#crash-safety). Should the COPY be lost, the rows name
        memories that are not there, and whoever reads them drops them (`finish_absent`)."""
        with self.conn.transaction():
            self.pending.put(EXTRACT, ids, at=at)
            self.pending.put(PASSAGES, deferred_passages, at=at)
        self.conn.checkpoint()

    def _put_store_keys(self, keys: Sequence[tuple[StoreKey, str]], *, at: datetime) -> None:
        """A key of an earlier store whose memory is gone, or whose window passed, is taken
        over; keys past their window are dropped while we are at it."""
        self.conn.execute(
            "MATCH (s:StoreKey) WHERE s.expires_at IS NOT NULL AND s.expires_at <= $at DELETE s",
            {"at": at},
        )
        rows = [
            {"k": k.key, "m": memory_id, "d": k.digest, "e": k.expires_at} for k, memory_id in keys
        ]
        # SET the keys there and CREATE the others, never MERGE (see graphmem.storage.kuzu.pending)
        taken = {
            row[0]
            for row in self.conn.execute(
                "UNWIND $rows AS r MATCH (s:StoreKey {key: r.k}) "
                "SET s.memory_id = r.m, s.digest = r.d, s.at = $at, "
                "s.expires_at = CAST(r.e AS TIMESTAMP) RETURN s.key",
                {"rows": rows, "at": at},
            )
        }
        new = [r for r in rows if r["k"] not in taken]
        if new:
            self.conn.execute(
                "UNWIND $rows AS r CREATE (:StoreKey {key: r.k, memory_id: r.m, digest: r.d, "
                "at: $at, expires_at: CAST(r.e AS TIMESTAMP)})",
                {"rows": new, "at": at},
            )

    def stored_by_keys(self, keys: Sequence[str], *, now: datetime) -> dict[str, tuple[str, str]]:
        """key -> (memory id, digest) of the keys among `keys` still in force whose memory is
        still there."""
        found: dict[str, tuple[str, str]] = {}
        for key in dict.fromkeys(keys):
            found.update(
                (k, (m, d))
                for k, m, d in self.conn.read(
                    "MATCH (s:StoreKey {key: $k}) "
                    "WHERE s.expires_at IS NULL OR s.expires_at > $now "
                    "RETURN s.key, s.memory_id, s.digest",
                    {"k": key, "now": now},
                )
            )
        alive = {row[0] for row in by_id(self.conn, [m for m, _ in found.values()], "m.id")}
        return {k: v for k, v in found.items() if v[0] in alive}

    def finish_absent(self, work: str, memory_ids: Sequence[str]) -> list[str]:
        """Drop the work on those of the memories that are not there, checked again in the
        transaction that drops it; returns those. A caller's Cypher may have deleted them, or
        a kill -9 lost a COPYed batch whose logged Pending rows Kùzu 0.11.3 brought back."""
        if not memory_ids:
            return []
        with self.conn.transaction():
            absent = sorted(set(memory_ids) - self.existing_ids(memory_ids))
            self.pending.finish(work, absent)
        return absent

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        rows = self.conn.read(
            "UNWIND $ids AS i MATCH (m:Memory {id: i}) RETURN m.id", {"ids": list(ids)}
        )
        return {r[0] for r in rows}

    def get(self, memory_id: str) -> Memory:
        rows = self.conn.read(
            f"MATCH (m:Memory {{id: $id}}) RETURN {RETURN_MEMORY}", {"id": memory_id}
        )
        if not rows:
            raise NotFound(f"no memory with id {memory_id!r}", id=memory_id)
        return row_to_memory(rows[0])

    def get_many(self, ids: Sequence[str]) -> dict[str, Memory]:
        """From the columns when recall has loaded them, else by key (`by_id`)."""
        ids = list(dict.fromkeys(ids))
        held = self.state.memories_if_loaded(ids)
        if held is not None:
            return held
        return {row[0]: row_to_memory(row) for row in by_id(self.conn, ids, RETURN_MEMORY)}

    def scoring_rows(
        self, ids: Sequence[str], filters: MemoryFilter | None = None
    ) -> dict[str, ScoringRow]:
        with self.state.columns() as columns:
            rows = columns.get(ids)
        if filters is None:
            return rows
        return {k: row for k, row in rows.items() if row.passes(filters)}

    def session_ids(self, ids: Sequence[str]) -> dict[str, str]:
        """The session of each memory that has one, from the in-process columns."""
        with self.state.columns() as columns:
            rows = columns.values(ids, ("id", "session_id"))
        return {k: row["session_id"] for k, row in rows.items() if row["session_id"]}

    def session_order(self, sessions: Sequence[str]) -> dict[str, list[str]]:
        """The memories of each session in the order they were stored (ids are monotonic)."""
        with self.state.columns() as columns:
            return columns.in_sessions(sessions)

    def update(
        self,
        memory: Memory,
        vector: npt.NDArray[np.float32] | None,
        space: EmbeddingSpace | None,
        passages: PassageVectors | None = None,
    ) -> None:
        """`vector` (and `passages`) replace the memory's vector and passages when given."""
        row = memory_to_row(memory)
        assignments = ", ".join(f"m.{f} = {param(f)}" for f in SET_FIELDS)
        params = {f"p_{f}": row[f] for f in SET_FIELDS}
        with self.conn.transaction():
            found = self.conn.execute(
                f"MATCH (m:Memory {{id: $id}}) SET {assignments} RETURN m.id",
                {"id": memory.id, **params},
            )
            if not found:
                raise NotFound(f"no memory with id {memory.id!r}", id=memory.id)
            if vector is not None and space is not None:
                self.vectors.delete([memory.id])
                self.vectors.put(space, [memory.id], vector.reshape(1, -1))
                if passages is not None:
                    self.vectors.put_passages(space, *passages)
                    self.pending.finish(PASSAGES, [memory.id])  # an import's, if still waiting
            self.conn.emit(MemoriesWritten([row], [row["search_text"]]))

    def delete(self, memory_id: str) -> None:
        with self.conn.transaction():
            forget_extraction(self.conn, [memory_id])  # the facts only it stated go too
            found = self.conn.execute(
                "MATCH (m:Memory {id: $id}) DETACH DELETE m RETURN count(*)",
                {"id": memory_id},
                entity_graph=True,
            )
            if not found or not found[0][0]:
                raise NotFound(f"no memory with id {memory_id!r}", id=memory_id)
            self.vectors.delete([memory_id])
            for work in (EXTRACT, PASSAGES):
                self.pending.finish(work, [memory_id])
            self.conn.emit(MemoriesDeleted([memory_id]))

    def page(self, filters: MemoryFilter, *, limit: int, cursor: str | None) -> MemoryPage:
        params: dict[str, Any] = {"limit": limit + 1}
        where = filter_clause(filters, params)
        if cursor:
            params["c_at"], params["c_id"] = decode_cursor(cursor)
            where += " AND (m.created_at < $c_at OR (m.created_at = $c_at AND m.id < $c_id))"
        # ids only: Kùzu sorts every matching row with all it returns (88 -> 13 ms at 100k);
        # the memories come from the in-process columns
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
            where.append("(m.created_at < $b_at OR (m.created_at = $b_at AND m.id < $b_key))")
            params["b_at"], params["b_key"] = before
        rows = self.conn.read(
            f"MATCH (m:Memory) WHERE {' AND '.join(where)} RETURN m.id "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT $limit",
            params,
        )
        found = self.get_many([r[0] for r in rows])
        return [found[r[0]] for r in rows if r[0] in found]

    def export_page(self, cursor: str | None, *, limit: int) -> MemoryPage:
        """Every memory, archived ones included, oldest first, after the cursor."""
        params: dict[str, Any] = {"limit": limit + 1}
        where = "true"
        if cursor:
            params["c_at"], params["c_id"] = decode_cursor(cursor)
            where = "(m.created_at > $c_at OR (m.created_at = $c_at AND m.id > $c_id))"
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

    def newest_of(self, ids: Sequence[str], limit: int) -> list[str]:
        with self.state.columns() as columns:
            return columns.newest(list(ids), limit)

    def matching_ids(self, filters: MemoryFilter) -> set[str]:
        with self.state.columns() as columns:
            return columns.matching(filters)

    def valid_at_mask(self, space: EmbeddingSpace, when: datetime) -> npt.NDArray[np.bool_]:
        """Which rows of the space's vector matrix were valid and recorded at `when`: the as-of
        filter applied inside the vector scan, so an early date needs no wider candidate list.

        The windows come from the in-process columns, once per write generation."""
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

    def count(self) -> int:
        """Cached until the next write: recall asks on every query."""

        def count() -> int:
            if "Memory" not in self.conn.table_names():  # a store not migrated yet
                return 0
            return int(self.conn.read("MATCH (m:Memory) RETURN count(*)")[0][0])

        return self.conn.until_write("memory_count", count)

    def all_ids(self) -> set[str]:
        return {r[0] for r in self.conn.read("MATCH (m:Memory) RETURN m.id")}

    def has_archived(self) -> bool:
        """Cached until the next write: recall asks on every query."""

        def any_archived() -> bool:
            with self.state.columns() as columns:
                return columns.any_archived()

        return self.conn.until_write("has_archived", any_archived)

    def speakers(self) -> frozenset[str]:
        """Lowercased names of the people who speak in stored conversations; cached until the
        next write."""

        def speakers() -> frozenset[str]:
            with self.state.columns() as columns:
                return columns.speakers()

        return self.conn.until_write("speakers", speakers)

    def warm_search(self) -> None:
        self.state.warm_memories()

    def keyword_search(self, text: str, *, top: int) -> list[tuple[str, float]]:
        """BM25 over `search_text`; `text` must already be analysed (graphmem.text.query_text)."""
        if not text.strip():
            return []
        return self.state.keyword_search(text, top=top)

    def archived_among(self, memory_ids: Sequence[str]) -> set[str]:
        """From the columns."""
        with self.state.columns() as columns:
            rows = columns.values(memory_ids, ("id", "lifecycle"))
        return {k for k, row in rows.items() if row["lifecycle"] == "archived"}

    def count_by(self, field: str, filters: MemoryFilter) -> dict[str, int]:
        params: dict[str, Any] = {}
        where = filter_clause(filters, params)
        rows = self.conn.read(f"MATCH (m:Memory) WHERE {where} RETURN m.{field}, count(*)", params)
        return {str(k) if k is not None else "": int(v) for k, v in rows}

    def select(self, selection: MemorySelection, *, limit: int) -> list[Memory]:
        params: dict[str, Any] = {"limit": limit}
        rows = self.conn.read(
            f"MATCH (m:Memory) WHERE {selection_clause(selection, params)} RETURN {RETURN_MEMORY} "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT $limit",
            params,
        )
        return [row_to_memory(r) for r in rows]

    def labels(self, memory_ids: Sequence[str]) -> dict[str, str]:
        rows = self.conn.read(
            "UNWIND $ids AS i MATCH (m:Memory {id: i}) "
            "RETURN m.id, coalesce(m.title, substring(m.content, 1, 80))",
            {"ids": list(memory_ids)},
        )
        return {row[0]: row[1] or "" for row in rows}

    def add_accesses(self, rows: list[dict[str, Any]], *, at: datetime) -> None:
        self.conn.execute(
            "UNWIND $rows AS r MATCH (m:Memory {id: r.id}) "
            "SET m.access_count = coalesce(m.access_count, 0) + r.n, "
            "m.targeted_count = coalesce(m.targeted_count, 0) + r.t, m.accessed_at = $at",
            {"rows": rows, "at": at},
        )

    def backlog(self) -> dict[str, int]:
        """What background work has yet to do: live memories and document chunks waiting for
        their entities and facts. Counted once per write (multi-hop asks on every query)."""

        def count() -> dict[str, int]:
            memories = self.conn.read(
                "MATCH (m:Memory) WHERE m.lifecycle <> 'archived' AND m.extracted_by IS NULL "
                "RETURN count(*)"
            )
            chunks = self.conn.read("MATCH (c:Chunk) WHERE c.extracted_by IS NULL RETURN count(*)")
            return {"extraction": int(memories[0][0]), "chunks": int(chunks[0][0])}

        return dict(self.conn.until_write("backlog", count))

    def _field_counts(self) -> dict[str, dict[str, int]]:
        """Memories by type, kind, context, lifecycle and layer: five scans (~30 ms at 100k),
        so cached until the next write (the console's stats page asks on every view)."""

        def count() -> dict[str, dict[str, int]]:
            counts: dict[str, dict[str, int]] = {}
            for field in ("type", "kind", "context", "lifecycle", "layer"):
                rows = self.conn.read(f"MATCH (m:Memory) RETURN m.{field}, count(*)")
                counts[field] = {str(k) if k is not None else "": int(v) for k, v in rows}
            return counts

        return dict(self.conn.until_write("field_counts", count))

    def stats(self, space: EmbeddingSpace) -> StoreStats:
        counts = self._field_counts()
        by_type = counts["type"]
        total = sum(by_type.values())
        layers: dict[str, int] = {}
        for layer, count in counts["layer"].items():  # a memory never moved reads as surface
            layers[layer or "surface"] = layers.get(layer or "surface", 0) + count
        vectors = self.vectors.count(space)
        size = sum(p.stat().st_size for p in self.conn.home.iterdir() if p.is_file())
        return StoreStats(
            total=total,
            by_type=by_type,
            by_kind=counts["kind"],
            by_context=counts["context"],
            by_lifecycle=counts["lifecycle"],
            by_layer=layers,
            backlog=self.backlog(),
            store_bytes=size,
            embedding_space=space.label,
            vectors=vectors,
            missing_vectors=max(total - vectors, 0),
            schema_version=migration_status(self.conn).schema_version,
            engine=self.conn.engine.name,
            engine_version=self.conn.engine.version(),
            path=str(self.conn.home),
        )
