"""SearchState: a store's in-process search structures, in one object that knows no engine.

Recall and the multi-hop walk read the vector matrices, the keyword postings, every memory's
fields (the columns), the entity index and the documents' sections and chunks from here, never
from the store. Each is built on first use from the store's scans (`SearchSource`, one per
engine) or from the search cache on disk when that is current, and then kept in step by the
change events the write path emits (graphmem.indexes.changes). A rollback, or a write nobody
described, drops what may disagree with the store, to be read again.

Locks: the matrices have their own, so a recall never waits for a write's transaction (on 100k
memories, background extraction held the writer's lock for a second at a time); the keyword
index and the columns share one; the entity index has one. A structure not read yet is read
with the writer paused as well, so that no commit lands between its read and its caching. Order:
the writer's lock first, then these.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar

import pyarrow as pa

from graphmem.heap import settled
from graphmem.indexes.changes import (
    Change,
    DocumentMoved,
    DocumentRemoved,
    DocumentWritten,
    LayersSet,
    MemoriesChanged,
    MemoriesDeleted,
    MemoriesWritten,
    VectorsAdded,
    VectorsDeleted,
    VectorSetMade,
)
from graphmem.indexes.columns import FIELDS, MemoryColumns
from graphmem.indexes.doc_index import DocumentIndex
from graphmem.indexes.entity_index import EntityIndex
from graphmem.indexes.entity_log import EntityLog
from graphmem.indexes.keywords import KeywordIndex
from graphmem.indexes.search_cache import MIN_MEMORIES, SearchCache
from graphmem.indexes.vectors import VEC_PREFIX, Matrix, Rows, VectorMatrix
from graphmem.models import Memory

_T = TypeVar("_T")
REUSE_SECONDS = 10.0  # how old an entity index a walk takes while extraction is behind
Scanned = list[tuple[Any, ...]]


class SearchSource(Protocol):
    """The scans a store offers the search state: whole tables, read once per process."""

    @property
    def entity_log(self) -> EntityLog:
        """Which commits changed the entity graph, and what they said they changed."""
        ...

    def content_stamp(self) -> str:
        """The committed stamp that every write to memory text, fields, vectors or documents
        changes; read without waiting for the writer."""
        ...

    def writer_paused(self) -> AbstractContextManager[None]:
        """Hold the writer: no write starts or commits meanwhile; reads go on."""
        ...

    def has_vector_set(self, name: str) -> bool:
        """Whether the store holds the vector set (it may be empty)."""
        ...

    def vector_rows(self, name: str, dim: int) -> tuple[list[str], Matrix]:
        """Every (id, vector) of an existing vector set, as ids and a float32 matrix."""
        ...

    def memory_columns(self) -> pa.Table:
        """Every memory's columns (graphmem.indexes.columns.COLUMNS), in that order."""
        ...

    def memory_rows(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """The columns of these memories (those found), as FIELDS -> value."""
        ...

    def search_texts(self) -> pa.Table:
        """(id, analysed search text) of every memory."""
        ...

    def entity_graph(self) -> tuple[pa.Table, ...]:
        """What `EntityIndex` is built from: mentions, names, facts, versions, fact sources
        and aliases (see its constructor)."""
        ...

    def document_rows(self) -> tuple[Scanned, Scanned, Scanned]:
        """What `DocumentIndex.load` is built from: indexed documents, sections, chunks."""
        ...


class _Held(NamedTuple):
    generation: int  # the entity graph's, when the index was read
    read_at: float  # time.monotonic()
    built: EntityIndex
    exact: bool  # no commit ran during the read: later changes can be taken in


class SearchState:
    """One store's search structures; every method is safe to call from several threads."""

    def __init__(self, source: SearchSource, home: Path) -> None:
        self.source = source
        self.files = SearchCache(home)
        self.unsaved = False  # the structures in memory differ from the saved ones
        self._matrices: dict[str, VectorMatrix] = {}
        self._vectors_lock = threading.RLock()
        self._keywords: KeywordIndex | None = None
        self._columns: MemoryColumns | None = None
        self._search_lock = threading.Lock()  # guards the keyword index and the columns
        self._entities: _Held | None = None
        self._entities_lock = threading.Lock()
        self._documents: DocumentIndex | None = None

    def _saved(self) -> SearchCache | None:
        """The saved search structures, when they are those of the store as it is now."""
        return self.files if self.files.valid_for(self.source.content_stamp()) else None

    # -- vectors ----------------------------------------------------------------------------

    def read_matrix(self, name: str, dim: int, take: Callable[[VectorMatrix], _T]) -> _T:
        """`take` what a reader needs from a vector set's matrix while no write changes it."""
        with self._vectors_lock:
            held = self._matrices.get(name)
            if held is not None:
                return take(held)
        with self.source.writer_paused(), self._vectors_lock:
            return take(self._load(name, dim))

    def loaded_vector_sets(self) -> set[str]:
        with self._vectors_lock:
            return set(self._matrices)

    def _load(self, name: str, dim: int) -> VectorMatrix:
        held = self._matrices.get(name)
        if held is not None:
            return held
        saved = self._saved()
        exists = self.source.has_vector_set(name)
        found = _saved_matrix(saved, name, dim) if saved and exists else None
        if found is not None:
            held = found
        elif exists:
            self.unsaved = True
            held = VectorMatrix.of(*self.source.vector_rows(name, dim))
        else:
            held = VectorMatrix()
        self._matrices[name] = held
        return held

    def resume(self) -> str | None:
        """Hold every structure the cache saved, though the store has moved on since, and
        return the change-stream position they were exact at: replaying the stream from there
        brings them up to date (a server store's node restarting after the others wrote),
        where reading them from the store again takes minutes at 100k. A part the cache
        lacks is read from the store when first used, as usual. None, holding nothing, when
        the cache has no position, or is current (read lazily as usual)."""
        saved = self.files
        position = saved.position()
        if position is None or self._saved() is not None:
            return None
        matrices = {}
        for name in saved.vector_tables():
            dim = saved.dim(name)
            matrix = _saved_matrix(saved, name, dim) if dim else None
            if matrix is not None:
                matrices[name] = matrix
        columns, keywords = saved.columns(FIELDS), saved.keywords()
        with self._vectors_lock, self._search_lock:
            self._matrices.update(matrices)
            if columns is not None:
                self._columns = settled(MemoryColumns(*columns))
            if keywords is not None:
                self._keywords = settled(keywords)
            self.unsaved = True
        return position

    # -- memories ---------------------------------------------------------------------------

    @contextmanager
    def columns(self) -> Iterator[MemoryColumns]:
        """Every memory's fields, read once per process, stale rows read again; held locked."""
        with self._search_lock:
            yield self._memory_columns()

    def memories_if_loaded(self, ids: Sequence[str]) -> dict[str, Memory] | None:
        """The memories from the columns, when recall has loaded them already."""
        with self._search_lock:
            if self._columns is None:
                return None
            return self._memory_columns().memories(ids)

    def _memory_columns(self) -> MemoryColumns:
        if self._columns is None:
            saved = self._saved()
            loaded = saved.columns(FIELDS) if saved else None
            if loaded is None:
                table = self.source.memory_columns()
                self._columns = settled(MemoryColumns(table.rename_columns(list(FIELDS))))
                self.unsaved = True
            else:
                self._columns = settled(MemoryColumns(*loaded))
        self._columns.refresh(self.source.memory_rows)
        return self._columns

    def warm_memories(self) -> None:
        """Read the columns and the keyword index now, if they are not held yet."""
        with self._search_lock:
            self._memory_columns()
            self._keyword_index()

    def keyword_search(self, text: str, *, top: int) -> list[tuple[str, float]]:
        """BM25 over the memories' search texts; `text` already analysed."""
        with self._search_lock:
            return self._keyword_index().search(text, top=top)

    def _keyword_index(self) -> KeywordIndex:
        """Read once per process, without the writer's lock, so a writer waiting for the search
        lock inside its transaction cannot block the read."""
        if self._keywords is None:
            saved = self._saved()
            index = saved.keywords() if saved else None
            if index is None:
                table = self.source.search_texts()
                index = KeywordIndex()
                index.add(table.column(0).to_pylist(), table.column(1).combine_chunks())
                self.unsaved = True
            self._keywords = settled(index)
        return self._keywords

    # -- the entity graph -------------------------------------------------------------------

    def fresh_entity_index(self) -> EntityIndex | None:
        """The entity index if no commit changed the entity graph since it was read."""
        with self._entities_lock:
            held = self._entities
            fresh = held is not None and held.generation == self.source.entity_log.generation
            return held.built if held is not None and fresh else None

    def entity_index(
        self, *, while_extracting: bool = False, backlog: Callable[[], int] = lambda: 0
    ) -> EntityIndex:
        """The entity graph in process, kept up to date after a commit changed it: by taking
        in what the commits since said they changed, else by reading it again.
        `while_extracting`: an index read up to REUSE_SECONDS ago will do while `backlog()`
        memories wait for extraction (see Entities.index)."""
        with self._entities_lock:
            held, log = self._entities, self.source.entity_log
            generation = log.generation
            if held is not None and (
                held.generation == generation
                or (
                    while_extracting
                    and time.monotonic() - held.read_at < REUSE_SECONDS
                    and backlog() > 0  # asked only of a stale index
                )
            ):
                return held.built
            changes = None
            if held is not None and held.exact:
                changes = log.between(held.generation, generation)
            if held is not None and changes is not None:
                index, exact = held.built.taking(changes), True
            else:
                begun = log.begun
                index = self.read_entity_index()
                exact = begun == generation == log.begun  # no commit ran meanwhile
            self._entities = _Held(generation, time.monotonic(), settled(index), exact)
            return index

    def read_entity_index(self) -> EntityIndex:
        """The entity index as the store holds it now (six scans)."""
        return EntityIndex(*self.source.entity_graph())

    # -- documents --------------------------------------------------------------------------

    def document_index(self) -> DocumentIndex:
        """Sections, chunks and their keyword postings, read once per process."""
        index = self._documents
        if index is not None:  # without the writer's lock: a search never waits for a write
            return index
        with self.source.writer_paused():
            if self._documents is None:
                self._documents = DocumentIndex.load(*self.source.document_rows())
            return self._documents

    # -- change events ----------------------------------------------------------------------

    def changed(self, change: Change) -> None:
        """Take in what may run ahead of the commit (a rollback drops it)."""
        if isinstance(change, MemoriesWritten | MemoriesDeleted):
            ids = [row["id"] for row in change.rows] if isinstance(change, MemoriesWritten) else []
            with self._search_lock:
                if isinstance(change, MemoriesWritten):
                    if self._keywords is not None:
                        self._keywords.add(ids, change.texts)
                    if self._columns is not None:
                        self._columns.put(change.rows)
                else:
                    if self._keywords is not None:
                        self._keywords.remove(change.ids)
                    if self._columns is not None:
                        self._columns.drop(change.ids)
                self.unsaved = True
        elif isinstance(change, VectorsAdded | VectorsDeleted | VectorSetMade):
            with self._vectors_lock:
                if isinstance(change, VectorSetMade):
                    self._matrices.pop(change.vector_set, None)
                    return
                held = self._matrices.get(change.vector_set)
                if held is None:
                    return
                if isinstance(change, VectorsAdded):
                    held.append(change.ids, change.vectors)
                    self.unsaved = True
                elif held.drop(set(change.ids)):
                    self.unsaved = True

    def committed(self, change: Change) -> None:
        """Take in what needs the committed rows."""
        if isinstance(change, MemoriesChanged | LayersSet):
            with self._search_lock:
                if self._columns is None:
                    return
                if isinstance(change, MemoriesChanged):
                    self._columns.mark_stale(change.ids)
                else:
                    self._columns.set_layers(change.layers)
                self.unsaved = True
        elif isinstance(change, DocumentWritten | DocumentMoved | DocumentRemoved):
            documents = self._documents
            if documents is None:
                return
            if isinstance(change, DocumentWritten):
                documents.replace(change.doc, change.sections, change.chunks, change.search_texts)
            elif isinstance(change, DocumentMoved):
                documents.move(change.doc)
            else:
                documents.remove(change.uid)

    def discard(self) -> None:
        """Drop the matrices, keywords, columns and documents, to be read again."""
        with self._vectors_lock:
            self._matrices.clear()
        with self._search_lock:
            self._keywords = None
            self._columns = None
        self._documents = None

    # -- the cache on disk ------------------------------------------------------------------

    def save(self, memory_count: Callable[[], int], *, position: str | None = None) -> None:
        """Save the structures of a big store, so the next process starts warm; `position`:
        where in the store's change stream they are exact (see `resume`)."""
        if not self.unsaved or memory_count() < MIN_MEMORIES:
            return
        with self._search_lock:
            matrices = {t: m.saved() for t, m in self._matrices.items() if m.ids}
            try:
                columns = self._columns.merged() if self._columns is not None else None
                self.files.save(
                    self.source.content_stamp(), matrices, self._keywords, columns, position
                )
            except OSError as exc:  # a cache: the store itself is fine without it
                print(f"graphmem: search cache not saved: {exc}", file=sys.stderr)


def _saved_matrix(saved: SearchCache, name: str, dim: int) -> VectorMatrix | None:
    hit = saved.matrix(name, dim)
    if hit is None:
        return None
    held = VectorMatrix()
    held.ids, held.rows = hit[0], Rows(hit[1])
    projection = saved.projection(name, len(hit[0]))
    if projection is not None:
        held.basis, held.projected = projection[0], Rows(projection[1])
    return held


def saved_space_names(home: Path) -> set[str]:
    """The embedding spaces of the vectors saved last, read without opening the store."""
    tables = SearchCache(home).vector_tables()
    return {t.removeprefix(VEC_PREFIX) for t in tables if t.startswith(VEC_PREFIX)}
