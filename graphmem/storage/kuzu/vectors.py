"""Vectors in Kùzu: one node table per vector set (`Vec_<space>`, `Psg_<space>`, `Chk_<space>`,
named as graphmem.indexes.vectors names the sets), written here and searched in the search
state's matrices, which the writes keep in step through their change events."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.errors import InvalidInput
from graphmem.indexes.changes import VectorsAdded, VectorsDeleted, VectorSetMade
from graphmem.indexes.row_ids import RowIds
from graphmem.indexes.search_state import SearchState
from graphmem.indexes.vectors import (
    CHUNK_PREFIX,
    PASSAGE_PREFIX,
    VEC_PREFIX,
    Matrix,
    PassageMatch,
    nearest,
    passage_matches,
    passages_by_owner,
)
from graphmem.passages import SEPARATOR, owner, passage_ids
from graphmem.storage.kuzu.connection import KuzuConnection

# COPY writes a vector in ~15 µs, LOAD FROM ... CREATE in ~180 (384 dims, measured), but COPY
# makes the commit checkpoint, which must wait for reads in flight: worth it for big batches only
COPY_MIN_ROWS = 256


def table_for(space: EmbeddingSpace) -> str:
    return VEC_PREFIX + space.name


def passage_table_for(space: EmbeddingSpace) -> str:
    return PASSAGE_PREFIX + space.name


def chunk_table_for(space: EmbeddingSpace) -> str:
    return CHUNK_PREFIX + space.name


class KuzuVectors:
    """graphmem.storage.protocols.Vectors, and the vector sets other repositories write
    (documents' chunks)."""

    def __init__(self, conn: KuzuConnection, state: SearchState) -> None:
        self.conn = conn
        self.state = state

    def tables(self) -> list[str]:
        return sorted(t for t in self.conn.table_names() if t.startswith(VEC_PREFIX))

    def space_names(self) -> set[str]:
        return {t.removeprefix(VEC_PREFIX) for t in self.tables()}

    def has_space(self, space: EmbeddingSpace) -> bool:
        return table_for(space) in self.conn.table_names()

    def ensure_space(self, space: EmbeddingSpace) -> None:
        with self.conn.writer_paused():
            if self.ensure_table(table_for(space), space.dim):
                info = {"provider": space.provider, "model": space.model, "dim": space.dim}
                self.conn.meta_set(f"space:{space.name}", json.dumps(info))

    def ensure_table(self, table: str, dim: int) -> bool:
        """Make a vector set's table unless it exists; True if it was made."""
        with self.conn.writer_paused():
            if table in self.conn.table_names():
                return False
            self.conn.execute(f"CREATE NODE TABLE {table}(id STRING PRIMARY KEY, vec FLOAT[{dim}])")
            self.conn.emit(VectorSetMade(table))
            self.conn.schema_changed()
            return True

    def put(
        self,
        space: EmbeddingSpace,
        ids: Sequence[str],
        vectors: Matrix,
        *,
        bulk: bool | None = None,
    ) -> None:
        self.ensure_space(space)
        self.insert(table_for(space), space, ids, vectors, bulk=bulk)

    def put_passages(
        self,
        space: EmbeddingSpace,
        ids: Sequence[str],
        vectors: Matrix,
        *,
        bulk: bool | None = None,
    ) -> None:
        if not len(ids):
            return
        self.ensure_table(passage_table_for(space), space.dim)
        self.insert(passage_table_for(space), space, ids, vectors, bulk=bulk)

    def insert(
        self,
        table: str,
        space: EmbeddingSpace,
        ids: Sequence[str],
        vectors: Matrix,
        *,
        bulk: bool | None = None,
    ) -> None:
        """Rows into an existing vector set's table: COPYed (`bulk`, by default from
        COPY_MIN_ROWS rows) or loaded in the caller's transaction."""
        if vectors.shape != (len(ids), space.dim):
            raise InvalidInput(
                f"expected {len(ids)} vectors of {space.dim} dims, got {vectors.shape}",
                space=space.label,
            )
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        rows = pa.table(
            {
                "id": pa.array(list(ids), pa.string()),
                "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), space.dim),
            }
        )
        with self.conn.writer_paused():
            # an arrow table cannot go through a prepared statement, hence query_result
            if not (len(ids) >= COPY_MIN_ROWS if bulk is None else bulk):
                self.conn.query_result(
                    f"LOAD FROM $t CREATE (:{table} {{id: id, vec: vec}})", {"t": rows}
                )
            else:
                with self.conn.transaction():  # joins the caller's, if any
                    self.conn.query_result(f"COPY {table} FROM $t", {"t": rows})
                    self.conn.checkpoint_at_commit()
            self.conn.emit(VectorsAdded(table, ids, vectors))

    def delete(self, ids: Sequence[str]) -> None:
        """The search state's matrices drop those rows rather than being read again: ~30 ms
        instead of ~1 s at 100k vectors, for every update that changes a memory's text."""
        gone = set(ids)
        passages = {p for i in gone for p in passage_ids(i)}
        with self.conn.writer_paused():
            for table in self.conn.table_names():
                if table.startswith(VEC_PREFIX):
                    self.delete_rows(table, gone)
                elif table.startswith(PASSAGE_PREFIX):
                    self.delete_rows(table, passages)

    def delete_rows(self, table: str, gone: set[str]) -> None:
        self.conn.execute(f"MATCH (v:{table}) WHERE v.id IN $ids DELETE v", {"ids": list(gone)})
        self.conn.emit(VectorsDeleted(table, frozenset(gone)))

    def count(self, space: EmbeddingSpace) -> int:
        if table_for(space) not in self.conn.table_names():
            return 0
        return int(self.conn.read(f"MATCH (v:{table_for(space)}) RETURN count(*)")[0][0])

    def ids(self, space: EmbeddingSpace) -> RowIds:
        return self.state.read_matrix(table_for(space), space.dim, lambda m: m.ids)

    def matrix(self, space: EmbeddingSpace) -> tuple[RowIds, Matrix]:
        return self.state.read_matrix(
            table_for(space), space.dim, lambda m: (m.ids, m.matrix(space.dim))
        )

    def warm(self, space: EmbeddingSpace) -> None:
        for table in (table_for(space), passage_table_for(space)):
            if table in self.conn.table_names():
                self.state.read_matrix(table, space.dim, lambda m: None)

    def nearest(
        self,
        space: EmbeddingSpace,
        vector: Matrix,
        top: int,
        mask: npt.NDArray[np.bool_] | None = None,
    ) -> list[tuple[str, float]]:
        return self.nearest_in(table_for(space), space.dim, vector, top, mask)

    def nearest_in(
        self,
        table: str,
        dim: int,
        vector: Matrix,
        top: int,
        mask: npt.NDArray[np.bool_] | None = None,
    ) -> list[tuple[str, float]]:
        """`nearest` over any vector set: the matrix is taken while no write changes it, and
        scanned after."""
        view = self.state.read_matrix(table, dim, lambda m: m.search_view(dim))
        return nearest(view, vector, top, mask)

    def nearest_passages(self, space: EmbeddingSpace, vector: Matrix, top: int) -> list[str]:
        if passage_table_for(space) not in self.conn.table_names():
            return []
        found = self.nearest_in(passage_table_for(space), space.dim, vector, top)
        return list(dict.fromkeys(owner(passage) for passage, _ in found))

    def passage_owners(self, space: EmbeddingSpace) -> set[str]:
        if passage_table_for(space) not in self.conn.table_names():
            return set()
        ids = self.state.read_matrix(passage_table_for(space), space.dim, lambda m: m.ids)
        first = f"{SEPARATOR}0"
        return {owner(i) for i in ids if i.endswith(first)}

    def _passage_rows(
        self, space: EmbeddingSpace, ids: Sequence[str]
    ) -> tuple[Matrix, list[tuple[str, int]]]:
        """The passage matrix, and (passage id, row) of the memories' passages, in order."""
        if not ids or passage_table_for(space) not in self.conn.table_names():
            return np.zeros((0, space.dim), np.float32), []
        wanted = [p for i in ids for p in passage_ids(i)]
        return self.state.read_matrix(
            passage_table_for(space), space.dim, lambda m: m.rows_of(wanted, space.dim)
        )

    def passage_vectors(self, space: EmbeddingSpace, ids: Sequence[str]) -> dict[str, Matrix]:
        return passages_by_owner(self._passage_rows(space, ids))

    def passage_scores(
        self, space: EmbeddingSpace, vector: Matrix, ids: Sequence[str]
    ) -> dict[str, PassageMatch]:
        return passage_matches(self._passage_rows(space, ids), vector)
