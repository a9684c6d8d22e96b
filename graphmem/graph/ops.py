"""GraphOps, the service of GraphMemory for the entity graph: the `index-triples` backfill,
entity listing and pages, a memory's neighbourhood, multi-hop recall. Extraction on write
lives in graph/background.py.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from graphmem.errors import InvalidInput, NotFound, check_limit
from graphmem.graph.models import (
    EntityFact,
    EntityInfo,
    EntityList,
    EntityPage,
    EntitySection,
    IndexReport,
    MemoryEntity,
    MemoryFact,
    MemoryGraph,
    MultiHopHit,
    MultiHopResult,
    Neighbour,
)
from graphmem.models import Hit, MemoryFilter, RecallWarning, validate_filter
from graphmem.recall.config import get_recipe
from graphmem.service_context import Service, ServiceContext

if TYPE_CHECKING:
    from graphmem.api import Filters
    from graphmem.knowledge.ops import KnowledgeOps
    from graphmem.memory_ops import MemoryOps

INDEX_CURSOR_KEY = "index_triples:cursor"
MAX_HOPS = 4
POOL = 100  # hybrid-recall hits fused with the walk (the walk adds the memories it reaches)


def backlog_warning(pending: int) -> RecallWarning:
    return RecallWarning(
        kind="backlog",
        message=f"{pending} memories are not in the entity graph yet (extraction is pending), "
        "so no walk reaches them: a running owner process works through them, or run "
        "`graphmem index-triples` (the `index_triples` tool)",
    )


def _label(title: str | None, content: str) -> str:
    text = title or content
    return text if len(text) <= 80 else text[:79] + "…"


class GraphOps(Service):
    def __init__(
        self, context: ServiceContext, memories: MemoryOps, knowledge: KnowledgeOps
    ) -> None:
        super().__init__(context)
        self._memories = memories
        self._knowledge = knowledge

    # -- extraction on write ----------------------------------------------------------------

    def schedule_pending_extraction(self) -> int:
        """Queue every memory still waiting for extraction (the owner does at start)."""
        return self.context.extraction.schedule_pending()

    def wait_for_extraction(self, timeout: float | None = None) -> bool:
        """Block until background extraction has caught up; False when `timeout` ran out."""
        return self.context.extraction.wait(timeout)

    # -- backfill -----------------------------------------------------------------------------

    def index_triples(
        self,
        *,
        limit: int | None = None,
        context: str | None = None,
        force: bool = False,
        resume: bool = False,
        dry_run: bool = False,
        batch_size: int = 256,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> IndexReport:
        """Extract entities and facts from memories not yet processed (all of them with `force`).

        Each batch is one transaction, so an interrupted run keeps what it did: run again to go
        on; a forced run records its position and `resume=True` continues from it."""
        if limit is not None and limit < 1:
            raise InvalidInput("limit must be at least 1", limit=limit)
        if not 1 <= batch_size <= 1024:
            raise InvalidInput("batch_size must be between 1 and 1024", batch_size=batch_size)
        if resume and not force:
            resume = False  # without force, every run already resumes: only pending ones are done
        total = self.store.entities.count_pending_extraction(context=context, include_done=force)
        after = (self.store.meta_get(INDEX_CURSOR_KEY) or None) if resume else None
        if force and after:
            total = max(total - self.store.entities.count_before(after, context=context), 0)
        if limit is not None:
            total = min(total, limit)
        indexer = self.context.extraction.indexer()
        started = time.perf_counter()
        done = mentions = facts = errors = 0
        while done < total:
            items = self.store.entities.pending_extraction(
                limit=min(batch_size, total - done),
                context=context,
                include_done=force,
                after=after,
            )
            if not items:
                break
            result = indexer.index(items, write=not dry_run)
            done += len(items)
            mentions += result.mentions
            facts += result.facts
            errors += result.errors
            after = items[-1][0]
            if force and not dry_run:
                self.store.meta_set(INDEX_CURSOR_KEY, after)
            if on_progress:
                on_progress(done, total)
        if force and not dry_run and (limit is None or done < limit):
            self.store.meta_set(INDEX_CURSOR_KEY, "")  # the pass reached the end
        chunks = 0
        while (
            not dry_run
            and context is None
            and (items := self.store.documents.pending_chunks(batch_size))
        ):
            mentions += indexer.index(items, chunks=True).mentions
            chunks += len(items)
        remaining = self.store.entities.count_pending_extraction(context=None, include_done=False)
        return IndexReport(
            extractor=getattr(indexer.extractor, "name", self.settings.extractor),
            memories=done,
            entities=mentions,
            facts=facts,
            seconds=round(time.perf_counter() - started, 3),
            remaining=remaining,
            dry_run=dry_run,
            errors=errors,
            chunks=chunks,
        )

    # -- entities -----------------------------------------------------------------------------

    def list_entities(
        self, query: str | None = None, *, label: str | None = None, limit: int = 50
    ) -> EntityList:
        """Entities, most mentioned first; `query` matches part of the name."""
        check_limit(limit)
        rows = self.store.entities.overview(query=query or None, label=label or None, limit=limit)
        return EntityList(
            entities=[
                EntityInfo(id=i, name=n, label=lab, mentions=m, facts=f, aliases=a, chunks=c)
                for i, n, lab, m, f, a, c in rows
            ],
            pending=self.store.memories.backlog()["extraction"],
        )

    def entity_page(self, entity_id: str, *, limit: int = 50) -> EntityPage:
        """One entity: its name, label and aliases, the memories that name it (newest first, up
        to `limit`) and the facts it is the subject or object of, each with the memories it came
        from."""
        check_limit(limit)
        row = self.store.entities.row(entity_id)
        if row is None:
            raise NotFound(f"no entity {entity_id!r}", entity_id=entity_id)
        index = self.store.entities.index()
        naming = index.memories_naming(entity_id)
        # newest first by the in-process columns: only the memories shown are read
        newest = self.store.memories.newest_of(naming, limit)
        read = self.store.memories.get_many(newest)
        found = [read[m] for m in newest if m in read]
        facts = index.facts_of(entity_id)[:limit]
        names = self.store.entities.names([e for s, _, o, _ in facts for e in (s, o)])
        sources = self.store.entities.fact_sources([fact for _, _, _, fact in facts])
        # times from the in-process columns: a thing named by thousands reads no memory
        stated = {m for ids in sources.values() for m in ids}
        written = {
            m: row.created_at
            for m, row in self.store.memories.scoring_rows([*naming, *stated]).items()
        }
        seen = [written[m] for m in naming if m in written]
        held = {  # a fact held from its oldest source to its newest
            fact: [written[m] for m in ids if m in written] for fact, ids in sources.items()
        }

        return EntityPage(
            first_seen=min(seen, default=None),
            last_seen=max(seen, default=None),
            sections=self._sections_naming(entity_id, limit),
            id=entity_id,
            name=row["name"],
            label=row["label"],
            aliases=row["aliases"],
            mentions=len(naming),
            memories=[
                Neighbour(
                    id=m.id,
                    label=_label(m.title, m.content),
                    kind=m.kind,
                    lifecycle=m.lifecycle,
                    relation="mentions",
                    via=row["name"],
                )
                for m in found
            ],
            facts=[
                EntityFact(
                    id=fact,
                    subject_id=subject,
                    subject=names.get(subject, (subject,))[0],
                    predicate=predicate,
                    object_id=obj,
                    object=names.get(obj, (obj,))[0],
                    sources=sources.get(fact, []),
                    first_stated=min(held.get(fact, []), default=None),
                    last_stated=max(held.get(fact, []), default=None),
                )
                for subject, predicate, obj, fact in facts
            ],
        )

    def _sections_naming(self, entity_id: str, limit: int) -> list[EntitySection]:
        """The document sections whose chunks name the entity, each once, in the order found."""
        chunks = self.store.documents.chunks_mentioning([entity_id], limit=limit)
        if not chunks:
            return []
        index = self.store.documents.index()
        keys = dict.fromkeys(
            chunk.section for _, c in chunks if (chunk := index.chunks.get(c)) is not None
        )
        out = []
        for key in keys:
            section = index.sections[key]
            out.append(
                EntitySection(
                    path=index.docs[section.doc].rel, heading=section.title,
                    breadcrumb=list(section.breadcrumb),
                )
            )  # fmt: skip
        return out

    def memory_graph(self, memory_id: str, *, limit: int = 12) -> MemoryGraph:
        """What the graph holds around one memory: the files it cites (and whether they
        changed), the entities it names, the facts it states, and up to `limit` neighbours:
        its versions, merges and dead ends, then memories naming its rarest entities."""
        check_limit(limit)
        self.store.memories.get(memory_id)  # NotFound for an unknown id
        entities = [
            MemoryEntity(id=i, name=n, label=lab, mentioned_as=w)
            for i, n, lab, w in self.store.entities.of_memory(memory_id)
        ]
        neighbours: dict[str, Neighbour] = {}
        for (
            relation,
            other,
            title,
            content,
            kind,
            lifecycle,
        ) in self.store.knowledge.linked_memories(memory_id):
            neighbours.setdefault(
                other, Neighbour(id=other, label=_label(title, content), kind=kind,
                                 lifecycle=lifecycle, relation=relation)
            )  # fmt: skip
        index = self.store.entities.index()
        degrees = index.degrees(e.id for e in entities)
        naming: dict[str, str] = {}  # another memory -> the rarest entity both name
        wanted = 2 * max(limit - len(neighbours), 0)  # archived ones are left out below
        for entity in sorted(entities, key=lambda e: (degrees.get(e.id, 0), e.name)):
            for other in index.memories_naming(entity.id)[: limit + 1]:
                if other != memory_id and len(naming) < wanted:
                    naming.setdefault(other, entity.name)
        found = self.store.memories.get_many([m for m in naming if m not in neighbours])
        for other, via in naming.items():
            memory = found.get(other)
            if memory is not None and memory.lifecycle in ("active", "canonical"):
                neighbours.setdefault(
                    other, Neighbour(id=other, label=_label(memory.title, memory.content),
                                     kind=memory.kind, lifecycle=memory.lifecycle,
                                     relation="mentions", via=via),
                )  # fmt: skip
        return MemoryGraph(
            memory_id=memory_id,
            citations=self._knowledge.citation_states(memory_id),
            entities=entities,
            facts=[
                MemoryFact(id=i, subject=s, predicate=p, object=o, text=t, confidence=c)
                for i, s, p, o, t, c in self.store.entities.facts_of_memory(memory_id)
            ],
            neighbours=list(neighbours.values())[:limit],
        )

    # -- multi-hop recall ---------------------------------------------------------------------

    def recall_multihop(
        self,
        query: str,
        *,
        max_hops: int = 2,
        seed_k: int = 3,
        limit: int = 10,
        filters: Filters = None,
        damping: float = 0.85,
        graph_weight: float = 0.8,
        answer_weight: float = 0.3,
    ) -> MultiHopResult:
        """Seeds from hybrid recall, a walk over their entities, facts, supersession and session
        neighbours, personalised PageRank over what it reached, and the answer hop's clues (the
        question's people beside the kind of thing it asks for), fused with the recall scores;
        each hit carries the path that reached it.

        What the walk reaches that recall missed can pass recall's weaker hits (graph_weight
        0.8, multihop.fuse), except for a question about someone who speaks in the store's
        conversations (answer_hop.speaker_share). Three seeds, not five: recall's fourth and fifth
        hits are then ranked as the walk finds them, not kept by recall's score alone (passage
        R@5 of 2WikiMultihopQA 76.5 -> 78.4, MuSiQue 64.3 -> 69.3)."""
        from graphmem.graph import answer_hop, multihop

        check_limit(limit)
        if not 0 <= max_hops <= MAX_HOPS:
            raise InvalidInput(f"max_hops must be between 0 and {MAX_HOPS}", max_hops=max_hops)
        if not 1 <= seed_k <= 100:
            raise InvalidInput("seed_k must be between 1 and 100", seed_k=seed_k)
        if not 0.0 < damping < 1.0:
            raise InvalidInput("damping must be between 0 and 1", damping=damping)
        if not 0.0 <= graph_weight <= 10.0:
            raise InvalidInput("graph_weight must be between 0 and 10", graph_weight=graph_weight)
        if not 0.0 <= answer_weight <= 10.0:
            raise InvalidInput(
                "answer_weight must be between 0 and 10", answer_weight=answer_weight
            )
        # the answer hop's clues are fused below, with their paths: recall leaves them out
        plain = get_recipe(self.settings.recall_recipe).model_copy(update={"w_answer": 0.0})
        wanted = validate_filter(filters)
        search = self._memories.rank(query, plain, wanted)
        # recall's scores as its hits carry them; its memories are read only for the hits shown
        recalled = {
            cand.memory_id: round(score, 6)
            for cand, score in search.ranked[: max(POOL, limit, seed_k)]
        }
        pending = self.store.memories.backlog()["extraction"]
        if pending:
            search.warnings.append(backlog_warning(pending))
        if not recalled:
            return MultiHopResult(query=query, warnings=search.warnings)
        seeds = dict(itertools.islice(recalled.items(), seed_k))
        sub = multihop.gather(self.store, list(seeds), max_hops=max_hops)
        walked = multihop.rank(sub, seeds, damping=damping)
        clues = answer_hop.answer_hop(self.store, query, sub, list(recalled)) if max_hops else {}
        weight = graph_weight * answer_hop.speaker_share(self.store, query)
        scores = multihop.fuse(recalled, walked, set(seeds), weight, clues, answer_weight)
        reached = [m for m in scores if m not in recalled]
        allowed = set(recalled) | self._allowed(wanted, reached)
        top = [m for m in sorted(scores, key=lambda m: -scores[m]) if m in allowed][:limit]
        paths = multihop.trace(sub, list(seeds), top)
        on_paths = {n[2:] for nodes in paths.values() for n in nodes if n[:2] == "m:"}
        memories = self.store.memories.get_many(sorted(on_paths | set(top)))
        shown = [Hit(memory=memories[m], score=round(scores[m], 6)) for m in top if m in memories]
        result = self._memories.recalled(search, shown, targeted=bool(filters))
        hits = []
        for hit in shown:
            memory_id = hit.memory.id
            nodes = paths.get(memory_id)
            steps = multihop.render(sub, nodes, memories) if nodes else []
            hits.append(
                MultiHopHit(
                    memory=hit.memory,
                    score=hit.score,
                    superseded_by=hit.superseded_by,
                    seed=memory_id in seeds,
                    hops=sum(n[:2] == "m:" for n in nodes[1:]) if nodes else None,
                    path=steps,
                    nodes=multihop.path_nodes(sub, nodes, memories) if nodes else [],
                    path_text=multihop.path_text(steps),
                )
            )
        from graphmem.graph.doc_hops import linked_sections

        labels = {h.memory.id: (h.score, multihop.label(h.memory)) for h in hits}
        return MultiHopResult(
            query=query,
            hits=hits,
            sections=linked_sections(self.store, labels, limit=limit),
            warnings=result.warnings,
            subgraph={
                "memories": len(sub.memories),
                "entities": sub.entity_count,
                "edges": len(sub.graph),
            },
        )

    def _allowed(self, wanted: MemoryFilter, memory_ids: Sequence[str]) -> set[str]:
        """The walk may pass through any memory; the hits obey the caller's filters (and, as
        recall's do, leave archived memories out unless asked)."""
        if wanted.is_empty() and not self.store.memories.has_archived():
            return set(memory_ids)
        return set(self.store.memories.scoring_rows(memory_ids, wanted))
