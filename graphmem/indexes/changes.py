"""Change events: what a write changed, said by the write path in the transaction that writes.

The search state (graphmem.indexes.search_state) follows the store through these alone: it never
learns of a write by reading the store, nor by a writer reaching into its structures. A writer
emits an event through the store's transactions (`Transactions.emit`); the state takes it in
within the transaction (`changed`) when what it holds may run ahead of the commit (a rollback
drops it all), or once the transaction commits (`committed`) when it must read the committed
rows. The entity graph's event is `EntityChange` (graphmem.indexes.entity_index), which the
entity log keeps per commit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np
import numpy.typing as npt

from graphmem.indexes.doc_index import ChunkInfo, DocInfo, SectionInfo
from graphmem.indexes.entity_index import EntityChange


@dataclass(frozen=True)
class MemoriesWritten:
    """Whole memories inserted or replaced: their rows as the columns hold them
    (graphmem.indexes.columns.FIELDS, times as stored), and their analysed search texts."""

    rows: Sequence[Mapping[str, Any]]
    texts: Any  # a sequence of str, or an arrow array of them
    stamps: ClassVar[bool] = True  # the content stamp changes (see `Change`)


@dataclass(frozen=True)
class MemoriesDeleted:
    ids: Sequence[str]
    stamps: ClassVar[bool] = True


@dataclass(frozen=True)
class MemoriesChanged:
    """Some fields of these memories were set in place: the columns read them again once the
    transaction commits (a read before would see the old values)."""

    ids: Sequence[str]
    stamps: ClassVar[bool] = True


@dataclass(frozen=True)
class LayersSet:
    """Sedimentation moved these memories (id -> layer, None for the surface)."""

    layers: Mapping[str, str | None]
    stamps: ClassVar[bool] = True


@dataclass(frozen=True)
class VectorsAdded:
    """Rows appended to a vector set (graphmem.indexes.vectors names them)."""

    vector_set: str
    ids: Sequence[str]
    vectors: npt.NDArray[np.float32]
    stamps: ClassVar[bool] = True


@dataclass(frozen=True)
class VectorsDeleted:
    vector_set: str
    ids: frozenset[str]
    stamps: ClassVar[bool] = True


@dataclass(frozen=True)
class VectorSetMade:
    """A vector set now exists in the store, empty: a matrix held for it before is dropped."""

    vector_set: str
    stamps: ClassVar[bool] = False


@dataclass(frozen=True)
class DocumentWritten:
    """One file's document, sections and chunks as they are now (with each chunk's analysed
    search text), replacing what the file held before."""

    doc: DocInfo
    sections: Sequence[SectionInfo]
    chunks: Sequence[ChunkInfo]
    search_texts: Sequence[str]
    stamps: ClassVar[bool] = True


@dataclass(frozen=True)
class DocumentMoved:
    """A renamed file: the document keeps its uid, sections and chunks."""

    doc: DocInfo
    stamps: ClassVar[bool] = True


@dataclass(frozen=True)
class DocumentRemoved:
    uid: str
    stamps: ClassVar[bool] = True


# Every event but VectorSetMade and EntityChange changes the content stamp, which the search
# cache on disk is valid for: memory text, fields or vectors, and the documents.
Change = (
    MemoriesWritten
    | MemoriesDeleted
    | MemoriesChanged
    | LayersSet
    | VectorsAdded
    | VectorsDeleted
    | VectorSetMade
    | DocumentWritten
    | DocumentMoved
    | DocumentRemoved
    | EntityChange
)


class ChangeListener(Protocol):
    """Something kept current by the change events (the search state)."""

    def changed(self, change: Change) -> None:
        """`change` was written in the open transaction (or alone, committed already). Called
        under the writer's lock; what the listener takes in now, a rollback drops."""

    def committed(self, change: Change) -> None:
        """The transaction that wrote `change` committed; its rows are readable now."""

    def discard(self) -> None:
        """A rollback, or a write nobody described (a caller's own query): drop whatever may
        disagree with the store, to be read again."""


@dataclass
class Recorder:
    """A listener that keeps what it was told, for tests and for the store's own checks."""

    seen: list[tuple[str, Any]] = field(default_factory=list)

    def changed(self, change: Change) -> None:
        self.seen.append(("changed", change))

    def committed(self, change: Change) -> None:
        self.seen.append(("committed", change))

    def discard(self) -> None:
        self.seen.append(("discard", None))
