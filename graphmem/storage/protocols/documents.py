"""Documents: a file's document, its section tree and its chunks, written one file per
transaction; the chunks' entities; and document search's reads from the search state."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.indexes.doc_index import ChunkInfo, DocInfo, DocumentIndex, SectionInfo
from graphmem.storage.protocols.entities import EntityRow, Mention


@dataclass(frozen=True)
class IndexedDocument:
    """What the store knows of an indexed file, to decide whether to index it again."""

    path: str
    uid: str
    sha256: str
    rel: str


@dataclass(frozen=True)
class DocumentWrite:
    """One file as it is now: its document, sections and chunks, and the vectors of the chunks
    the store does not have yet."""

    doc: DocInfo
    sha256: str
    size: int
    mtime: datetime
    metadata: dict[str, Any]
    sections: Sequence[SectionInfo]
    parents: dict[str, str]  # section key -> its parent's key
    chunks: Sequence[ChunkInfo]
    search_texts: Sequence[str]  # analysed text of each chunk (graphmem.text.index_text)
    new_vectors: dict[str, npt.NDArray[np.float32]]


class Documents(Protocol):
    # -- what is indexed --------------------------------------------------------------------

    def indexed_documents(self, root: str) -> dict[str, IndexedDocument]:
        """path -> the indexed document, of the files indexed under `root` ("" for the
        project)."""
        ...

    def indexed_locations(self) -> tuple[list[str], list[str]]:
        """(rel of every indexed project document, every outside root documents came from)."""
        ...

    def chunk_ids_of(self, uid: str) -> set[str]: ...

    def chunk_vector_ids(self, space: EmbeddingSpace, ids: Iterable[str]) -> set[str]:
        """Those of `ids` that have a vector in the space."""
        ...

    # -- writes -----------------------------------------------------------------------------

    def write(self, writes: Sequence[DocumentWrite], space: EmbeddingSpace) -> None:
        """Replace the files' sections and chunks in one transaction (a file is never half
        written); chunks that vanished lose their vectors and waiting work, new ones get their
        vectors, and every chunk written waits for extraction."""
        ...

    def move(self, old_path: str, doc: DocInfo) -> None:
        """A renamed file: its sections and chunks stay; the document moves to the new path
        with the citations of the old one."""
        ...

    def remove(self, paths: Sequence[str], spaces: Sequence[EmbeddingSpace]) -> None:
        """Files that are gone: their sections, chunks and chunk vectors, one file per
        transaction. A document that memories cite keeps its node, no longer indexed."""
        ...

    def state_supersessions(self, stated_by: str, pairs: Sequence[tuple[str, str]]) -> None:
        """What the document at `stated_by` says it supersedes or is superseded by, as
        (newer path, older path); it replaces what it said before."""
        ...

    def write_chunk_mentions(
        self,
        chunk_ids: Sequence[str],
        *,
        extractor: str,
        entities: Sequence[EntityRow],
        aliases: dict[str, str],
        mentions: Sequence[Mention],
        at: datetime,
    ) -> None:
        """The entities the chunks name (`Mention.memory_id` is the chunk's id), in one
        transaction, and the chunks' extraction finished. A chunk gone meanwhile is
        skipped."""
        ...

    # -- reads ------------------------------------------------------------------------------

    def chain(self, path: str) -> list[tuple[str, str, str, str | None]]:
        """(path, rel, title, the rel of what superseded it) of every document linked to
        `path` by supersession, itself included, in no particular order."""
        ...

    def overview(self, *, limit: int) -> list[dict[str, Any]]:
        """Every document (indexed, or made by a citation), by path, with its count of
        sections: {path, title, source_type, sections}."""
        ...

    def newest_indexed(
        self,
        *,
        since: datetime | None,
        until: datetime | None,
        before: tuple[datetime, str] | None,
        limit: int,
    ) -> list[dict[str, Any]]:
        """Up to `limit` indexed documents, indexed in [since, until), newest first
        (indexed_at, then `doc:PATH`, descending), strictly before `before` in that order:
        {path, title, source_type, indexed_at}."""
        ...

    def page(self, path: str) -> dict[str, Any] | None:
        """The document at `path`, its sections in reading order and the memories citing it,
        oldest first; None when there is none."""
        ...

    def pending_chunks(self, limit: int) -> list[tuple[str, str]]:
        """(id, text) of up to `limit` chunks waiting for extraction; the work of one that is
        gone is finished."""
        ...

    def count_pending_chunks(self) -> int: ...

    def chunks_mentioning(self, entity_ids: Sequence[str], *, limit: int) -> list[tuple[str, str]]:
        """(entity id, chunk id) for the chunks naming each entity, at most `limit` each."""
        ...

    def index(self) -> DocumentIndex:
        """Sections, chunks and their keyword postings, from the search state."""
        ...

    def nearest_chunks(
        self, space: EmbeddingSpace, vector: npt.NDArray[np.float32], top: int
    ) -> list[tuple[str, float]]:
        """The `top` chunks most similar to `vector`, best first."""
        ...

    def chunk_scores(
        self, space: EmbeddingSpace, vector: npt.NDArray[np.float32], ids: Sequence[str]
    ) -> dict[str, float]:
        """Cosine of each of `ids` that has a vector in the space."""
        ...

    def spaces(self) -> set[str]:
        """Names of the embedding spaces that hold chunk vectors."""
        ...
