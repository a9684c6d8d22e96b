"""GraphMemory: the one facade that the CLI, the MCP server, the daemon and hooks call.

It validates input with the models, embeds outside the write lock, and hands every read and write to
the storage layer, so transports never see Cypher and the store never sees unvalidated input.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import ValidationError

from graphmem.embeddings.base import Embedder, EmbeddingSpace
from graphmem.embeddings.factory import make_embedder
from graphmem.errors import EmbeddingError, InvalidInput, check_limit, validation_message
from graphmem.graph.background import Extraction
from graphmem.graph.ops import GraphOps
from graphmem.ids import new_id
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
    RecallWarning,
    ReembedReport,
    StoreStats,
    parse_time,
    utcnow,
    validate_filter,
    validated,
)
from graphmem.passages import MAX_PASSAGES, owner, passage_ids, passages
from graphmem.recall.config import RecallConfig, get_recipe
from graphmem.recall.pipeline import recall as run_recall
from graphmem.recall.query import embedding_text
from graphmem.recall.warnings import dead_end_warnings
from graphmem.settings import Settings, load_settings
from graphmem.storage.backup import take_backup
from graphmem.storage.store import KuzuStore
from graphmem.storage.vectors import PassageVectors, saved_space_names

Progress = Callable[[int, int], None]
SUPPLIED_WEIGHT = 1 / 16  # of an imported line that brings its vector, against one to embed


def validate_input(item: MemoryInput | Mapping[str, Any]) -> MemoryInput:
    return validated(MemoryInput, item)


def _warm(embedder: Embedder) -> None:
    """Load a model ahead of use. A failure is left for the first real use to raise."""
    load = getattr(embedder, "load", None)
    if load is not None:
        with contextlib.suppress(Exception):
            load()


class GraphMemory(KnowledgeOps, GraphOps):
    """A memory store: typed memories in a Kùzu graph, recalled by meaning and by exact words."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        extract_in_background: bool = True,
        warm_embedder: bool = False,
    ) -> None:
        """`extract_in_background=False` leaves new memories pending for a later backfill: a
        one-shot command should not wait for a model to load before it exits.
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
            threading.Thread(target=_warm, args=(self._embedder,), daemon=True).start()
        self.store = KuzuStore.open(settings.home, lock_timeout=settings.lock_timeout)
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
        self._extraction.stop()
        self.store.close()

    def __enter__(self) -> GraphMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- memories ---------------------------------------------------------------------------

    def _embed_memories(
        self, memories: Sequence[Memory], given: Sequence[Supplied] | None = None
    ) -> tuple[npt.NDArray[np.float32], PassageVectors]:
        """The memories' vectors and their passages' (graphmem.passages), from one embedder
        call; what `given` brings (an import's vector, and its passages') is not embedded."""
        supplied = given or [Supplied()] * len(memories)
        missing = [i for i, s in enumerate(supplied) if s.vector is None]
        ids, pieces = _passages_of(
            m for m, s in zip(memories, supplied, strict=True) if s.passages is None
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

    def remember(self, content: str, **fields: Any) -> Memory:
        """Store one memory; returns it with its id. Raises InvalidInput before writing anything."""
        return self.remember_many([{"content": content, **fields}])[0]

    def remember_many(
        self,
        items: Iterable[MemoryInput | Mapping[str, Any]],
        *,
        batch_size: int = 256,
        on_progress: Progress | None = None,
    ) -> list[Memory]:
        """Store many memories in batches: one embedding call and one transaction per batch."""
        inputs = [validate_input(item) for item in items]
        stored: list[Memory] = []
        for start in range(0, len(inputs), batch_size):
            batch = inputs[start : start + batch_size]
            memories = [self._new_memory(item) for item in batch]
            vectors, found = self._embed_memories(memories)
            self.store.insert_memories(memories, vectors, self.embedder.space, found)
            stored.extend(memories)
            self._extraction.schedule([m.id for m in memories])
            if on_progress:
                on_progress(len(stored), len(inputs))
        return stored

    @staticmethod
    def _new_memory(item: MemoryInput, kept: Mapping[str, Any] | None = None) -> Memory:
        """`kept`: fields an import carries over (id, dates, lifecycle), validated together
        with the rest, so a line costs one validation."""
        now = utcnow()
        created = item.created_at or now
        values = {
            "created_at": created,
            "updated_at": now,
            "valid_from": item.valid_from or created,
            **item.model_dump(exclude={"created_at", "valid_from"}),
            **(kept or {}),
        }
        if "id" not in values:
            values["id"] = new_id(created)
        return Memory.model_validate(values)

    @staticmethod
    def _embedding_text(memory: Memory) -> str:
        return f"{memory.title}\n{memory.content}" if memory.title else memory.content

    def get(self, memory_id: str) -> Memory:
        return self.store.get_memory(memory_id)

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
        self.store.update_memory(
            updated, vector, self.embedder.space if vector is not None else None, found
        )
        if vector is not None:
            self.store.mark_pending_extraction([memory_id])
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
    ) -> RecallResult:
        """Hybrid recall: vector and BM25 candidates, scored by features, fused by a RecallConfig."""
        if not query or not query.strip():
            raise InvalidInput("query is empty")
        check_limit(limit)
        config = (
            recipe
            if isinstance(recipe, RecallConfig)
            else get_recipe(recipe or self.settings.recall_recipe)
        )
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
            missing = self.store.memory_count() - len(self.store.vector_ids(space))
            if missing > 0:
                message = (
                    f"{missing} memories have no vector in {space.label} and can only be found "
                    "by keyword; run `graphmem reembed` to embed them"
                )
                warnings.append(RecallWarning(kind="missing_vectors", message=message))
        clues = None
        if config.w_answer > 0:
            from graphmem.graph.multihop import answer_clues

            clues = partial(answer_clues, self.store, query)
        hits: list[Hit] = run_recall(
            self.store,
            query,
            query_vector,
            space,
            validate_filter(filters),
            config,
            limit=limit,
            explain=explain,
            clues=clues,
        )
        superseded = [h.memory.id for h in hits if h.memory.lifecycle == "superseded"]
        if superseded:
            successors = self.store.newest_successors(superseded)
            for hit in hits:
                hit.superseded_by = successors.get(hit.memory.id)
        warnings += dead_end_warnings(self.store, hits, query_vector, space)
        return RecallResult(
            query=query,
            hits=hits,
            warnings=warnings,
            degraded=degraded,
            embedding_space=space.label if space else None,
        )

    # -- power tools ------------------------------------------------------------------------

    def cypher(
        self, query: str, params: Mapping[str, Any] | None = None, *, write: bool = False
    ) -> CypherResult:
        """Run Cypher; read-only unless `write=True`."""
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
            page.vectors = {i: _base64(matrix[row]) for i, row in row_ids.within(ids, len(matrix))}
            page.passages = {
                i: [_base64(row) for row in rows]
                for i, rows in self.store.passage_vectors(space, ids).items()
            }
        return page

    def import_jsonl(
        self,
        lines: Iterable[str],
        *,
        on_error: str = "continue",
        batch_size: int = 2048,
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

        def flush() -> None:
            nonlocal imported, skipped, supplied, pending, load, given
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
                vectors, found = self._embed_memories(memories, [b for _, b in fresh])
                supplied += sum(b.vector is not None for _, b in fresh)
                imported += self.store.insert_memories(
                    memories, vectors, self.embedder.space, found
                )
            pending, load, given = [], 0.0, set()

        for lineno, line in enumerate(lines, start=first_line):
            if not line.strip():
                continue
            try:
                memory, brought, has_id = _memory_from_json(line, self.embedder.space)
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
        unsplit = sorted((everything & have) - self.store.passage_owners(space))
        given = 0
        work = todo + unsplit
        for start in range(0, len(work), batch_size):
            ids = work[start : start + batch_size]
            memories = self.store.get_memories(ids)
            batch = [memories[i] for i in ids if i in memories]
            fresh = [m for m in batch if m.id not in have]
            vectors, found = self._embed_memories(fresh)
            old_ids, pieces = _passages_of([m for m in batch if m.id in have])
            given += len({owner(i) for i in old_ids})
            with self.store.transaction():
                if fresh:
                    self.store.put_vectors(space, [m.id for m in fresh], vectors)
                    self.store.put_passages(space, *found)
                if pieces:
                    self.store.put_passages(space, old_ids, self.embedder.embed(pieces))
            if on_progress:
                on_progress(start + len(ids), len(work))
        return ReembedReport(
            space=space.label,
            embedded=len(todo),
            passages=given,
            total=len(everything),
            seconds=round(time.perf_counter() - started, 3),
            resumed=bool(todo) and bool(have & everything),
        )


def _passages_of(memories: Iterable[Memory]) -> tuple[list[str], list[str]]:
    """(passage ids, passage texts) of the memories, in order."""
    ids: list[str] = []
    texts: list[str] = []
    for memory in memories:
        found = passages(memory.content)
        ids += passage_ids(memory.id, len(found))
        texts += found
    return ids, texts


_KEPT_ON_IMPORT = (
    "id", "updated_at", "valid_to", "lifecycle", "confidence", "owner", "verified_at", "verify_status",
)  # fmt: skip


@dataclass(frozen=True)
class Supplied:
    """What an imported line brings of its embedding: its vector, its passages' vectors."""

    vector: npt.NDArray[np.float32] | None = None
    passages: npt.NDArray[np.float32] | None = None

    def complete(self, memory: Memory) -> bool:
        """Nothing of the memory is left to embed."""
        return self.vector is not None and (
            self.passages is not None or not passages(memory.content)
        )


def _memory_from_json(line: str, space: EmbeddingSpace) -> tuple[Memory, Supplied, bool]:
    """One exported memory, validated like a new one; its id, dates and lifecycle are kept.
    The flag says whether the line named the id.

    A `vector` (and `passages`) is used as the memory's embedding only when `embedding_space`
    names the store's active space: vectors of another model would be compared with this one's
    and mislead recall, so such a memory is embedded again instead."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"not JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise InvalidInput("not a JSON object")
    label = data.pop("embedding_space", None)
    vector = _supplied_vector(data.pop("vector", None), label, space)
    brought = Supplied(vector, _supplied_passages(data.pop("passages", None), label, space))
    kept = {k: data.pop(k) for k in _KEPT_ON_IMPORT if k in data}
    item = validate_input(data)
    try:
        for key in ("updated_at", "valid_to", "verified_at"):
            if key in kept:
                kept[key] = parse_time(kept[key])
        if kept and kept.get("updated_at") is None:
            kept["updated_at"] = item.created_at or utcnow()
        return GraphMemory._new_memory(item, kept), brought, "id" in kept
    except (ValidationError, ValueError) as exc:
        message = validation_message(exc) if isinstance(exc, ValidationError) else str(exc)
        raise InvalidInput(message) from exc


def _supplied_vector(
    vector: Any, label: Any, space: EmbeddingSpace
) -> npt.NDArray[np.float32] | None:
    if vector is None:
        return None
    if label is None:
        raise InvalidInput(f"a vector needs its embedding_space (this store uses {space.label!r})")
    if label != space.label:
        return None
    try:
        if isinstance(vector, str):  # base64 of little-endian float32: 4x faster to parse
            array = np.frombuffer(base64.b64decode(vector, validate=True), dtype="<f4")
        else:
            array = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(
            "vector must be a list of numbers or base64 of little-endian float32"
        ) from exc
    norm = math.sqrt(float(array @ array)) if array.shape == (space.dim,) else math.nan
    if not math.isfinite(norm):  # a NaN or an infinity anywhere makes the norm one too
        raise InvalidInput(f"vector must be {space.dim} finite numbers for {space.label}")
    if norm == 0:
        raise InvalidInput("vector must not be all zeros")
    return array * np.float32(1 / norm)


def _supplied_passages(
    rows: Any, label: Any, space: EmbeddingSpace
) -> npt.NDArray[np.float32] | None:
    if rows is None:
        return None
    if not isinstance(rows, list) or len(rows) > MAX_PASSAGES:
        raise InvalidInput(f"passages must be a list of at most {MAX_PASSAGES} vectors")
    found = [_supplied_vector(row, label, space) for row in rows]
    if any(row is None for row in found):  # another space: embedded again
        return None
    return np.array(found, np.float32).reshape(len(found), space.dim)


def _base64(vector: npt.NDArray[np.float32]) -> str:
    return base64.b64encode(vector.astype("<f4").tobytes()).decode()


def open_store(
    path: str | Path | None = None,
    *,
    embedder: Embedder | None = None,
    **overrides: Any,
) -> GraphMemory:
    """Open (creating if needed) the store at `path`, or the project's default data dir."""
    settings = load_settings(path, overrides=overrides or None)
    return GraphMemory(settings, embedder=embedder)
