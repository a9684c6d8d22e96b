"""AdminOps, the service of GraphMemory for the store as a whole: queries in the engine's own
dialect, its migration status, a backup, export and import, and re-embedding."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from graphmem.errors import InvalidInput, check_limit
from graphmem.imported import Supplied, memory_from_json, vector_base64
from graphmem.memory_ops import MemoryOps
from graphmem.models import (
    BackupInfo,
    CypherResult,
    DbStatus,
    ImportReport,
    Memory,
    MemoryPage,
    ReembedReport,
)
from graphmem.passage_work import IMPORT_BATCH, PassageWork
from graphmem.passages import passages
from graphmem.service_context import Service, ServiceContext

Progress = Callable[[int, int], None]
SUPPLIED_WEIGHT = 1 / 16  # of an imported line that brings its vector, against one to embed


class AdminOps(Service):
    """What `graphmem cypher`, `backup`, `export`, `import` and `reembed` call."""

    def __init__(
        self, context: ServiceContext, memories: MemoryOps, passage_work: PassageWork
    ) -> None:
        super().__init__(context)
        self._memories = memories
        self._passages = passage_work

    def cypher(
        self, query: str, params: Mapping[str, Any] | None = None, *, write: bool = False
    ) -> CypherResult:
        """Run a query in the storage engine's own dialect (Kùzu's Cypher today), for what no
        named method answers; read-only unless `write=True`."""
        return self.store.cypher(query, dict(params or {}), write=write)

    def db_status(self) -> DbStatus:
        return self.store.migration_status()

    def backup(self, dest: str | Path) -> BackupInfo:
        """A consistent copy of the store in a new directory, taken while it keeps serving."""
        return self.store.backup(Path(dest))

    def export_page(
        self, cursor: str | None = None, *, limit: int = 1000, with_vectors: bool = False
    ) -> MemoryPage:
        """Every memory, archived ones included, oldest first, a page at a time (for export).
        With vectors, an import into a store of the same embedding space skips embedding."""
        check_limit(limit, most=10_000)
        page = self.store.memories.export_page(cursor, limit=limit)
        if with_vectors:
            space = self.embedder.space
            row_ids, matrix = self.store.vectors.matrix(space)
            ids = [m.id for m in page.memories]
            page.embedding_space = space.label
            page.vectors = {
                i: vector_base64(matrix[row]) for i, row in row_ids.within(ids, len(matrix))
            }
            page.passages = {
                i: [vector_base64(row) for row in rows]
                for i, rows in self.store.vectors.passage_vectors(space, ids).items()
            }
        return page

    def _hold_search_structures(self) -> None:
        """Into an empty store, recall's structures cost nothing to read, and held, the
        import's writes keep them current: the first recall after an import of 100k memories
        into a new graph on a server read them all back (19 s) instead."""
        space = self.embedder.space
        self.store.vectors.ensure_space(space)
        self.store.vectors.warm(space)
        self.store.memories.warm_search()

    def import_jsonl(
        self,
        lines: Iterable[str],
        *,
        on_error: str = "continue",
        batch_size: int = IMPORT_BATCH,
        first_line: int = 1,
        on_progress: Progress | None = None,
    ) -> ImportReport:
        """Import JSONL written by export (ids, dates and metadata kept); bad lines are reported.

        One transaction per `batch_size` lines to embed; lines that bring their vector weigh a
        sixteenth of one, since each commit costs a checkpoint: at 100k memories ~0.6 s for
        8,192 lines and ~1.4 s for 32,768, so bigger transactions import faster."""
        if on_error not in ("continue", "stop"):
            raise InvalidInput("on_error must be 'continue' or 'stop'")
        started = time.perf_counter()
        errors: list[dict[str, Any]] = []
        pending: list[tuple[Memory, Supplied]] = []
        given: set[str] = set()  # ids the lines brought: only those can be in the store already
        imported = skipped = supplied = 0
        load = 0.0

        # with a worker, the passages wait for it: an import of notes of a few sentences each
        # takes half the time, and recall finds them by their own vectors meanwhile
        jobs = self._passages.jobs
        deferred = 0
        if self.store.memories.count() == 0:
            self._hold_search_structures()

        def flush() -> None:
            nonlocal imported, skipped, supplied, pending, load, given, deferred
            # a scan of the whole table for Kùzu (~0.4 s at 1M), so only when ids were given
            present = self.store.memories.existing_ids(sorted(given)) if given else set()
            fresh, seen = [], set(present)  # a file may name an id twice: the first line wins
            for memory, brought in pending:
                if memory.id not in seen:
                    seen.add(memory.id)
                    fresh.append((memory, brought))
            skipped += len(pending) - len(fresh)
            if fresh:
                memories = [m for m, _ in fresh]
                lines_bring = [b for _, b in fresh]
                vectors, found = self._memories.embed_memories(
                    memories, lines_bring, with_passages=jobs is None
                )
                supplied += sum(b.vector is not None for b in lines_bring)
                waiting = [
                    m.id
                    for m, b in fresh
                    if jobs is not None and b.passages is None and passages(m.content)
                ]
                # the rows that say they wait commit with the memories (graphmem.storage.protocols.pending)
                imported += self.store.memories.insert(
                    memories, vectors, self.embedder.space, found, deferred_passages=waiting
                )
                if waiting and jobs is not None:
                    jobs.submit(partial(self._passages.passages_later, waiting))
                    deferred += len(waiting)
            pending, load, given = [], 0.0, set()

        for lineno, line in enumerate(lines, start=first_line):
            if not line.strip():
                continue
            try:
                memory, brought, has_id = memory_from_json(line, self.embedder.space)
                pending.append((memory, brought))
                if has_id:
                    given.add(memory.id)
            except InvalidInput as exc:
                errors.append({"line": lineno, "message": exc.message})
                if on_error == "stop":
                    flush()
                    raise InvalidInput(
                        f"line {lineno}: {exc.message}", line=lineno, imported=imported
                    ) from exc
                continue
            load += SUPPLIED_WEIGHT if pending[-1][1].complete(pending[-1][0]) else 1.0
            if load >= batch_size:
                flush()
                if on_progress:
                    on_progress(lineno, 0)
        flush()
        return ImportReport(
            imported=imported,
            skipped=skipped,
            vectors_supplied=supplied,
            passages_pending=deferred,
            errors=errors,
            seconds=round(time.perf_counter() - started, 3),
        )

    def reembed(
        self, *, batch_size: int = 128, on_progress: Progress | None = None
    ) -> ReembedReport:
        """Give every memory a vector in the active embedding space, and passage vectors
        (graphmem.passages) to those stored before memories had them.

        Only what is missing is embedded, one transaction per batch, so an interrupted run
        resumes where it stopped when started again.
        """
        started = time.perf_counter()
        space = self.embedder.space
        self.store.vectors.ensure_space(space)
        have = set(self.store.vectors.ids(space))
        everything = self.store.memories.all_ids()
        todo = sorted(everything - have)
        # a memory with passages has "<id>#0"; one without may be a single sentence
        unsplit = self._passages.missing_passages(everything)
        total = len(todo) + len(unsplit)
        for start in range(0, len(todo), batch_size):
            ids = todo[start : start + batch_size]
            memories = self.store.memories.get_many(ids)
            fresh = [memories[i] for i in ids if i in memories]
            if fresh:  # unless all were deleted since
                vectors, found = self._memories.embed_memories(fresh)
                with self.store.transaction():
                    self.store.vectors.put(space, [m.id for m in fresh], vectors)
                    self.store.vectors.put_passages(space, *found)
            if on_progress:
                on_progress(start + len(ids), total)

        def progress(done: int, _: int) -> None:
            if on_progress:
                on_progress(len(todo) + done, total)

        given = self._passages.fill_passages(unsplit, batch_size=batch_size, on_progress=progress)
        return ReembedReport(
            space=space.label,
            embedded=len(todo),
            passages=given,
            total=len(everything),
            seconds=round(time.perf_counter() - started, 3),
            resumed=bool(todo) and bool(have & everything),
        )
