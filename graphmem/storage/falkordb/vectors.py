"""Vectors in FalkorDB: one label per vector set (`Vec_<space>`, `Psg_<space>`, `Chk_<space>`,
named as graphmem.indexes.vectors names the sets), each vector a `vecf32` property with no
vector index (docs/adr/0011-falkordb-engine.md): written here, searched in the search state's
matrices, which the writes keep in step through their change events.

A set exists from its `_Meta` record (`vector_set:<label>` -> dim), not from its first node:
FalkorDB has no empty labels."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

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
from graphmem.storage.falkordb.connection import FalkorConnection
from graphmem.storage.falkordb.schema import vector_set_index

SET_KEY = "vector_set:"  # _Meta key prefix of a vector set's record


def table_for(space: EmbeddingSpace) -> str:
    return VEC_PREFIX + space.name


def passage_table_for(space: EmbeddingSpace) -> str:
    return PASSAGE_PREFIX + space.name


def chunk_table_for(space: EmbeddingSpace) -> str:
    return CHUNK_PREFIX + space.name


class FalkorVectors:
    """graphmem.storage.protocols.Vectors over one connection and the search state."""

    def __init__(self, conn: FalkorConnection, state: SearchState) -> None:
        self.conn = conn
        self.state = state
        self._known: set[str] = set()  # sets this node has seen recorded

    def vector_sets(self) -> set[str]:
        """Every recorded vector set, read from the server (other nodes make sets too)."""
        rows = self.conn.read(
            "MATCH (m:_Meta) WHERE m.key STARTS WITH $p RETURN m.key", {"p": SET_KEY}
        )
        found = {str(row[0]).removeprefix(SET_KEY) for row in rows}
        self._known |= found
        return found

    def has_set(self, name: str) -> bool:
        return name in self._known or name in self.vector_sets()

    def space_names(self) -> set[str]:
        return {s.removeprefix(VEC_PREFIX) for s in self.vector_sets() if s.startswith(VEC_PREFIX)}

    def has_space(self, space: EmbeddingSpace) -> bool:
        return self.has_set(table_for(space))

    def ensure_space(self, space: EmbeddingSpace) -> None:
        if self.ensure_set(table_for(space), space.dim):
            info = {"provider": space.provider, "model": space.model, "dim": space.dim}
            self.conn.meta_set(f"space:{space.name}", json.dumps(info))

    def ensure_set(self, name: str, dim: int) -> bool:
        """Record a vector set unless this node knows it; True if it was recorded now. Call
        it before a transaction buffers writes: it may read whether another node made it."""
        if name in self._known:
            return False
        if not self.conn.buffered() and name in self.vector_sets():
            return False
        vector_set_index(self.conn, name)  # an index statement runs at once, outside
        with self.conn.transaction():
            self.conn.write(
                "MERGE (m:_Meta {key: $k}) ON CREATE SET m.value = $v",
                {"k": SET_KEY + name, "v": str(dim)},
            )
            self.conn.emit(VectorSetMade(name))
        self._known.add(name)
        return True

    def put(
        self,
        space: EmbeddingSpace,
        ids: Sequence[str],
        vectors: Matrix,
        *,
        bulk: bool | None = None,
    ) -> None:
        """`bulk` makes no difference here: every batch is one UNWIND in the transaction."""
        self.ensure_space(space)
        self.insert(table_for(space), space, ids, vectors)

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
        self.ensure_set(passage_table_for(space), space.dim)
        self.insert(passage_table_for(space), space, ids, vectors)

    def insert(self, name: str, space: EmbeddingSpace, ids: Sequence[str], vectors: Matrix) -> None:
        """Rows into a recorded vector set, in the caller's transaction if any."""
        if vectors.shape != (len(ids), space.dim):
            raise InvalidInput(
                f"expected {len(ids)} vectors of {space.dim} dims, got {vectors.shape}",
                space=space.label,
            )
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        with self.conn.transaction():
            self.conn.write(
                f"UNWIND range(0, size($ids) - 1) AS i CREATE (:{name} {{id: $ids[i], "
                "vec: vecf32($vecs[i])})",
                {"ids": list(ids), "vecs": vectors},
            )
            self.conn.emit(VectorsAdded(name, list(ids), vectors))

    def delete(self, ids: Sequence[str]) -> None:
        gone = set(ids)
        passages = {p for i in gone for p in passage_ids(i)}
        with self.conn.transaction():
            for name in sorted(
                self._known | (set() if self.conn.buffered() else self.vector_sets())
            ):
                if name.startswith(VEC_PREFIX):
                    self.delete_rows(name, gone)
                elif name.startswith(PASSAGE_PREFIX):
                    self.delete_rows(name, passages)

    def delete_rows(self, name: str, gone: set[str]) -> None:
        if gone:
            self.conn.write(f"MATCH (v:{name}) WHERE v.id IN $ids DELETE v", {"ids": sorted(gone)})
            self.conn.emit(VectorsDeleted(name, frozenset(gone)))

    def count(self, space: EmbeddingSpace) -> int:
        rows = self.conn.read(f"MATCH (v:{table_for(space)}) RETURN count(v)")
        return int(rows[0][0]) if rows else 0

    def ids(self, space: EmbeddingSpace) -> RowIds:
        return self.state.read_matrix(table_for(space), space.dim, lambda m: m.ids)

    def matrix(self, space: EmbeddingSpace) -> tuple[RowIds, Matrix]:
        return self.state.read_matrix(
            table_for(space), space.dim, lambda m: (m.ids, m.matrix(space.dim))
        )

    def warm(self, space: EmbeddingSpace) -> None:
        for name in (table_for(space), passage_table_for(space)):
            if self.has_set(name):
                self.state.read_matrix(name, space.dim, lambda m: None)

    def nearest(
        self,
        space: EmbeddingSpace,
        vector: Matrix,
        top: int,
        mask: npt.NDArray[np.bool_] | None = None,
    ) -> list[tuple[str, float]]:
        view = self.state.read_matrix(
            table_for(space), space.dim, lambda m: m.search_view(space.dim)
        )
        return nearest(view, vector, top, mask)

    def nearest_passages(self, space: EmbeddingSpace, vector: Matrix, top: int) -> list[str]:
        name = passage_table_for(space)
        if not self.has_set(name):
            return []
        view = self.state.read_matrix(name, space.dim, lambda m: m.search_view(space.dim))
        return list(dict.fromkeys(owner(p) for p, _ in nearest(view, vector, top, None)))

    def passage_owners(self, space: EmbeddingSpace) -> set[str]:
        name = passage_table_for(space)
        if not self.has_set(name):
            return set()
        ids = self.state.read_matrix(name, space.dim, lambda m: m.ids)
        first = f"{SEPARATOR}0"
        return {owner(i) for i in ids if i.endswith(first)}

    def _passage_rows(
        self, space: EmbeddingSpace, ids: Sequence[str]
    ) -> tuple[Matrix, list[tuple[str, int]]]:
        name = passage_table_for(space)
        if not ids or not self.has_set(name):
            return np.zeros((0, space.dim), np.float32), []
        wanted = [p for i in ids for p in passage_ids(i)]
        return self.state.read_matrix(name, space.dim, lambda m: m.rows_of(wanted, space.dim))

    def passage_vectors(self, space: EmbeddingSpace, ids: Sequence[str]) -> dict[str, Matrix]:
        return passages_by_owner(self._passage_rows(space, ids))

    def passage_scores(
        self, space: EmbeddingSpace, vector: Matrix, ids: Sequence[str]
    ) -> dict[str, PassageMatch]:
        return passage_matches(self._passage_rows(space, ids), vector)
