"""Vectors, one `Vec_<space>` table per embedding space, and an in-process matrix for exact search.

Vectors of two spaces are never compared because they never share a table. Exact search over a
numpy matrix costs ~4 ms at 100k x 384, so the matrix is read once per process and then kept in
step with this process's own writes (the Kùzu file lock means no other process writes meanwhile).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.errors import InvalidInput
from graphmem.indexes.row_ids import RowIds
from graphmem.indexes.search_cache import SavedMatrix, SearchCache
from graphmem.passages import SEPARATOR, owner, passage_ids
from graphmem.storage.connection import KuzuConnection

_T = TypeVar("_T")

VEC_PREFIX = "Vec_"
PASSAGE_PREFIX = "Psg_"  # a space's passage vectors (graphmem.passages), keyed by passage id
# From this many vectors, a scan first scores every row in PROJECTED_DIMS dimensions (a third of
# the memory read), then scores exactly the best RERANK x top of them. Measured at 100k x 384:
# 11 ms exact, ~4 ms projected; recall of the exact top 100 in eval/results/bench_*.json.
PROJECT_MIN_ROWS = 50_000
PROJECTED_DIMS = 128
RERANK = 8
# COPY writes a vector in ~15 µs, LOAD FROM ... CREATE in ~180 (384 dims, measured), but COPY
# makes the commit checkpoint, which must wait for reads in flight: worth it for big batches only
COPY_MIN_ROWS = 256
# (passage ids, their vectors): what `put_passages` writes
PassageVectors = tuple[Sequence[str], npt.NDArray[np.float32]]


class PassageMatch(NamedTuple):
    best: float  # the best passage's cosine
    total: int  # how many passages the memory has


class _Rows:
    """float32 rows that grow with room to spare, so adding rows copies only those rows.

    Joining the new rows to the matrix copied all of it after every write: ~50 ms on the next
    recall at 100k vectors, ~0.5 s at 1M. Now the whole matrix is copied only when the room
    runs out, and then gets a quarter more. Rows past a view's end are the only ones written,
    so a reader's view never changes under it.
    """

    def __init__(self, rows: npt.NDArray[np.float32] | None = None) -> None:
        self._buffer = rows  # may be a read-only map of the search cache
        self._count = 0 if rows is None else len(rows)

    def __len__(self) -> int:
        return self._count

    def view(self, dim: int) -> npt.NDArray[np.float32]:
        if self._buffer is None:
            return np.zeros((0, dim), np.float32)
        return self._buffer if self._count == len(self._buffer) else self._buffer[: self._count]

    def extend(self, rows: npt.NDArray[np.float32]) -> None:
        need = self._count + len(rows)
        if self._buffer is None or need > len(self._buffer) or not self._buffer.flags.writeable:
            grown = np.empty((need + need // 4 + 64, rows.shape[1]), np.float32)
            grown[: self._count] = self.view(rows.shape[1])
            self._buffer = grown
        self._buffer[self._count : need] = rows
        self._count = need


@dataclass
class _Matrix:
    ids: RowIds = field(default_factory=RowIds)
    rows: _Rows = field(default_factory=_Rows)
    basis: npt.NDArray[np.float32] | None = None  # dim x PROJECTED_DIMS
    projected: _Rows | None = None  # the first rows, projected on `basis`

    def saved(self) -> SavedMatrix:
        """What the search cache keeps of this matrix."""
        matrix = self.rows.view(0)  # never empty when saved
        if self.basis is None or self.projected is None:
            return self.ids, matrix, None
        return self.ids, matrix, (self.basis, self.projected.view(PROJECTED_DIMS))

    def projection(
        self, matrix: npt.NDArray[np.float32]
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """(basis, every row projected on it). The basis (the main directions of a sample of
        rows) is fitted once; rows added later are projected as they come."""
        if self.basis is None:
            sample = np.asarray(matrix[:: max(len(matrix) // 20_000, 1)], np.float64)
            _, directions = np.linalg.eigh(sample.T @ sample)  # ascending eigenvalues
            self.basis = np.ascontiguousarray(directions[:, ::-1][:, :PROJECTED_DIMS], np.float32)
        if self.projected is None:
            self.projected = _Rows()
        done = len(self.projected)
        if done < len(matrix):
            self.projected.extend(np.asarray(matrix[done:] @ self.basis, np.float32))
        return self.basis, self.projected.view(PROJECTED_DIMS)

    def matrix(self, dim: int) -> npt.NDArray[np.float32]:
        return self.rows.view(dim)

    def append(self, ids: Iterable[str], vectors: npt.NDArray[np.float32]) -> None:
        self.ids.extend(ids)
        self.rows.extend(vectors)

    def drop(self, gone: set[str]) -> bool:
        """Leave out the rows of `gone` (a new id list and matrix, so readers holding the old
        ones keep a consistent pair); False if no row held one of them."""
        wanted, dropped = list(gone), False
        while True:
            rows = self.ids.rows(wanted)
            rows = rows[rows >= 0]  # each id's latest row; an earlier one is found next round
            if not len(rows):
                return dropped
            keep = np.ones(len(self.ids), dtype=bool)
            keep[rows] = False
            self.ids = self.ids.subset(keep)
            self.rows = _Rows(self.rows.view(0)[keep])
            if self.projected is not None:
                projected = self.projected.view(PROJECTED_DIMS)
                self.projected = _Rows(projected[keep[: len(projected)]])
            dropped = True


def table_for(space: EmbeddingSpace) -> str:
    return VEC_PREFIX + space.name


def passage_table_for(space: EmbeddingSpace) -> str:
    return PASSAGE_PREFIX + space.name


def saved_space_names(home: Path) -> set[str]:
    """The spaces of the search structures saved last, read without opening the store."""
    tables = SearchCache(home).vector_tables()
    return {t.removeprefix(VEC_PREFIX) for t in tables if t.startswith(VEC_PREFIX)}


class VectorTables(KuzuConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._matrices: dict[str, _Matrix] = {}
        # guards the matrices: a recall takes this one, not the writer's lock, so it never
        # waits for a write's transaction (on 100k memories, background extraction held that
        # lock for a second at a time). Order: the writer's lock first, then this one.
        self._vectors_lock = threading.RLock()
        self._search_files = SearchCache(self.home)
        self._search_unsaved = False  # in-memory search structures differ from the saved ones

    def _saved_search(self) -> SearchCache | None:
        """The saved search structures, when they are those of the store as it is now."""
        return self._search_files if self._search_files.valid_for(self.content_stamp()) else None

    def _cache(self) -> dict[str, _Matrix]:
        return self._matrices

    def _on_rollback(self) -> None:
        with self._vectors_lock:
            self._cache().clear()

    def _read_matrix(self, table: str, dim: int, take: Callable[[_Matrix], _T]) -> _T:
        """`take` what a reader needs from the table's matrix while no write changes it. A
        matrix not read yet is read under the writer's lock as well, so that no transaction
        commits between the read and the caching (a cached one is kept in step by the writes)."""
        with self._vectors_lock:
            cached = self._cache().get(table)
            if cached is not None:
                return take(cached)
        with self._lock, self._vectors_lock:
            return take(self._load(table, dim))

    def vector_tables(self) -> list[str]:
        return sorted(t for t in self.table_names() if t.startswith(VEC_PREFIX))

    def space_names(self) -> set[str]:
        """`EmbeddingSpace.name` of every space this store has a vector table for."""
        return {t.removeprefix(VEC_PREFIX) for t in self.vector_tables()}

    def ensure_space(self, space: EmbeddingSpace) -> None:
        """Create the space's table on first use and record what the space is."""
        with self._lock:
            if self._ensure_table(table_for(space), space.dim):
                info = {"provider": space.provider, "model": space.model, "dim": space.dim}
                self.meta_set(f"space:{space.name}", json.dumps(info))

    def _ensure_table(self, table: str, dim: int) -> bool:
        """Create a vector table unless it exists; True if it was created."""
        if table in self.table_names():
            return False
        self.execute(f"CREATE NODE TABLE {table}(id STRING PRIMARY KEY, vec FLOAT[{dim}])")
        with self._vectors_lock:
            self._cache().pop(table, None)
        self.schema_changed()
        return True

    def put_vectors(
        self,
        space: EmbeddingSpace,
        ids: Sequence[str],
        vectors: npt.NDArray[np.float32],
        *,
        bulk: bool | None = None,
    ) -> None:
        """`bulk`: COPY them (True) or log them (False); by their number when None (see
        COPY_MIN_ROWS)."""
        self.ensure_space(space)
        self._insert(table_for(space), space, ids, vectors, bulk=bulk)

    def put_passages(
        self,
        space: EmbeddingSpace,
        ids: Sequence[str],
        vectors: npt.NDArray[np.float32],
        *,
        bulk: bool | None = None,
    ) -> None:
        """Passage vectors, by passage id (`graphmem.passages.passage_ids`); `bulk` as for
        `put_vectors`."""
        if not len(ids):
            return
        with self._lock:
            self._ensure_table(passage_table_for(space), space.dim)
        self._insert(passage_table_for(space), space, ids, vectors, bulk=bulk)

    def _insert(
        self,
        name: str,
        space: EmbeddingSpace,
        ids: Sequence[str],
        vectors: npt.NDArray[np.float32],
        *,
        bulk: bool | None = None,
    ) -> None:
        if vectors.shape != (len(ids), space.dim):
            raise InvalidInput(
                f"expected {len(ids)} vectors of {space.dim} dims, got {vectors.shape}",
                space=space.label,
            )
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        table = pa.table(
            {
                "id": pa.array(list(ids), pa.string()),
                "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), space.dim),
            }
        )
        with self._lock:
            # an arrow table cannot go through a prepared statement, hence query_result
            if not (len(ids) >= COPY_MIN_ROWS if bulk is None else bulk):
                self.query_result(
                    f"LOAD FROM $t CREATE (:{name} {{id: id, vec: vec}})", {"t": table}
                )
            else:
                with self.transaction():  # joins the caller's, if any
                    self.query_result(f"COPY {name} FROM $t", {"t": table})
                    self.checkpoint_at_commit()
            with self._vectors_lock:
                cached = self._cache().get(name)
                if cached is not None:
                    cached.append(ids, vectors)
                    self._search_unsaved = True
            self.content_changed()

    def delete_vectors(self, ids: Sequence[str]) -> None:
        """Delete the ids' vectors and passages in every space. The in-process matrices drop
        those rows rather than being read again: ~30 ms instead of ~1 s at 100k vectors, for
        every update that changes a memory's text."""
        gone = set(ids)
        passages = {p for i in gone for p in passage_ids(i)}
        with self._lock:
            for table in self.table_names():
                if table.startswith(VEC_PREFIX):
                    self._delete_rows(table, gone)
                elif table.startswith(PASSAGE_PREFIX):
                    self._delete_rows(table, passages)
            self.content_changed()

    def _delete_rows(self, table: str, gone: set[str]) -> None:
        self.execute(f"MATCH (v:{table}) WHERE v.id IN $ids DELETE v", {"ids": list(gone)})
        with self._vectors_lock:
            cached = self._cache().get(table)
            if cached is not None and cached.drop(gone):
                self._search_unsaved = True

    def vector_count(self, space: EmbeddingSpace) -> int:
        if table_for(space) not in self.table_names():
            return 0
        return int(self.read(f"MATCH (v:{table_for(space)}) RETURN count(*)")[0][0])

    def vector_ids(self, space: EmbeddingSpace) -> RowIds:
        """Ids with a vector in the space (a live view of the cached index: do not change it)."""
        return self._read_matrix(table_for(space), space.dim, lambda m: m.ids)

    def vectors(self, space: EmbeddingSpace) -> tuple[RowIds, npt.NDArray[np.float32]]:
        """(row ids, matrix) of every vector in the space, read once per process. An id written
        twice has two rows; `RowIds.rows` gives the latest."""
        return self._read_matrix(
            table_for(space), space.dim, lambda m: (m.ids, m.matrix(space.dim))
        )

    def warm_vectors(self, space: EmbeddingSpace) -> None:
        """Read the space's vectors and passages now, before a recall needs them."""
        for table in (table_for(space), passage_table_for(space)):
            if table in self.table_names():
                self._read_matrix(table, space.dim, lambda m: None)

    def nearest(
        self,
        space: EmbeddingSpace,
        vector: npt.NDArray[np.float32],
        top: int,
        mask: npt.NDArray[np.bool_] | None = None,
    ) -> list[tuple[str, float]]:
        """The `top` rows most similar to `vector` (cosine, best first) among those `mask`
        allows (rows added after the mask was made are left out)."""
        return self._nearest(table_for(space), space.dim, vector, top, mask)

    def nearest_passages(
        self, space: EmbeddingSpace, vector: npt.NDArray[np.float32], top: int
    ) -> list[str]:
        """Ids of the memories that own the `top` passages most similar to `vector`, best
        first."""
        if passage_table_for(space) not in self.table_names():
            return []
        found = self._nearest(passage_table_for(space), space.dim, vector, top)
        return list(dict.fromkeys(owner(passage) for passage, _ in found))

    def passage_owners(self, space: EmbeddingSpace) -> set[str]:
        """Ids of the memories with passage vectors in the space."""
        if passage_table_for(space) not in self.table_names():
            return set()
        ids = self._read_matrix(passage_table_for(space), space.dim, lambda m: m.ids)
        first = f"{SEPARATOR}0"
        return {owner(i) for i in ids if i.endswith(first)}

    def _passage_rows(
        self, space: EmbeddingSpace, ids: Sequence[str]
    ) -> tuple[npt.NDArray[np.float32], list[tuple[str, int]]]:
        """The passage matrix, and (passage id, row) of the memories' passages, in order."""
        if not ids or passage_table_for(space) not in self.table_names():
            return np.zeros((0, space.dim), np.float32), []
        wanted = [p for i in ids for p in passage_ids(i)]

        def take(cached: _Matrix) -> tuple[npt.NDArray[np.float32], list[tuple[str, int]]]:
            matrix = cached.matrix(space.dim)
            return matrix, cached.ids.within(wanted, len(matrix))

        return self._read_matrix(passage_table_for(space), space.dim, take)

    def passage_vectors(
        self, space: EmbeddingSpace, ids: Sequence[str]
    ) -> dict[str, npt.NDArray[np.float32]]:
        """Memory id -> its passages' vectors in order, for those of `ids` that have any."""
        matrix, found = self._passage_rows(space, ids)
        rows: dict[str, list[int]] = {}
        for passage, row in found:  # in passage order, as asked
            rows.setdefault(owner(passage), []).append(row)
        return {memory_id: matrix[taken] for memory_id, taken in rows.items()}

    def passage_scores(
        self, space: EmbeddingSpace, vector: npt.NDArray[np.float32], ids: Sequence[str]
    ) -> dict[str, PassageMatch]:
        """Memory id -> its best passage's cosine and its number of passages, for those of
        `ids` that have passages."""
        matrix, found = self._passage_rows(space, ids)
        if not found:
            return {}
        scores = matrix[[row for _, row in found]] @ vector
        best: dict[str, PassageMatch] = {}
        for (passage, _), score in zip(found, scores.tolist(), strict=True):
            memory_id = owner(passage)
            seen = best.get(memory_id)
            best[memory_id] = (
                PassageMatch(max(seen.best, score), seen.total + 1)
                if seen
                else PassageMatch(score, 1)
            )
        return best

    def _nearest(
        self,
        table: str,
        dim: int,
        vector: npt.NDArray[np.float32],
        top: int,
        mask: npt.NDArray[np.bool_] | None = None,
    ) -> list[tuple[str, float]]:

        def take(cached: _Matrix) -> tuple[npt.NDArray[np.float32], RowIds, Any]:
            matrix = cached.matrix(dim)
            projected = cached.projection(matrix) if len(matrix) >= PROJECT_MIN_ROWS else None
            return matrix, cached.ids, projected

        matrix, ids, projected = self._read_matrix(table, dim, take)
        top = min(top, len(matrix))
        if top <= 0:
            return []
        if projected is None:
            scores = matrix @ vector
        else:
            basis, rows = projected
            scores = rows[: len(matrix)] @ (vector @ basis)
        if mask is not None:
            keep = np.zeros(len(scores), dtype=bool)
            keep[: len(mask)] = mask[: len(scores)]
            scores = np.where(keep, scores, -np.inf)
        if projected is not None:  # rerank the best estimates exactly
            wide = min(top * RERANK, len(scores))
            pool = np.argpartition(-scores, wide - 1)[:wide]
            pool = pool[np.isfinite(scores[pool])]
            exact = matrix[pool] @ vector
            order = np.argsort(-exact, kind="stable")[:top]
            return [(ids[pool[i]], float(exact[i])) for i in order]
        best = np.argpartition(-scores, top - 1)[:top]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(ids[i], float(scores[i])) for i in best if np.isfinite(scores[i])]

    def _load(self, table: str, dim: int) -> _Matrix:
        cached = self._cache().get(table)
        if cached is not None:
            return cached
        cached = _Matrix()
        saved = self._saved_search()
        hit = saved.matrix(table, dim) if saved and table in self.table_names() else None
        if hit is not None and saved is not None:
            cached.ids, cached.rows = hit[0], _Rows(hit[1])
            projection = saved.projection(table, len(hit[0]))
            if projection is not None:
                cached.basis, cached.projected = projection[0], _Rows(projection[1])
        elif table in self.table_names():
            self._search_unsaved = True
            result = self.query_result(f"MATCH (v:{table}) RETURN v.id, v.vec")
            arrow = result.get_as_arrow(chunk_size=100_000)
            if arrow.num_rows:
                cached.ids = RowIds(arrow.column(0).to_pylist())
                flat = arrow.column(1).combine_chunks().flatten().to_numpy(zero_copy_only=False)
                cached.rows = _Rows(np.asarray(flat, dtype=np.float32).reshape(-1, dim))
        self._cache()[table] = cached
        return cached
