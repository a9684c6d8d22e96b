"""Vectors, one set per embedding space and kind (memories, their passages, document chunks),
searched exactly in process (graphmem.indexes.vectors)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.indexes.row_ids import RowIds
from graphmem.indexes.vectors import PassageMatch

# (passage ids, their vectors): what `put_passages` writes
PassageVectors = tuple[Sequence[str], npt.NDArray[np.float32]]
Matrix = npt.NDArray[np.float32]

__all__ = ["Matrix", "PassageMatch", "PassageVectors", "Vectors"]


class Vectors(Protocol):
    """Vectors of two spaces are never compared: each space has its own sets."""

    def space_names(self) -> set[str]:
        """`EmbeddingSpace.name` of every space the store holds memory vectors for."""
        ...

    def has_space(self, space: EmbeddingSpace) -> bool: ...

    def ensure_space(self, space: EmbeddingSpace) -> None:
        """Make the space's set on first use and record what the space is."""
        ...

    def put(
        self,
        space: EmbeddingSpace,
        ids: Sequence[str],
        vectors: Matrix,
        *,
        bulk: bool | None = None,
    ) -> None:
        """Add one vector per id (InvalidInput unless `vectors` is len(ids) x dim), in the
        caller's transaction if any. `bulk`: load them in bulk (True) or row by row (False);
        by their number when None."""
        ...

    def put_passages(
        self,
        space: EmbeddingSpace,
        ids: Sequence[str],
        vectors: Matrix,
        *,
        bulk: bool | None = None,
    ) -> None:
        """Passage vectors, by passage id (graphmem.passages.passage_ids); as `put`."""
        ...

    def delete(self, ids: Sequence[str]) -> None:
        """Delete the ids' vectors and passages in every space."""
        ...

    def count(self, space: EmbeddingSpace) -> int: ...

    def ids(self, space: EmbeddingSpace) -> RowIds:
        """Ids with a vector in the space (a live view of the search state: do not change it)."""
        ...

    def matrix(self, space: EmbeddingSpace) -> tuple[RowIds, Matrix]:
        """(row ids, matrix) of every vector in the space, read once per process. An id
        written twice has two rows; `RowIds.rows` gives the latest."""
        ...

    def warm(self, space: EmbeddingSpace) -> None:
        """Read the space's vectors and passages now, before a recall needs them."""
        ...

    def nearest(
        self,
        space: EmbeddingSpace,
        vector: Matrix,
        top: int,
        mask: npt.NDArray[np.bool_] | None = None,
    ) -> list[tuple[str, float]]:
        """The `top` ids most similar to `vector` (cosine, best first) among the rows `mask`
        allows (rows added after the mask was made are left out)."""
        ...

    def nearest_passages(self, space: EmbeddingSpace, vector: Matrix, top: int) -> list[str]:
        """Ids of the memories that own the `top` passages most similar to `vector`, best
        first, each once."""
        ...

    def passage_owners(self, space: EmbeddingSpace) -> set[str]:
        """Ids of the memories with passage vectors in the space."""
        ...

    def passage_vectors(self, space: EmbeddingSpace, ids: Sequence[str]) -> dict[str, Matrix]:
        """Memory id -> its passages' vectors in order, for those of `ids` that have any."""
        ...

    def passage_scores(
        self, space: EmbeddingSpace, vector: Matrix, ids: Sequence[str]
    ) -> dict[str, PassageMatch]:
        """Memory id -> its best passage's cosine and its number of passages, for those of
        `ids` that have passages."""
        ...
