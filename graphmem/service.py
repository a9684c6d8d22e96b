"""GraphMemory: the one facade that the CLI, the MCP server, the daemon and hooks call.

It validates input with the models, embeds outside the write lock, and hands every read and write to
the storage layer, so transports never see Cypher and the store never sees unvalidated input.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import ValidationError

from graphmem.agents.context import HookOps
from graphmem.documents.ops import DocumentOps
from graphmem.embeddings.base import Embedder
from graphmem.embeddings.factory import make_embedder, warm
from graphmem.errors import (
    Conflict,
    EmbeddingError,
    InvalidInput,
    check_limit,
    item_error,
    validation_message,
)
from graphmem.foreground import lower_priority
from graphmem.graph.background import Extraction
from graphmem.graph.ops import GraphOps
from graphmem.idempotency import repeated_stores, store_key
from graphmem.imported import Supplied, memory_from_json, new_memory, vector_base64
from graphmem.jobs import Jobs
from graphmem.knowledge.ops import KnowledgeOps
from graphmem.models import (
    BackupInfo,
    CypherResult,
    DbStatus,
    Hit,
    ImportReport,
    Memory,
    MemoryFilter,
    MemoryInput,
    MemoryPage,
    MemoryPatch,
    RecallResult,
    RecallScope,
    RecallWarning,
    ReembedReport,
    StoredMemory,
    StoreStats,
    utcnow,
    validate_filter,
    validated,
    validated_items,
)
from graphmem.passage_work import IMPORT_BATCH, PassageWork
from graphmem.passages import passage_ids, passages, passages_of
from graphmem.recall.config import RecallConfig, get_recipe
from graphmem.recall.pipeline import Search, hydrate
from graphmem.recall.pipeline import rank as rank_candidates
from graphmem.recall.query import embedding_text
from graphmem.recall.warnings import dead_end_warnings, missing_vector_warnings
from graphmem.sessions.checkpoint import CheckpointOps
from graphmem.sessions.ops import SessionOps
from graphmem.settings import Settings, load_settings
from graphmem.steward.ops import StewardOps
from graphmem.storage.backup import take_backup
from graphmem.storage.store import KuzuStore
from graphmem.storage.vectors import PassageVectors, saved_space_names
from graphmem.usage import UsageLog

Progress = Callable[[int, int], None]
log = logging.getLogger("graphmem")
SUPPLIED_WEIGHT = 1 / 16  # of an imported line that brings its vector, against one to embed


def validate_input(item: MemoryInput | Mapping[str, Any]) -> MemoryInput:
    return validated(MemoryInput, item)


class GraphMemory(
    PassageWork, KnowledgeOps, GraphOps, DocumentOps, SessionOps, CheckpointOps, HookOps, StewardOps
):
    """A memory store: typed memories in a Kùzu graph, recalled by meaning and by exact words."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        extract_in_background: bool = True,
        warm_embedder: bool = False,
    ) -> None:
        """`extract_in_background=False` leaves new memories pending for a later backfill, and
        has an import embed its passages before it returns: a one-shot command should not wait
        for a model to load before it exits, nor leave work to a thread that dies with it.
        `warm_embedder=True` loads the embedding model in a thread while the store opens, for a
        caller that is about to embed (Kùzu opens without holding the GIL)."""
        self.settings = settings
        self._embedder = embedder
        self._embedding = settings.embedding
        if warm_embedder and embedder is None:
            # Which model the store wants is known once it is open; until then, guess from
            # the search structures it saved last.
            self._embedding = settings.embedding.for_store(saved_space_names(settings.home))
            self._embedder = make_embedder(self._embedding)
            threading.Thread(target=warm, args=(self._embedder,), daemon=True).start()
        self.store = KuzuStore.open(
            settings.home, lock_timeout=settings.lock_timeout, engine=settings.engine
        )
        try:
            self.store.migrate()
            if embedder is None:
                settled = settings.embedding.for_store(self.store.space_names())
                if settled != self._embedding:
                    self._embedding, self._embedder = settled, None
        except BaseException:
            self.store.close()
            raise
        self._extraction = Extraction(
            self.store, settings, self._embed_names, background=extract_in_background
        )
        # an import leaves its passages to this worker when one may run (graphmem.passages)
        self._passage_jobs = (
            Jobs("graphmem-passages", initializer=lower_priority) if extract_in_background else None
        )
        self._usage = UsageLog(self.store, background=extract_in_background)

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        """Created on first use so that commands which never embed never load a model."""
        if self._embedder is None:
            self._embedder = make_embedder(self._embedding)
        return self._embedder

    @property
    def path(self) -> Path:
        return self.settings.home

    def close(self) -> None:
        self._usage.close()
        self._extraction.stop()
        if self._passage_jobs is not None:
            self._passage_jobs.stop()
        self.store.close()

    def __enter__(self) -> GraphMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- memories ---------------------------------------------------------------------------

    def _embed_memories(
        self,
        memories: Sequence[Memory],
        given: Sequence[Supplied] | None = None,
        *,
        with_passages: bool = True,
    ) -> tuple[npt.NDArray[np.float32], PassageVectors]:
        """The memories' vectors and their passages' (graphmem.passages), from one embedder
        call; what `given` brings (an import's vector, and its passages') is not embedded, nor
        are passages at all with `with_passages=False`."""
        supplied = given or [Supplied()] * len(memories)
        missing = [i for i, s in enumerate(supplied) if s.vector is None]
        ids, pieces = passages_of(
            m
            for m, s in zip(memories, supplied, strict=True)
            if with_passages and s.passages is None
        )
        texts = [self._embedding_text(memories[i]) for i in missing] + pieces
        space = self.embedder.space
        embedded = self.embedder.embed(texts) if texts else np.zeros((0, space.dim), np.float32)
        self.store.ensure_space(space)
        vectors = np.zeros((len(memories), space.dim), np.float32)
        vectors[missing] = embedded[: len(missing)]
        passage_rows = [embedded[len(missing) :]]
        for i, (memory, s) in enumerate(zip(memories, supplied, strict=True)):
            if s.vector is not None:
                vectors[i] = s.vector
            if s.passages is not None and len(s.passages):
                ids += passage_ids(memory.id, len(s.passages))
                passage_rows.append(s.passages)
        return vectors, (ids, np.concatenate(passage_rows))

    def remember(self, content: str, **fields: Any) -> StoredMemory:
        """Store one memory; returns it with its id. Raises InvalidInput before writing anything."""
        return self._store([validate_input({"content": content, **fields})])[0]

    def remember_many(
        self,
        items: Iterable[MemoryInput | Mapping[str, Any]],
        *,
        batch_size: int = 256,
        on_progress: Progress | None = None,
    ) -> list[StoredMemory]:
        """Store many memories in batches: one embedding call and one transaction per batch.

        Every item is checked before any is stored; a bad one fails the call with an InvalidInput
        naming it as `item <index>: <field>: <why>` (fields `index`, `field`, and `errors` for
        every bad item). A store that repeats an earlier one (graphmem.idempotency: the same
        idempotency key, or an exact duplicate from the same client session within the window)
        stores nothing and returns the earlier memory, marked `deduplicated`."""
        return self._store(
            validated_items(MemoryInput, items),
            batch_size=batch_size,
            on_progress=on_progress,
            batch=True,
        )

    def _store(
        self,
        inputs: list[MemoryInput],
        *,
        batch_size: int = 256,
        on_progress: Progress | None = None,
        batch: bool = False,
    ) -> list[StoredMemory]:
        """`batch`: errors about one input name it by its index."""
        keys = [
            store_key(item, window_seconds=self.settings.duplicate_window_seconds, now=utcnow())
            for item in inputs
        ]
        named = [k.key for k in keys if k is not None]
        try:
            repeats = repeated_stores(keys, self.store.stored_by_keys(named, now=utcnow()))
        except Conflict as exc:
            index = exc.fields.pop("index", 0)
            if not batch:
                raise
            raise item_error(exc, index) from exc
        fresh = [i for i in range(len(inputs)) if i not in repeats]
        out: dict[int, StoredMemory] = {}
        for start in range(0, len(fresh), batch_size):
            chosen = fresh[start : start + batch_size]
            memories = [new_memory(StoredMemory, inputs[i]) for i in chosen]
            vectors, found = self._embed_memories(memories)
            with_keys = [
                (key, m.id) for i, m in zip(chosen, memories, strict=True) if (key := keys[i])
            ]
            self.store.insert_memories(
                memories, vectors, self.embedder.space, found, keys=with_keys
            )
            out.update(zip(chosen, memories, strict=True))
            self._extraction.schedule([m.id for m in memories])
            if on_progress:
                on_progress(len(out), len(inputs))
        earlier = self.store.get_memories([r for r in repeats.values() if isinstance(r, str)])
        for i, repeated in repeats.items():
            first = out[repeated] if isinstance(repeated, int) else earlier[repeated]
            out[i] = StoredMemory.model_validate({**first.model_dump(), "deduplicated": True})
        return [out[i] for i in range(len(inputs))]

    @staticmethod
    def _embedding_text(memory: Memory) -> str:
        return f"{memory.title}\n{memory.content}" if memory.title else memory.content

    def get(self, memory_id: str) -> Memory:
        memory = self.store.get_memory(memory_id)
        self._usage.note([memory_id], targeted=True)
        return memory

    def update(self, memory_id: str, **changes: Any) -> Memory:
        """Change fields of a memory; a content or title change re-embeds it."""
        try:
            patch = MemoryPatch.model_validate(changes)
        except ValidationError as exc:
            raise InvalidInput(validation_message(exc)) from exc
        given = patch.model_dump(exclude_unset=True, exclude_none=True)
        if not given:
            raise InvalidInput("nothing to update: give at least one field to change")
        current = self.store.get_memory(memory_id)
        updated = current.model_copy(update={**given, "updated_at": utcnow()})
        vector, found = None, None
        if updated.content != current.content or updated.title != current.title:
            vectors, found = self._embed_memories([updated])
            vector = vectors[0]
        with self.store.transaction():  # the new text and its waiting extraction commit together
            self.store.update_memory(
                updated, vector, self.embedder.space if vector is not None else None, found
            )
            if vector is not None:
                self.store.mark_pending_extraction([memory_id])
        if vector is not None:
            self._extraction.schedule([memory_id])
        return updated

    def delete(self, memory_id: str) -> None:
        self.store.delete_memory(memory_id)

    def list(
        self,
        filters: MemoryFilter | Mapping[str, Any] | None = None,
        *,
        limit: int = 50,
        cursor: str | None = None,
    ) -> MemoryPage:
        """Memories newest first; pass `next_cursor` back to get the following page."""
        check_limit(limit)
        return self.store.list_memories(validate_filter(filters), limit=limit, cursor=cursor)

    def stats(self) -> StoreStats:
        return self.store.stats(self.embedder.space)

    # -- recall -----------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        limit: int = 10,
        filters: MemoryFilter | Mapping[str, Any] | None = None,
        explain: bool = False,
        recipe: str | RecallConfig | None = None,
        scope: RecallScope = "memories",
    ) -> RecallResult:
        """Hybrid recall: vector and BM25 candidates, scored by features, fused by a RecallConfig.
        `scope` docs searches the indexed documents' sections instead, all fuses both."""
        if not query or not query.strip():
            raise InvalidInput("query is empty")
        check_limit(limit)
        if scope != "memories":
            return self.recall_scoped(query, scope, limit=limit, filters=filters, explain=explain)
        config = (
            recipe
            if isinstance(recipe, RecallConfig)
            else get_recipe(recipe or self.settings.recall_recipe)
        )
        wanted = validate_filter(filters)
        search = self._rank(query, config, wanted)
        hits = hydrate(self.store, search.ranked[:limit], wanted, search.config, explain=explain)
        return self._recalled(search, hits, targeted=bool(filters))

    def _rank(self, query: str, config: RecallConfig, filters: MemoryFilter) -> Search:
        """Every candidate of hybrid recall scored, without reading their memories: multi-hop
        recall fuses a hundred of them and shows ten."""
        query_vector = None
        warnings: list[RecallWarning] = []
        degraded = False
        if config.needs_vectors:
            try:
                query_vector = self.embedder.embed_query(embedding_text(query, self.store.speakers))
            except EmbeddingError as exc:
                degraded = True
                message = f"embedding failed, keyword-only results: {exc.message}"
                warnings.append(RecallWarning(kind="degraded", message=message))
        space = self.embedder.space if query_vector is not None else None
        if space is not None:
            warnings += missing_vector_warnings(self.store, space)
        clues = None
        if config.w_answer > 0:
            from graphmem.graph.multihop import answer_clues

            clues = partial(answer_clues, self.store, query)
        ranked, scored_by = rank_candidates(
            self.store, query, query_vector, space, filters, config, clues=clues
        )
        return Search(query, ranked, scored_by, warnings, degraded, query_vector, space)

    def _recalled(self, search: Search, hits: Sequence[Hit], *, targeted: bool) -> RecallResult:
        """The hits shown, with their successors, the dead ends near them, and their use noted."""
        superseded = [h.memory.id for h in hits if h.memory.lifecycle == "superseded"]
        if superseded:
            successors = self.store.newest_successors(superseded)
            for hit in hits:
                hit.superseded_by = successors.get(hit.memory.id)
        warnings = search.warnings + dead_end_warnings(
            self.store, hits, search.vector, search.space
        )
        self._usage.note([h.memory.id for h in hits], targeted=targeted)
        return RecallResult(
            query=search.query,
            hits=[*hits],
            warnings=warnings,
            degraded=search.degraded,
            embedding_space=search.space.label if search.space else None,
        )

    # -- power tools ------------------------------------------------------------------------

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
        return take_backup(self.store, Path(dest))

    def export_page(
        self, cursor: str | None = None, *, limit: int = 1000, with_vectors: bool = False
    ) -> MemoryPage:
        """Every memory, archived ones included, oldest first, a page at a time (for export).
        With vectors, an import into a store of the same embedding space skips embedding."""
        check_limit(limit, most=10_000)
        page = self.store.export_page(cursor, limit=limit)
        if with_vectors:
            space = self.embedder.space
            row_ids, matrix = self.store.vectors(space)
            ids = [m.id for m in page.memories]
            page.embedding_space = space.label
            page.vectors = {
                i: vector_base64(matrix[row]) for i, row in row_ids.within(ids, len(matrix))
            }
            page.passages = {
                i: [vector_base64(row) for row in rows]
                for i, rows in self.store.passage_vectors(space, ids).items()
            }
        return page

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
        jobs = self._passage_jobs
        deferred = 0

        def flush() -> None:
            nonlocal imported, skipped, supplied, pending, load, given, deferred
            # a scan of the whole table for Kùzu (~0.4 s at 1M), so only when ids were given
            present = self.store.existing_ids(sorted(given)) if given else set()
            fresh, seen = [], set(present)  # a file may name an id twice: the first line wins
            for memory, brought in pending:
                if memory.id not in seen:
                    seen.add(memory.id)
                    fresh.append((memory, brought))
            skipped += len(pending) - len(fresh)
            if fresh:
                memories = [m for m, _ in fresh]
                lines_bring = [b for _, b in fresh]
                vectors, found = self._embed_memories(
                    memories, lines_bring, with_passages=jobs is None
                )
                supplied += sum(b.vector is not None for b in lines_bring)
                waiting = [
                    m.id
                    for m, b in fresh
                    if jobs is not None and b.passages is None and passages(m.content)
                ]
                # the rows that say they wait commit with the memories (graphmem.storage.pending)
                imported += self.store.insert_memories(
                    memories, vectors, self.embedder.space, found, deferred_passages=waiting
                )
                if waiting and jobs is not None:
                    jobs.submit(partial(self._passages_later, waiting))
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
        self.store.ensure_space(space)
        have = set(self.store.vector_ids(space))
        everything = self.store.all_memory_ids()
        todo = sorted(everything - have)
        # a memory with passages has "<id>#0"; one without may be a single sentence
        unsplit = self._missing_passages(everything)
        total = len(todo) + len(unsplit)
        for start in range(0, len(todo), batch_size):
            ids = todo[start : start + batch_size]
            memories = self.store.get_memories(ids)
            fresh = [memories[i] for i in ids if i in memories]
            if fresh:  # unless all were deleted since
                vectors, found = self._embed_memories(fresh)
                with self.store.transaction():
                    self.store.put_vectors(space, [m.id for m in fresh], vectors)
                    self.store.put_passages(space, *found)
            if on_progress:
                on_progress(start + len(ids), total)

        def progress(done: int, _: int) -> None:
            if on_progress:
                on_progress(len(todo) + done, total)

        given = self._fill_passages(unsplit, batch_size=batch_size, on_progress=progress)
        return ReembedReport(
            space=space.label,
            embedded=len(todo),
            passages=given,
            total=len(everything),
            seconds=round(time.perf_counter() - started, 3),
            resumed=bool(todo) and bool(have & everything),
        )


def open_store(
    path: str | Path | None = None,
    *,
    embedder: Embedder | None = None,
    **overrides: Any,
) -> GraphMemory:
    """Open (creating if needed) the store at `path`, or the project's default data dir."""
    settings = load_settings(path, overrides=overrides or None)
    return GraphMemory(settings, embedder=embedder)
