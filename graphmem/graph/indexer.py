"""From extractor output to graph rows: resolve each name to one entity, then write a batch of
memories' entities, mentions and facts in one transaction.

Resolution, cheapest first: a name merged before (EntityAlias), an entity with that exact
normalised name, then an entity spelt the same once punctuation and spaces are dropped
("billing-service", "billing service") whose name also means the same to the embedder. The
normaliser already folded case and plurals ("JWT", "jwt", "JWTs").
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from graphmem.models import utcnow
from graphmem.storage.entities import (
    EntityRow,
    FactRow,
    Mention,
    Provenance,
    compact_key,
    fact_id,
)
from graphmem.storage.store import KuzuStore

if TYPE_CHECKING:
    from graphmem.extractors import ExtractedEntity, Extraction, Extractor

EmbedNames = Callable[[list[str]], npt.NDArray[np.float32]]
SAME_MEANING = 0.8  # cosine of two names that the string key says are the same entity
_EXTRACTING = threading.Lock()  # spaCy pipelines are not safe to share between threads


@dataclass
class BatchResult:
    memories: int = 0
    mentions: int = 0
    facts: int = 0
    errors: int = 0
    new_entities: list[str] = field(default_factory=list)


class TripleIndexer:
    def __init__(self, store: KuzuStore, extractor: Extractor, embed_names: EmbedNames | None):
        self.store = store
        self.extractor = extractor
        self.embed_names = embed_names

    def extract(self, items: Sequence[tuple[str, str]]) -> tuple[list[Extraction], int]:
        """Run the extractor; returns the extractions and how many texts it failed on."""
        with _EXTRACTING:
            before = int(getattr(self.extractor, "errors", 0))
            extractions = self.extractor.extract([text for _, text in items])
            return extractions, int(getattr(self.extractor, "errors", 0)) - before

    def index(
        self, items: Sequence[tuple[str, str]], *, write: bool = True, chunks: bool = False
    ) -> BatchResult:
        """Extract from (memory id, text) pairs and write the result; `write=False` only counts.
        With `chunks`, the ids are document chunks' and only their entities are kept: a fact
        in a document is not something anyone stated as knowledge."""
        result = BatchResult(memories=len(items))
        if not items:
            return result
        extractions, result.errors = self.extract(items)
        norms = [e.norm for x in extractions for e in x.entities if compact_key(e.norm)]
        ids, new_rows, aliases = self.resolve(norms, extractions)
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
            self.store.write_chunk_mentions(
                [chunk_id for chunk_id, _ in items],
                extractor=extractions[0].extractor if extractions else "none",
                entities=new_rows,
                aliases=aliases,
                mentions=list(mentions.values()),
                at=utcnow(),
            )
        elif write:
            self.store.write_extraction(
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

    def resolve(
        self, norms: Sequence[str], extractions: Sequence[Extraction]
    ) -> tuple[dict[str, str], list[EntityRow], dict[str, str]]:
        """norm -> entity id for every name; the entities to create; new aliases (norm -> id)."""
        ids = self.store.resolve_norms(norms)
        firsts: dict[str, ExtractedEntity] = {}  # the first form and label of each new norm
        for extraction in extractions:
            for entity in extraction.entities:
                if entity.norm not in ids and compact_key(entity.norm):
                    firsts.setdefault(entity.norm, entity)
        if not firsts:
            return ids, [], {}
        known = self.store.entities_by_key([compact_key(n) for n in firsts])
        aliases: dict[str, str] = {}
        rows: list[EntityRow] = []
        for norm, entity in firsts.items():
            key = compact_key(norm)
            candidates = known.setdefault(key, [])  # earlier rows of this batch join them
            match = next((c for c in candidates if self._same_meaning(entity.name, c[1])), None)
            if match is not None:
                ids[norm] = aliases[norm] = match[0]
                continue
            rows.append(EntityRow(norm, entity.name, norm, key, entity.label))
            candidates.append((norm, entity.name))
            ids[norm] = norm
        return ids, rows, aliases

    def _same_meaning(self, a: str, b: str) -> bool:
        if self.embed_names is None or a.lower() == b.lower():
            return True
        vectors = self.embed_names([a, b])
        return float(vectors[0] @ vectors[1]) >= SAME_MEANING
