"""MemoryOps, the service of GraphMemory that stores, reads, changes and recalls memories.

It validates input with the models, embeds outside the write lock, and hands every read and write to
the storage layer, so transports never see Cypher and the store never sees unvalidated input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import ValidationError

from graphmem.documents.ops import DocumentOps
from graphmem.errors import (
    Conflict,
    EmbeddingError,
    InvalidInput,
    check_limit,
    item_error,
    validation_message,
)
from graphmem.idempotency import StoreKey, repeated_stores, store_key
from graphmem.imported import Supplied, new_memory
from graphmem.models import (
    Hit,
    Memory,
    MemoryFilter,
    MemoryInput,
    MemoryPage,
    MemoryPatch,
    RecallResult,
    RecallScope,
    RecallWarning,
    ScopedHit,
    StoredMemory,
    StoreStats,
    utcnow,
    validate_filter,
    validated,
    validated_items,
)
from graphmem.passages import passage_ids, passages_of
from graphmem.recall.config import RecallConfig, get_recipe
from graphmem.recall.pipeline import Search, hydrate
from graphmem.recall.pipeline import rank as rank_candidates
from graphmem.recall.query import embedding_text
from graphmem.recall.warnings import dead_end_warnings, missing_vector_warnings
from graphmem.service_context import Service, ServiceContext
from graphmem.storage.protocols import PassageVectors

Progress = Callable[[int, int], None]
Filters = MemoryFilter | Mapping[str, Any] | None
RRF_K = 60  # reciprocal rank fusion's usual constant


def validate_input(item: MemoryInput | Mapping[str, Any]) -> MemoryInput:
    return validated(MemoryInput, item)


def _rrf(rank: int) -> float:
    return round(1 / (RRF_K + rank + 1), 6)


class MemoryOps(Service):
    """Memories one at a time or in batches, and hybrid recall over them (and, by scope, over
    the documents' sections)."""

    def __init__(self, context: ServiceContext, documents: DocumentOps) -> None:
        super().__init__(context)
        self._documents = documents

    def embed_memories(
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
        self.store.vectors.ensure_space(space)
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

    def remember(self, /, content: str, **fields: Any) -> StoredMemory:
        """Store one memory; returns it with its id. Raises InvalidInput before writing anything."""
        return self._store_inputs([validate_input({"content": content, **fields})])[0]

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
        return self._store_inputs(
            validated_items(MemoryInput, items),
            batch_size=batch_size,
            on_progress=on_progress,
            batch=True,
        )

    def _store_inputs(
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
        repeats = self._repeats(keys, batch=batch)
        fresh = [i for i in range(len(inputs)) if i not in repeats]
        out: dict[int, StoredMemory] = {}
        for start in range(0, len(fresh), batch_size):
            chosen = fresh[start : start + batch_size]
            try:
                stored = self._insert(inputs, keys, chosen)
            except Conflict:
                # another process stored under one of these keys since they were read (the
                # nodes of a server store race in the server, and one commit fails whole): what
                # it stored answers those inputs, as it would a retry; the rest go in again
                won = self._repeats(keys, batch=batch, among=chosen)
                if not won:
                    raise
                repeats.update(won)
                chosen = [i for i in chosen if i not in won]
                stored = self._insert(inputs, keys, chosen)
            out.update(zip(chosen, stored, strict=True))
            if on_progress:
                on_progress(len(out), len(inputs))
        earlier = self.store.memories.get_many([r for r in repeats.values() if isinstance(r, str)])
        for i, repeated in repeats.items():
            first = out[repeated] if isinstance(repeated, int) else earlier[repeated]
            out[i] = StoredMemory.model_validate({**first.model_dump(), "deduplicated": True})
        return [out[i] for i in range(len(inputs))]

    def _repeats(
        self, keys: list[StoreKey | None], *, batch: bool, among: Sequence[int] | None = None
    ) -> dict[int, str | int]:
        """Which inputs (of `among`, or all) repeat a store, read from the store now."""
        chosen = range(len(keys)) if among is None else among
        named = [k.key for i in chosen if (k := keys[i]) is not None]
        try:
            found = repeated_stores(keys, self.store.memories.stored_by_keys(named, now=utcnow()))
        except Conflict as exc:
            index = exc.fields.pop("index", 0)
            if not batch:
                raise
            raise item_error(exc, index) from exc
        return {i: r for i, r in found.items() if among is None or i in among}

    def _insert(
        self, inputs: list[MemoryInput], keys: list[StoreKey | None], chosen: list[int]
    ) -> list[StoredMemory]:
        """The chosen inputs as new memories, in one transaction, their extraction queued."""
        memories = [new_memory(StoredMemory, inputs[i]) for i in chosen]
        if not memories:
            return memories
        vectors, found = self.embed_memories(memories)
        with_keys = [(key, m.id) for i, m in zip(chosen, memories, strict=True) if (key := keys[i])]
        self.store.memories.insert(memories, vectors, self.embedder.space, found, keys=with_keys)
        self.context.extraction.schedule([m.id for m in memories])
        return memories

    @staticmethod
    def _embedding_text(memory: Memory) -> str:
        return f"{memory.title}\n{memory.content}" if memory.title else memory.content

    def get(self, memory_id: str) -> Memory:
        memory = self.store.memories.get(memory_id)
        self.context.usage.note([memory_id], targeted=True)
        return memory

    def update(self, /, memory_id: str, **changes: Any) -> Memory:
        """Change fields of a memory; a content or title change re-embeds it."""
        try:
            patch = MemoryPatch.model_validate(changes)
        except ValidationError as exc:
            raise InvalidInput(validation_message(exc)) from exc
        given = patch.model_dump(exclude_unset=True, exclude_none=True)
        if not given:
            raise InvalidInput("nothing to update: give at least one field to change")
        current = self.store.memories.get(memory_id)
        updated = current.model_copy(update={**given, "updated_at": utcnow()})
        vector, found = None, None
        if updated.content != current.content or updated.title != current.title:
            vectors, found = self.embed_memories([updated])
            vector = vectors[0]
        with self.store.transaction():  # the new text and its waiting extraction commit together
            self.store.memories.update(
                updated, vector, self.embedder.space if vector is not None else None, found
            )
            if vector is not None:
                self.store.entities.mark_pending_extraction([memory_id])
        if vector is not None:
            self.context.extraction.schedule([memory_id])
        return updated

    def delete(self, memory_id: str) -> None:
        self.store.memories.delete(memory_id)

    def list(
        self,
        filters: MemoryFilter | Mapping[str, Any] | None = None,
        *,
        limit: int = 50,
        cursor: str | None = None,
    ) -> MemoryPage:
        """Memories newest first; pass `next_cursor` back to get the following page."""
        check_limit(limit)
        return self.store.memories.page(validate_filter(filters), limit=limit, cursor=cursor)

    def stats(self) -> StoreStats:
        return self.store.memories.stats(self.embedder.space)

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
        search = self.rank(query, config, wanted)
        hits = hydrate(self.store, search.ranked[:limit], wanted, search.config, explain=explain)
        return self.recalled(search, hits, targeted=bool(filters))

    def rank(self, query: str, config: RecallConfig, filters: MemoryFilter) -> Search:
        """Every candidate of hybrid recall scored, without reading their memories: multi-hop
        recall fuses a hundred of them and shows ten."""
        query_vector = None
        warnings: list[RecallWarning] = []
        degraded = False
        if config.needs_vectors:
            try:
                query_vector = self.embedder.embed_query(
                    embedding_text(query, self.store.memories.speakers)
                )
            except EmbeddingError as exc:
                degraded = True
                message = f"embedding failed, keyword-only results: {exc.message}"
                warnings.append(RecallWarning(kind="degraded", message=message))
        space = self.embedder.space if query_vector is not None else None
        if space is not None:
            warnings += missing_vector_warnings(self.store, space)
        clues = None
        if config.w_answer > 0:
            from graphmem.graph.answer_hop import answer_clues

            clues = partial(answer_clues, self.store, query)
        ranked, scored_by = rank_candidates(
            self.store, query, query_vector, space, filters, config, clues=clues
        )
        return Search(query, ranked, scored_by, warnings, degraded, query_vector, space)

    def recalled(self, search: Search, hits: Sequence[Hit], *, targeted: bool) -> RecallResult:
        """The hits shown, with their successors, the dead ends near them, and their use noted."""
        superseded = [h.memory.id for h in hits if h.memory.lifecycle == "superseded"]
        if superseded:
            successors = self.store.knowledge.newest_successors(superseded)
            for hit in hits:
                hit.superseded_by = successors.get(hit.memory.id)
        warnings = search.warnings + dead_end_warnings(
            self.store, hits, search.query, search.vector, search.space, self.context.relevance
        )
        self.context.usage.note([h.memory.id for h in hits], targeted=targeted)
        return RecallResult(
            query=search.query,
            hits=[*hits],
            warnings=warnings,
            degraded=search.degraded,
            embedding_space=search.space.label if search.space else None,
        )

    def recall_scoped(
        self,
        query: str,
        scope: str,
        *,
        limit: int,
        filters: Filters,
        explain: bool,
    ) -> RecallResult:
        """Recall over the documents' sections (`docs`), or over memories and sections fused in
        one ranking (`all`) by reciprocal rank: the two lists' scores are not on one scale."""
        if scope not in ("docs", "all"):
            raise InvalidInput("scope must be memories, docs or all", scope=scope)
        found = self._documents.search_docs(query, limit=limit, explain=explain)
        warnings = [RecallWarning(kind="degraded", message=w) for w in found.warnings]
        if scope == "docs":
            return RecallResult(
                query=query, scope="docs", sections=found.hits, warnings=warnings,
                degraded=found.degraded, embedding_space=found.embedding_space,
            )  # fmt: skip
        memories = self.recall(query, limit=limit, filters=filters, explain=explain)
        ranking = sorted(
            [
                *(
                    ScopedHit(source="memory", score=_rrf(rank), memory=hit)
                    for rank, hit in enumerate(memories.hits)
                ),
                *(
                    ScopedHit(source="section", score=_rrf(rank), section=hit)
                    for rank, hit in enumerate(found.hits)
                ),
            ],
            key=lambda h: -h.score,
        )[:limit]
        return RecallResult(
            query=query,
            scope="all",
            hits=[h.memory for h in ranking if h.memory is not None],
            sections=[h.section for h in ranking if h.section is not None],
            ranking=ranking,
            warnings=memories.warnings + warnings,
            degraded=memories.degraded or found.degraded,
            embedding_space=memories.embedding_space,
        )
