"""Memory rows in Kùzu: insert in batches, read, update, delete, filter, page, count.

Mixed into KuzuStore, which supplies `execute`, `transaction` and the lock.
"""

from __future__ import annotations

import base64
import json
import sys
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.errors import InvalidInput, NotFound
from graphmem.heap import settled
from graphmem.idempotency import StoreKey
from graphmem.indexes.columns import (
    COLUMNS,
    FIELDS,
    MEMORY_FIELDS,
    WRITTEN_FIELDS,
    Datetimes,
    MemoryColumns,
    ScoringRow,
    memory_from_values,
)
from graphmem.indexes.keywords import KeywordIndex
from graphmem.indexes.search_cache import MIN_MEMORIES
from graphmem.models import Memory, MemoryFilter, MemoryPage, StoreStats, stored_time
from graphmem.storage.pending import EXTRACT, PASSAGES, PendingWork
from graphmem.storage.vectors import COPY_MIN_ROWS, PassageVectors, VectorTables
from graphmem.text import index_text

_FIELDS = MEMORY_FIELDS
RETURN_MEMORY = ", ".join(f"m.{f}" for f in _FIELDS)
_SET_FIELDS = [f for f in WRITTEN_FIELDS if f != "id"] + ["search_text"]
_TIMES = {"created_at", "updated_at", "valid_from", "valid_to", "verified_at"}
POINT_LOOKUPS = 32  # up to this many ids, primary-key lookups beat Kùzu's hash join
_ARROW_TYPES = {
    **{f: pa.timestamp("us", tz="UTC") for f in _TIMES},
    "importance": pa.float64(),
    "confidence": pa.float64(),
    "tags": pa.list_(pa.string()),
}


def _param(field: str) -> str:
    """Kùzu types a null parameter as STRING, so timestamps and lists are cast explicitly."""
    expr = f"$p_{field}"
    if field in _TIMES:
        return f"CAST({expr} AS TIMESTAMP)"
    if field == "tags":
        return f"CAST({expr} AS STRING[])"
    return expr


def row_to_memory(row: Sequence[Any]) -> Memory:
    return memory_from_values(dict(zip(_FIELDS, row, strict=True)))


def memory_to_row(memory: Memory) -> dict[str, Any]:
    """What a write of the whole memory sets; not its `layer`, which sedimentation owns."""
    row = memory.model_dump(include=set(WRITTEN_FIELDS))
    for field in _TIMES:  # the in-process columns compare them with what Kùzu returns
        if row[field] is not None:
            row[field] = stored_time(row[field])
    row["metadata"] = json.dumps(memory.metadata, ensure_ascii=False, sort_keys=True)
    row["search_text"] = index_text(
        memory.content,
        title=memory.title,
        tags=memory.tags,
        context=memory.context,
        service=memory.service,
        when=memory.created_at,
    )
    return row


def filter_clause(filters: MemoryFilter, params: dict[str, Any]) -> str:
    """A WHERE fragment over `m`; archived memories are hidden unless asked for."""
    conditions = []
    for field in ("type", "kind", "context", "service", "lifecycle"):
        value = getattr(filters, field)
        if value is not None:
            conditions.append(f"m.{field} = $f_{field}")
            params[f"f_{field}"] = value
    if filters.layer is not None:  # a memory never moved is at the surface
        conditions.append("coalesce(m.layer, 'surface') = $f_layer")
        params["f_layer"] = filters.layer
    if filters.as_of is not None:
        # what was believed then: valid at that moment and already recorded
        conditions.append("(m.valid_from IS NULL OR m.valid_from <= $f_as_of)")
        conditions.append("(m.valid_to IS NULL OR m.valid_to > $f_as_of)")
        conditions.append("m.created_at <= $f_as_of")
        params["f_as_of"] = filters.as_of
    elif filters.lifecycle is None:
        conditions.append("m.lifecycle <> 'archived'")
    for i, tag in enumerate(filters.tags):
        conditions.append(f"list_contains(m.tags, $f_tag{i})")
        params[f"f_tag{i}"] = tag
    return " AND ".join(conditions) or "true"


def _encode_cursor(memory: Memory) -> str:
    raw = json.dumps([memory.created_at.isoformat(), memory.id])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created, memory_id = json.loads(raw)
        return datetime.fromisoformat(created), str(memory_id)
    except (ValueError, TypeError) as exc:
        raise InvalidInput("cursor is not one that list returned", cursor=cursor) from exc


class MemoryRepository(VectorTables, PendingWork):
    """Memory CRUD; vectors, and the work left to do on the rows (graphmem.storage.pending),
    are written in the same transaction as the rows."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._keywords: KeywordIndex | None = None
        self._columns: MemoryColumns | None = None
        self._search_lock = threading.Lock()  # guards the keyword index and the columns

    def _on_rollback(self) -> None:
        super()._on_rollback()
        with self._search_lock:
            self._keywords = None
            self._columns = None

    def insert_memories(
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
        of the Pending table (graphmem.storage.pending), in the same transaction, or for a
        batch that is COPYed, in one of their own just before it (`_pending_before_copy`)."""
        if not memories:
            return 0
        rows = [memory_to_row(m) for m in memories]
        for row, memory in zip(rows, memories, strict=True):  # an import keeps its layer
            row["layer"] = None if memory.layer == "surface" else memory.layer
        columns = ("id", *_SET_FIELDS, "layer")
        table = pa.table(
            {f: pa.array([r[f] for r in rows], _ARROW_TYPES.get(f, pa.string())) for f in columns}
        )
        ids = [m.id for m in memories]
        at = memories[0].updated_at
        bulk = len(rows) >= COPY_MIN_ROWS
        with self._lock:  # one writer from the Pending rows to the COPY's commit
            if bulk:
                self._pending_before_copy(ids, deferred_passages, at=at)
            with self.transaction():
                if not bulk:
                    assignments = ", ".join(f"{f}: {f}" for f in columns)
                    self.query_result(
                        f"LOAD FROM $rows CREATE (:Memory {{{assignments}, access_count: 0}})",
                        {"rows": table},
                    )
                else:  # ~4x faster at 1M rows; the vectors' COPY checkpoints the commit anyway
                    copied = table.append_column(
                        "access_count", pa.array([0] * len(rows), pa.int64())
                    )
                    names = ", ".join(copied.column_names)
                    self.query_result(f"COPY Memory({names}) FROM $rows", {"rows": copied})
                    self.checkpoint_at_commit()
                self.put_vectors(space, ids, vectors)
                if passages is not None:
                    self.put_passages(space, *passages)
                if keys:
                    self._put_store_keys(keys, at=at)
                if not bulk:
                    self.put_pending(EXTRACT, ids, at=at)
                    self.put_pending(PASSAGES, deferred_passages, at=at)
                self._rows_written(rows, table.column("search_text"))
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
        with self.transaction():
            self.put_pending(EXTRACT, ids, at=at)
            self.put_pending(PASSAGES, deferred_passages, at=at)
        self.checkpoint()

    def _put_store_keys(self, keys: Sequence[tuple[StoreKey, str]], *, at: datetime) -> None:
        """A key of an earlier store whose memory is gone, or whose window passed, is taken
        over; keys past their window are dropped while we are at it."""
        self.execute(
            "MATCH (s:StoreKey) WHERE s.expires_at IS NOT NULL AND s.expires_at <= $at DELETE s",
            {"at": at},
        )
        rows = [
            {"k": k.key, "m": memory_id, "d": k.digest, "e": k.expires_at} for k, memory_id in keys
        ]
        # SET the keys there and CREATE the others, never MERGE (see graphmem.storage.pending)
        taken = {
            row[0]
            for row in self.execute(
                "UNWIND $rows AS r MATCH (s:StoreKey {key: r.k}) "
                "SET s.memory_id = r.m, s.digest = r.d, s.at = $at, "
                "s.expires_at = CAST(r.e AS TIMESTAMP) RETURN s.key",
                {"rows": rows, "at": at},
            )
        }
        new = [r for r in rows if r["k"] not in taken]
        if new:
            self.execute(
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
                for k, m, d in self.read(
                    "MATCH (s:StoreKey {key: $k}) "
                    "WHERE s.expires_at IS NULL OR s.expires_at > $now "
                    "RETURN s.key, s.memory_id, s.digest",
                    {"k": key, "now": now},
                )
            )
        alive = {row[0] for row in self._by_id([m for m, _ in found.values()], "m.id")}
        return {k: v for k, v in found.items() if v[0] in alive}

    def finish_absent(self, work: str, memory_ids: Sequence[str]) -> list[str]:
        """Drop the work on those of the memories that are not there, checked again in the
        transaction that drops it; returns those. A caller's Cypher may have deleted them, or
        a kill -9 lost a COPYed batch whose logged Pending rows Kùzu 0.11.3 brought back."""
        if not memory_ids:
            return []
        with self.transaction():
            absent = sorted(set(memory_ids) - self.existing_ids(memory_ids))
            self.finish_pending(work, absent)
        return absent

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        rows = self.read(
            "UNWIND $ids AS i MATCH (m:Memory {id: i}) RETURN m.id", {"ids": list(ids)}
        )
        return {r[0] for r in rows}

    def get_memory(self, memory_id: str) -> Memory:
        rows = self.read(f"MATCH (m:Memory {{id: $id}}) RETURN {RETURN_MEMORY}", {"id": memory_id})
        if not rows:
            raise NotFound(f"no memory with id {memory_id!r}", id=memory_id)
        return row_to_memory(rows[0])

    def get_memories(self, ids: Sequence[str]) -> dict[str, Memory]:
        """Few ids: one primary-key lookup each (~0.25 ms); Kùzu plans `UNWIND $ids MATCH` as a
        hash join over the whole table (~15 ms at 100k memories), worth it for many ids only."""
        ids = list(dict.fromkeys(ids))
        with self._search_lock:
            if self._columns is not None:  # loaded by recall: the memories are in process
                return self._memory_columns().memories(ids)
        return {row[0]: row_to_memory(row) for row in self._by_id(ids, RETURN_MEMORY)}

    def _by_id(self, ids: Sequence[str], returns: str) -> list[list[Any]]:
        """`returns` of the memories with these ids: a primary-key lookup each up to
        POINT_LOOKUPS ids, one `UNWIND` (a scan of the whole table) beyond."""
        if len(ids) <= POINT_LOOKUPS:
            query = f"MATCH (m:Memory {{id: $id}}) RETURN {returns}"
            return [row for i in ids for row in self.read(query, {"id": i})]
        return self.read(
            f"UNWIND $ids AS i MATCH (m:Memory {{id: i}}) RETURN {returns}", {"ids": list(ids)}
        )

    def get_scoring_rows(
        self, ids: Sequence[str], filters: MemoryFilter | None = None
    ) -> dict[str, ScoringRow]:
        """What recall scores candidates by, for those that pass the filters, from the
        in-process columns (see `storage.columns`)."""
        with self._search_lock:
            rows = self._memory_columns().get(ids)
        if filters is None:
            return rows
        return {k: row for k, row in rows.items() if row.passes(filters)}

    def _memory_columns(self) -> MemoryColumns:
        """Loaded once per process, stale rows read again; the caller holds `_search_lock`."""
        if self._columns is None:
            saved = self._saved_search()
            loaded = saved.columns(FIELDS) if saved else None
            if loaded is None:
                table = self.read_arrow(f"MATCH (m:Memory) RETURN {COLUMNS}")
                self._columns = settled(MemoryColumns(table.rename_columns(list(FIELDS))))
                self._search_unsaved = True
            else:
                self._columns = settled(MemoryColumns(*loaded))
        self._columns.refresh(self._read_rows)
        return self._columns

    def _read_rows(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        return [dict(zip(FIELDS, row, strict=True)) for row in self._by_id(ids, COLUMNS)]

    def _rows_written(self, rows: Sequence[dict[str, Any]], texts: Any) -> None:
        """Whole memories just written (as `memory_to_row` gives them), or deleted (`texts` is
        None): saved copies go stale with this transaction, and the loaded keyword index and
        columns follow at once (a rollback drops them)."""
        self.content_changed()
        ids = [row["id"] for row in rows]
        with self._search_lock:
            if self._keywords is not None:
                if texts is None:
                    self._keywords.remove(ids)
                else:
                    self._keywords.add(ids, texts)
            if self._columns is not None:
                if texts is None:
                    self._columns.drop(ids)
                else:
                    self._columns.put(rows)
            self._search_unsaved = True

    def memories_changed(self, ids: Sequence[str]) -> None:
        """Some fields of these memories were set by a statement of another module: saved
        copies go stale with this transaction, and the columns read them again once it has
        committed (a read before the commit would see the old values)."""
        self.content_changed()

        def mark() -> None:
            with self._search_lock:
                if self._columns is not None:
                    self._columns.mark_stale(ids)
                    self._search_unsaved = True

        self.after_commit(mark)

    def layers_changed(self, layers: dict[str, str | None]) -> None:
        """Sedimentation set these memories' layers: as `memories_changed`, but the columns
        take the new values in place once the transaction commits."""
        self.content_changed()

        def put() -> None:
            with self._search_lock:
                if self._columns is not None:
                    self._columns.set_layers(layers)
                    self._search_unsaved = True

        self.after_commit(put)

    def session_ids(self, ids: Sequence[str]) -> dict[str, str]:
        """The session of each memory that has one, from the in-process columns."""
        with self._search_lock:
            rows = self._memory_columns().values(ids, ("id", "session_id"))
        return {k: row["session_id"] for k, row in rows.items() if row["session_id"]}

    def session_order(self, sessions: Sequence[str]) -> dict[str, list[str]]:
        """The memories of each session in the order they were stored (ids are monotonic)."""
        with self._search_lock:
            return self._memory_columns().in_sessions(sessions)

    def update_memory(
        self,
        memory: Memory,
        vector: npt.NDArray[np.float32] | None,
        space: EmbeddingSpace | None,
        passages: PassageVectors | None = None,
    ) -> None:
        """`vector` (and `passages`) replace the memory's vector and passages when given."""
        row = memory_to_row(memory)
        assignments = ", ".join(f"m.{f} = {_param(f)}" for f in _SET_FIELDS)
        params = {f"p_{f}": row[f] for f in _SET_FIELDS}
        with self.transaction():
            found = self.execute(
                f"MATCH (m:Memory {{id: $id}}) SET {assignments} RETURN m.id",
                {"id": memory.id, **params},
            )
            if not found:
                raise NotFound(f"no memory with id {memory.id!r}", id=memory.id)
            if vector is not None and space is not None:
                self.delete_vectors([memory.id])
                self.put_vectors(space, [memory.id], vector.reshape(1, -1))
                if passages is not None:
                    self.put_passages(space, *passages)
                    self.finish_pending(PASSAGES, [memory.id])  # an import's, if still waiting
            self._rows_written([row], [row["search_text"]])

    def delete_memory(self, memory_id: str) -> None:
        with self.transaction():
            found = self.execute(
                "MATCH (m:Memory {id: $id}) DETACH DELETE m RETURN count(*)",
                {"id": memory_id},
                entity_graph=True,
            )
            if not found or not found[0][0]:
                raise NotFound(f"no memory with id {memory_id!r}", id=memory_id)
            self.delete_vectors([memory_id])
            for work in (EXTRACT, PASSAGES):
                self.finish_pending(work, [memory_id])
            self._rows_written([{"id": memory_id}], None)

    def list_memories(self, filters: MemoryFilter, *, limit: int, cursor: str | None) -> MemoryPage:
        params: dict[str, Any] = {"limit": limit + 1}
        where = filter_clause(filters, params)
        if cursor:
            params["c_at"], params["c_id"] = _decode_cursor(cursor)
            where += " AND (m.created_at < $c_at OR (m.created_at = $c_at AND m.id < $c_id))"
        # ids only: Kùzu sorts every matching row with all it returns (88 -> 13 ms at 100k);
        # the memories come from the in-process columns
        rows = self.read(
            f"MATCH (m:Memory) WHERE {where} RETURN m.id "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT $limit",
            params,
        )
        found = self.get_memories([r[0] for r in rows[:limit]])
        memories = [found[r[0]] for r in rows[:limit] if r[0] in found]
        more = len(rows) > limit
        return MemoryPage(
            memories=memories, next_cursor=_encode_cursor(memories[-1]) if more else None
        )

    def export_page(self, cursor: str | None, *, limit: int) -> MemoryPage:
        """Every memory, archived ones included, oldest first, after the cursor."""
        params: dict[str, Any] = {"limit": limit + 1}
        where = "true"
        if cursor:
            params["c_at"], params["c_id"] = _decode_cursor(cursor)
            where = "(m.created_at > $c_at OR (m.created_at = $c_at AND m.id > $c_id))"
        rows = self.read(
            f"MATCH (m:Memory) WHERE {where} RETURN {RETURN_MEMORY} "
            "ORDER BY m.created_at, m.id LIMIT $limit",
            params,
        )
        memories = [row_to_memory(r) for r in rows[:limit]]
        more = len(rows) > limit
        return MemoryPage(
            memories=memories, next_cursor=_encode_cursor(memories[-1]) if more else None
        )

    def matching_ids(self, filters: MemoryFilter) -> set[str]:
        with self._search_lock:
            return self._memory_columns().matching(filters)

    def valid_at_mask(self, space: EmbeddingSpace, when: datetime) -> npt.NDArray[np.bool_]:
        """Which rows of the space's vector matrix were valid and recorded at `when`: the as-of
        filter applied inside the vector scan, so an early date needs no wider candidate list.

        The windows come from the in-process columns, once per write generation."""
        ids, _ = self.vectors(space)

        def windows() -> tuple[Datetimes, Datetimes, Datetimes]:
            with self._search_lock:
                return self._memory_columns().windows(list(ids))

        created, starts, ends = self.until_write("validity", windows, space.name, len(ids))
        moment = np.datetime64(stored_time(when), "us")
        mask: npt.NDArray[np.bool_] = (
            (created <= moment)
            & (np.isnat(starts) | (starts <= moment))
            & (np.isnat(ends) | (ends > moment))
        )
        return mask

    def memory_count(self) -> int:
        """Cached until the next write: recall asks on every query."""
        return self.until_write(
            "memory_count", lambda: int(self.read("MATCH (m:Memory) RETURN count(*)")[0][0])
        )

    def all_memory_ids(self) -> set[str]:
        return {r[0] for r in self.read("MATCH (m:Memory) RETURN m.id")}

    def has_archived(self) -> bool:
        """Cached until the next write: recall asks on every query."""

        def any_archived() -> bool:
            with self._search_lock:
                return self._memory_columns().any_archived()

        return self.until_write("has_archived", any_archived)

    def speakers(self) -> frozenset[str]:
        """Lowercased names of the people who speak in stored conversations; cached until the
        next write."""

        def speakers() -> frozenset[str]:
            with self._search_lock:
                return self._memory_columns().speakers()

        return self.until_write("speakers", speakers)

    def keyword_search(self, text: str, *, top: int) -> list[tuple[str, float]]:
        """BM25 over `search_text`; `text` must already be analysed (graphmem.text.query_text)."""
        if not text.strip():
            return []
        with self._search_lock:
            return self._keyword_index().search(text, top=top)

    def _keyword_index(self) -> KeywordIndex:
        """Read once per process (the caller holds `_search_lock`), on a pooled connection,
        so a writer waiting for that lock inside its transaction cannot block the read."""
        if self._keywords is None:
            saved = self._saved_search()
            index = saved.keywords() if saved else None
            if index is None:
                table = self.read_arrow("MATCH (m:Memory) RETURN m.id, m.search_text")
                index = KeywordIndex()
                index.add(table.column(0).to_pylist(), table.column(1).combine_chunks())
                self._search_unsaved = True
            self._keywords = settled(index)
        return self._keywords

    def _before_close(self) -> None:
        """Save the search structures of a big store, so the next process starts warm."""
        super()._before_close()
        if not self._search_unsaved or self.memory_count() < MIN_MEMORIES:
            return
        with self._search_lock:
            matrices = {t: m.saved() for t, m in self._cache().items() if m.ids}
            try:
                columns = self._columns.merged() if self._columns is not None else None
                self._search_files.save(self.content_stamp(), matrices, self._keywords, columns)
            except OSError as exc:  # a cache: the store itself is fine without it
                print(f"graphmem: search cache not saved: {exc}", file=sys.stderr)

    def backlog(self) -> dict[str, int]:
        """What background work has yet to do: live memories and document chunks waiting for
        their entities and facts. Counted once per write (multi-hop asks on every query)."""

        def count() -> dict[str, int]:
            memories = self.read(
                "MATCH (m:Memory) WHERE m.lifecycle <> 'archived' AND m.extracted_by IS NULL "
                "RETURN count(*)"
            )
            chunks = self.read("MATCH (c:Chunk) WHERE c.extracted_by IS NULL RETURN count(*)")
            return {"extraction": int(memories[0][0]), "chunks": int(chunks[0][0])}

        return dict(self.until_write("backlog", count))

    def _field_counts(self) -> dict[str, dict[str, int]]:
        """Memories by type, kind, context, lifecycle and layer: five scans (~30 ms at 100k),
        so cached until the next write (the console's stats page asks on every view)."""

        def count() -> dict[str, dict[str, int]]:
            counts: dict[str, dict[str, int]] = {}
            for field in ("type", "kind", "context", "lifecycle", "layer"):
                rows = self.read(f"MATCH (m:Memory) RETURN m.{field}, count(*)")
                counts[field] = {str(k) if k is not None else "": int(v) for k, v in rows}
            return counts

        return dict(self.until_write("field_counts", count))

    def stats(self, space: EmbeddingSpace) -> StoreStats:
        counts = self._field_counts()
        by_type = counts["type"]
        total = sum(by_type.values())
        layers: dict[str, int] = {}
        for layer, count in counts["layer"].items():  # a memory never moved reads as surface
            layers[layer or "surface"] = layers.get(layer or "surface", 0) + count
        vectors = self.vector_count(space)
        size = sum(p.stat().st_size for p in self.home.iterdir() if p.is_file())
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
            schema_version=self.migration_status().schema_version,
            engine=self.engine.name,
            engine_version=self.engine.version(),
            path=str(self.home),
        )
