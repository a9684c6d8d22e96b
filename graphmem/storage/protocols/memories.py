"""Memories: their rows, and the reads recall makes of them from the in-process search state."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.idempotency import StoreKey
from graphmem.indexes.columns import ScoringRow
from graphmem.models import Memory, MemoryFilter, MemoryPage, StoreStats
from graphmem.storage.protocols.vectors import PassageVectors
from graphmem.storage.selection import MemorySelection


class Memories(Protocol):
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
        """Insert new memories (ids not in the store), their vectors (one row each, in order)
        and passages atomically, with the store keys (graphmem.idempotency) that find them
        again; returns how many. Each waits for extraction, those of `deferred_passages` for
        their passages (`Pending`). An import's `layer` is kept; `access_count` starts at 0."""
        ...

    def update(
        self,
        memory: Memory,
        vector: npt.NDArray[np.float32] | None,
        space: EmbeddingSpace | None,
        passages: PassageVectors | None = None,
    ) -> None:
        """Write every field of an existing memory but its layer (NotFound when it is not
        there); `vector` and `passages` replace its vector and passages when given."""
        ...

    def delete(self, memory_id: str) -> None:
        """Delete the memory with its edges, vectors, waiting work and the facts only it
        stated; NotFound when it is not there."""
        ...

    def add_accesses(self, rows: list[dict[str, Any]], *, at: datetime) -> None:
        """Add {id, n (uses), t (targeted uses)} to each memory's counts and set its
        accessed_at, in one statement; ids not found are skipped."""
        ...

    def finish_absent(self, work: str, memory_ids: Sequence[str]) -> list[str]:
        """Drop `work` waiting on those of the memories that are not there (checked again in
        the transaction that drops it); returns them, sorted."""
        ...

    # -- reads ------------------------------------------------------------------------------

    def get(self, memory_id: str) -> Memory:
        """The memory; NotFound when it is not there."""
        ...

    def get_many(self, ids: Sequence[str]) -> dict[str, Memory]:
        """id -> memory, for those of `ids` that are there."""
        ...

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        """Those of `ids` that are there."""
        ...

    def all_ids(self) -> set[str]: ...

    def stored_by_keys(self, keys: Sequence[str], *, now: datetime) -> dict[str, tuple[str, str]]:
        """key -> (memory id, digest) of the keys among `keys` still in force at `now` whose
        memory is still there."""
        ...

    def page(self, filters: MemoryFilter, *, limit: int, cursor: str | None) -> MemoryPage:
        """Memories that pass the filters (archived ones only when asked for), newest first,
        after `cursor` (one a page returned; InvalidInput otherwise)."""
        ...

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
        """Up to `limit` memories passing the filters, of one of `sessions` if given, created in
        [since, until), newest first (created_at, then id, descending), strictly before
        `before` (a created_at and an id) in that order."""
        ...

    def export_page(self, cursor: str | None, *, limit: int) -> MemoryPage:
        """Every memory, archived ones included, oldest first, after the cursor."""
        ...

    def select(self, selection: MemorySelection, *, limit: int) -> list[Memory]:
        """The memories a selection names, newest first."""
        ...

    def count(self) -> int:
        """How many memories (0 for a store without its schema); cached until the next write."""
        ...

    def count_by(self, field: str, filters: MemoryFilter) -> dict[str, int]:
        """Memories passing the filters by the value of `field` ("" for none)."""
        ...

    def labels(self, memory_ids: Sequence[str]) -> dict[str, str]:
        """Each memory's title, or the start of its content."""
        ...

    def newest_of(self, ids: Sequence[str], limit: int) -> list[str]:
        """Up to `limit` of those memories, newest first (deleted ones left out), from the
        in-process columns: no memory is read."""
        ...

    def backlog(self) -> dict[str, int]:
        """What background extraction has yet to do: {"extraction": live memories, "chunks":
        document chunks}; counted once per write."""
        ...

    def stats(self, space: EmbeddingSpace) -> StoreStats: ...

    # -- from the search state --------------------------------------------------------------

    def scoring_rows(
        self, ids: Sequence[str], filters: MemoryFilter | None = None
    ) -> dict[str, ScoringRow]:
        """What recall scores candidates by, for those of `ids` that pass the filters."""
        ...

    def matching_ids(self, filters: MemoryFilter) -> set[str]:
        """Every memory passing the filters (archived ones only when asked for)."""
        ...

    def warm_search(self) -> None:
        """Hold recall's structures of the memories (their fields, the keyword index) from now
        on: a write keeps held structures current, where recall would read unheld ones whole
        from the store the first time."""
        ...

    def keyword_search(self, text: str, *, top: int) -> list[tuple[str, float]]:
        """The `top` memories by BM25 over their search text, best first; `text` must already
        be analysed (graphmem.text.query_text)."""
        ...

    def valid_at_mask(self, space: EmbeddingSpace, when: datetime) -> npt.NDArray[np.bool_]:
        """Which rows of the space's vector matrix (`Vectors.matrix`) were valid and recorded
        at `when`: the as-of filter applied inside the vector scan."""
        ...

    def session_ids(self, ids: Sequence[str]) -> dict[str, str]:
        """The session of each memory that has one."""
        ...

    def session_order(self, sessions: Sequence[str]) -> dict[str, list[str]]:
        """The memories of each session in the order they were stored."""
        ...

    def archived_among(self, memory_ids: Sequence[str]) -> set[str]: ...

    def has_archived(self) -> bool:
        """Whether any memory is archived; cached until the next write."""
        ...

    def speakers(self) -> frozenset[str]:
        """Lowercased names of the people who speak in stored conversations; cached until the
        next write."""
        ...
