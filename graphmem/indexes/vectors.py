"""Vector matrices held in process for exact search, one per vector set, and the scans over them.

A vector set is one embedding space's vectors of one kind: memories (`Vec_<space>`), their
passages (`Psg_<space>`) or document chunks (`Chk_<space>`). Vectors of two spaces are never
compared because they never share a set. Exact search over a numpy matrix costs ~4 ms at
100k x 384, so a matrix is read once per process (from the store's scan, or from the search
cache) and then kept in step by the change events of this process's own writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from graphmem.indexes.row_ids import RowIds
from graphmem.indexes.search_cache import SavedMatrix
from graphmem.passages import owner

VEC_PREFIX = "Vec_"  # a space's memory vectors, keyed by memory id
PASSAGE_PREFIX = "Psg_"  # a space's passage vectors (graphmem.passages), keyed by passage id
CHUNK_PREFIX = "Chk_"  # a space's chunk vectors, keyed by chunk id
# From this many vectors, a scan first scores every row in PROJECTED_DIMS dimensions (a third of
# the memory read), then scores exactly the best RERANK x top of them. Measured at 100k x 384:
# 11 ms exact, ~4 ms projected; recall of the exact top 100 in eval/results/bench_*.json.
PROJECT_MIN_ROWS = 50_000
PROJECTED_DIMS = 128
RERANK = 8
Matrix = npt.NDArray[np.float32]
Projection = tuple[Matrix, Matrix]  # (basis, every row projected on it)


class PassageMatch(NamedTuple):
    best: float  # the best passage's cosine
    total: int  # how many passages the memory has


class Rows:
    """float32 rows that grow with room to spare, so adding rows copies only those rows.

    Joining the new rows to the matrix copied all of it after every write: ~50 ms on the next
    recall at 100k vectors, ~0.5 s at 1M. Now the whole matrix is copied only when the room
    runs out, and then gets a quarter more. Rows past a view's end are the only ones written,
    so a reader's view never changes under it.
    """

    def __init__(self, rows: Matrix | None = None) -> None:
        self._buffer = rows  # may be a read-only map of the search cache
        self._count = 0 if rows is None else len(rows)

    def __len__(self) -> int:
        return self._count

    def view(self, dim: int) -> Matrix:
        if self._buffer is None:
            return np.zeros((0, dim), np.float32)
        return self._buffer if self._count == len(self._buffer) else self._buffer[: self._count]

    def extend(self, rows: Matrix) -> None:
        need = self._count + len(rows)
        if self._buffer is None or need > len(self._buffer) or not self._buffer.flags.writeable:
            grown = np.empty((need + need // 4 + 64, rows.shape[1]), np.float32)
            grown[: self._count] = self.view(rows.shape[1])
            self._buffer = grown
        self._buffer[self._count : need] = rows
        self._count = need


@dataclass
class VectorMatrix:
    """One vector set's ids and rows. An id written twice has two rows; `RowIds.rows` gives
    the latest."""

    ids: RowIds = field(default_factory=RowIds)
    rows: Rows = field(default_factory=Rows)
    basis: Matrix | None = None  # dim x PROJECTED_DIMS
    projected: Rows | None = None  # the first rows, projected on `basis`

    @classmethod
    def of(cls, ids: Sequence[str], rows: Matrix) -> VectorMatrix:
        """A matrix of scanned rows (none: an empty one)."""
        return cls(RowIds(ids), Rows(rows)) if len(ids) else cls()

    def saved(self) -> SavedMatrix:
        """What the search cache keeps of this matrix."""
        matrix = self.rows.view(0)  # never empty when saved
        if self.basis is None or self.projected is None:
            return self.ids, matrix, None
        return self.ids, matrix, (self.basis, self.projected.view(PROJECTED_DIMS))

    def projection(self, matrix: Matrix) -> Projection:
        """(basis, every row projected on it). The basis (the main directions of a sample of
        rows) is fitted once; rows added later are projected as they come."""
        if self.basis is None:
            sample = np.asarray(matrix[:: max(len(matrix) // 20_000, 1)], np.float64)
            _, directions = np.linalg.eigh(sample.T @ sample)  # ascending eigenvalues
            self.basis = np.ascontiguousarray(directions[:, ::-1][:, :PROJECTED_DIMS], np.float32)
        if self.projected is None:
            self.projected = Rows()
        done = len(self.projected)
        if done < len(matrix):
            self.projected.extend(np.asarray(matrix[done:] @ self.basis, np.float32))
        return self.basis, self.projected.view(PROJECTED_DIMS)

    def matrix(self, dim: int) -> Matrix:
        return self.rows.view(dim)

    def append(self, ids: Iterable[str], vectors: Matrix) -> None:
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
            self.rows = Rows(self.rows.view(0)[keep])
            if self.projected is not None:
                projected = self.projected.view(PROJECTED_DIMS)
                self.projected = Rows(projected[keep[: len(projected)]])
            dropped = True

    def search_view(self, dim: int) -> tuple[Matrix, RowIds, Projection | None]:
        """What `nearest` scans: taken while no write changes the matrix, scanned after."""
        matrix = self.matrix(dim)
        projected = self.projection(matrix) if len(matrix) >= PROJECT_MIN_ROWS else None
        return matrix, self.ids, projected

    def rows_of(self, ids: Sequence[str], dim: int) -> tuple[Matrix, list[tuple[str, int]]]:
        """The matrix, and (id, row) of those of `ids` it holds, in their order."""
        matrix = self.matrix(dim)
        return matrix, self.ids.within(list(ids), len(matrix))


def nearest(
    view: tuple[Matrix, RowIds, Projection | None],
    vector: Matrix,
    top: int,
    mask: npt.NDArray[np.bool_] | None = None,
) -> list[tuple[str, float]]:
    """The `top` rows of a `search_view` most similar to `vector` (cosine, best first) among
    those `mask` allows (rows added after the mask was made are left out)."""
    matrix, ids, projected = view
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


def scores_of(found: tuple[Matrix, list[tuple[str, int]]], vector: Matrix) -> dict[str, float]:
    """Cosine of each (id, row) of a `rows_of`."""
    matrix, rows = found
    if not rows:
        return {}
    scores = matrix[[row for _, row in rows]] @ vector
    return {i: float(s) for (i, _), s in zip(rows, scores.tolist(), strict=True)}


def passage_matches(
    found: tuple[Matrix, list[tuple[str, int]]], vector: Matrix
) -> dict[str, PassageMatch]:
    """Memory id -> its best passage's cosine and its number of passages, from a `rows_of` of
    passage ids."""
    matrix, rows = found
    if not rows:
        return {}
    scores = matrix[[row for _, row in rows]] @ vector
    best: dict[str, PassageMatch] = {}
    for (passage, _), score in zip(rows, scores.tolist(), strict=True):
        memory_id = owner(passage)
        seen = best.get(memory_id)
        best[memory_id] = (
            PassageMatch(max(seen.best, score), seen.total + 1) if seen else PassageMatch(score, 1)
        )
    return best


def passages_by_owner(found: tuple[Matrix, list[tuple[str, int]]]) -> dict[str, Matrix]:
    """Memory id -> its passages' vectors in order, from a `rows_of` of passage ids."""
    matrix, rows = found
    taken: dict[str, list[int]] = {}
    for passage, row in rows:  # in passage order, as asked
        taken.setdefault(owner(passage), []).append(row)
    return {memory_id: matrix[each] for memory_id, each in taken.items()}
