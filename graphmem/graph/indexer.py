"""From extractor output to graph rows: resolve each name to one entity (graph/resolution.py),
then write a batch of memories' entities, mentions and facts in one transaction.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from graphmem.graph.resolution import (
    DEFAULT_RULES,
    EmbedNames,
    EntityResolver,
    Resolution,
    ResolutionRules,
)
from graphmem.models import utcnow
from graphmem.storage.protocols import FactRow, Mention, Provenance, Store, compact_key, fact_id

if TYPE_CHECKING:
    from graphmem.extractors import Extraction, Extractor

__all__ = ["BatchResult", "EmbedNames", "TripleIndexer"]

_EXTRACTING = threading.Lock()  # spaCy pipelines are not safe to share between threads
# texts extracted between two pauses of background work: spaCy holds the interpreter lock for
# a few milliseconds a text, so a request waits for at most a slice of them
PAUSE_SLICE = 8


@dataclass
class BatchResult:
    memories: int = 0
    mentions: int = 0
    facts: int = 0
    errors: int = 0
    new_entities: list[str] = field(default_factory=list)


class TripleIndexer:
    def __init__(
        self,
        store: Store,
        extractor: Extractor,
        embed_names: EmbedNames | None,
        rules: ResolutionRules = DEFAULT_RULES,
        before_batch: Callable[[], object] | None = None,
    ) -> None:
        """`before_batch` runs before a batch's names are resolved and written: the project's
        glossary is applied then, when it changed (graph/glossary_ops.py)."""
        self.store = store
        self.extractor = extractor
        self.resolver = EntityResolver(store, embed_names, rules)
        self.before_batch = before_batch

    def extract(
        self, items: Sequence[tuple[str, str]], pause: Callable[[], None] | None = None
    ) -> tuple[list[Extraction], int]:
        """Run the extractor; returns the extractions and how many texts it failed on. With
        `pause` (background work), it runs `PAUSE_SLICE` texts at a time and calls `pause`
        between them."""
        texts = [text for _, text in items]
        step = len(texts) if pause is None else PAUSE_SLICE
        extractions: list[Extraction] = []
        errors = 0
        for start in range(0, len(texts), max(step, 1)):
            if pause is not None:
                pause()
            with _EXTRACTING:
                before = int(getattr(self.extractor, "errors", 0))
                extractions += self.extractor.extract(texts[start : start + step])
                errors += int(getattr(self.extractor, "errors", 0)) - before
        return extractions, errors

    def index(
        self,
        items: Sequence[tuple[str, str]],
        *,
        write: bool = True,
        chunks: bool = False,
        pause: Callable[[], None] | None = None,
    ) -> BatchResult:
        """Extract from (memory id, text) pairs and write the result; `write=False` only counts.
        With `chunks`, the ids are document chunks' and only their entities are kept: a fact
        in a document is not something anyone stated as knowledge. `pause`: see `extract`."""
        result = BatchResult(memories=len(items))
        if not items:
            return result
        extractions, result.errors = self.extract(items, pause)
        if write and self.before_batch is not None:
            self.before_batch()
        norms = [e.norm for x in extractions for e in x.entities if compact_key(e.norm)]
        resolved = self.resolve(norms, extractions)
        ids, new_rows, aliases = resolved.ids, resolved.rows, resolved.aliases
        mentions: dict[tuple[str, str], Mention] = {}
        facts: dict[str, FactRow] = {}
        provenance: dict[tuple[str, str], Provenance] = {}
        for (memory_id, _), extraction in zip(items, extractions, strict=True):
            names = {e.norm: e.name for e in extraction.entities}
            for norm, name in names.items():
                if norm in ids:
                    key = (memory_id, ids[norm])
                    mentions.setdefault(key, Mention(memory_id, ids[norm], name))
            for fact in () if chunks else extraction.facts:
                subject, obj = ids.get(fact.subject), ids.get(fact.object)
                if subject is None or obj is None or subject == obj:
                    continue
                fid = fact_id(subject, fact.predicate, obj)
                facts.setdefault(
                    fid,
                    FactRow(
                        fid, subject, fact.predicate, obj,
                        names.get(fact.subject, fact.subject), names.get(fact.object, fact.object),
                        fact.text, fact.confidence,
                    ),
                )  # fmt: skip
                provenance.setdefault((fid, memory_id), Provenance(fid, memory_id, fact.confidence))
        result.mentions, result.facts = len(mentions), len(provenance)
        result.new_entities = [row.id for row in new_rows]
        if write and chunks:
            self.store.documents.write_chunk_mentions(
                [chunk_id for chunk_id, _ in items],
                extractor=extractions[0].extractor if extractions else "none",
                entities=new_rows,
                aliases=aliases,
                mentions=list(mentions.values()),
                at=utcnow(),
            )
        elif write:
            self.store.entities.write_extraction(
                [memory_id for memory_id, _ in items],
                extractor=extractions[0].extractor if extractions else "none",
                entities=new_rows,
                aliases=aliases,
                mentions=list(mentions.values()),
                facts=list(facts.values()),
                provenance=list(provenance.values()),
                at=utcnow(),
            )
        return result

    def resolve(self, norms: Sequence[str], extractions: Sequence[Extraction]) -> Resolution:
        """norm -> entity id for every name; the entities to create; new aliases."""
        return self.resolver.resolve(norms, extractions)
