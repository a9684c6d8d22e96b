"""The work a write leaves for later: rows of a small table, written in the transaction that
writes the item and deleted in the transaction that does the work, so that after any exit the
next start reads exactly what is left."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Protocol

EXTRACT = "extract"  # a memory's entities and facts (graphmem.graph.background)
PASSAGES = "passages"  # a memory's passage vectors, deferred by an import (graphmem.passages)
CHUNK_EXTRACT = "extract_chunk"  # a document chunk's entities
WORKS = (EXTRACT, PASSAGES, CHUNK_EXTRACT)


class Pending(Protocol):
    def put(self, work: str, items: Sequence[str], *, at: datetime | None = None) -> None:
        """Record `work` to do on the items, in the caller's transaction if any; an item
        already waiting keeps its row (and its time)."""
        ...

    def finish(self, work: str, items: Iterable[str]) -> None:
        """The work on these items is done (or moot: the item is gone), in the caller's
        transaction, so it is done exactly when its result commits. Unknown items are fine."""
        ...

    def items(self, work: str, *, limit: int | None = None) -> list[str]:
        """The items waiting for `work`, in item order."""
        ...

    def among(self, work: str, items: Sequence[str]) -> list[str]:
        """Those of the items still waiting for `work`, in their order, each once."""
        ...

    def counts(self) -> dict[str, int]:
        """How many items wait for each kind of work (every one of WORKS, 0 included)."""
        ...
