"""Document search: chunks found by vector and by BM25, scored by features, one hit per section,
and no more than a few sections of one document on a page.

A long document has many chunks that share its words; ranked chunk by chunk it would fill the page
with itself. Scoring chunks and then keeping each section's best (and each document's best few
sections) gives the page to as many places as it can show.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from graphmem.documents.classify import query_intent
from graphmem.documents.roles import section_role, wanted_roles
from graphmem.embeddings.base import EmbeddingSpace
from graphmem.errors import InvalidInput
from graphmem.indexes.doc_index import ChunkInfo, DocumentIndex
from graphmem.indexes.keywords import query_terms, stem
from graphmem.models import DocHit
from graphmem.recall.pipeline import scaled
from graphmem.storage.protocols import Store
from graphmem.text import query_text, tokens

SNIPPET_CHARS = 300
OWN_FEATURES = ("cosine", "bm25", "terms", "heading", "path", "intent")
# the role feature counts in the documents whose best score is at least this share of the best
ROLE_GATE = 0.9


@dataclass(frozen=True)
class DocRecipe:
    """How document search weighs its features (each scaled to 0..1 per query)."""

    name: str
    vector_candidates: int = 100
    keyword_candidates: int = 100
    w_cosine: float = 1.0
    w_bm25: float = 0.5
    w_terms: float = 0.3  # share of the question's words in the chunk
    w_heading: float = 0.2  # ... in the headings above it and the document's title
    w_path: float = 0.1  # ... in its file path
    w_intent: float = 0.1  # the document is of a kind the question asks for (how-to: runbook)
    w_doc: float = 0.3  # a share of the document's best score (see `_lift`)
    w_role: float = 0.5  # its heading has the role the question asks for (documents.roles)
    per_doc: int = 5  # sections of one document on a page

    @property
    def weights(self) -> dict[str, float]:
        return {name: getattr(self, f"w_{name}") for name in (*OWN_FEATURES, "doc", "role")}


DOC_RECIPES: dict[str, DocRecipe] = {
    "hybrid": DocRecipe("hybrid"),
    # one side each, without what the documents add: what hybrid is measured against
    "bm25": DocRecipe("bm25", vector_candidates=0, w_cosine=0.0, w_doc=0.0, w_role=0.0),
    "vector": DocRecipe(
        "vector", keyword_candidates=0, w_bm25=0.0, w_terms=0.0, w_heading=0.0, w_path=0.0,
        w_intent=0.0, w_doc=0.0, w_role=0.0,
    ),
}  # fmt: skip


def doc_recipe(name: str | None) -> DocRecipe:
    recipe = DOC_RECIPES.get(name or "hybrid")
    if recipe is None:
        raise InvalidInput(
            f"unknown search recipe {name!r}; known: {', '.join(DOC_RECIPES)}", recipe=name
        )
    return recipe


@dataclass
class _Candidate:
    chunk: ChunkInfo
    cosine: float | None = None
    bm25: float = 0.0
    features: dict[str, float] = field(default_factory=dict)
    score: float = 0.0
    role: bool = False  # its heading has the role the question asks for


def search(
    store: Store,
    query: str,
    vector: npt.NDArray[np.float32] | None,
    space: EmbeddingSpace | None,
    recipe: DocRecipe,
    *,
    limit: int,
    source_type: str | None = None,
    path_prefix: str | None = None,
    explain: bool = False,
) -> list[DocHit]:
    index = store.documents.index()
    if not index.chunks:
        return []
    narrow = source_type is not None or path_prefix is not None
    wide = 10 if narrow else 1  # a filter leaves out most candidates: gather more of them
    analysed = query_text(query)
    found: dict[str, _Candidate] = {}
    if vector is not None and space is not None and recipe.vector_candidates:
        for chunk_id, cosine in store.documents.nearest_chunks(
            space, vector, recipe.vector_candidates * wide
        ):
            if chunk_id in index.chunks:
                found[chunk_id] = _Candidate(index.chunks[chunk_id], cosine=cosine)
    if recipe.keyword_candidates and analysed.strip():
        for chunk_id, bm25 in index.keywords.search(analysed, top=recipe.keyword_candidates * wide):
            if chunk_id in index.chunks:
                found.setdefault(chunk_id, _Candidate(index.chunks[chunk_id])).bm25 = bm25
    found = {k: c for k, c in found.items() if _passes(index, c.chunk, source_type, path_prefix)}
    if vector is not None and space is not None and recipe.w_cosine:
        missing = [k for k, c in found.items() if c.cosine is None]
        for chunk_id, cosine in store.documents.chunk_scores(space, vector, missing).items():
            found[chunk_id].cosine = cosine
    _score(index, query, found, recipe)
    return _hits(index, found, recipe, limit=limit, explain=explain)


def _passes(
    index: DocumentIndex, chunk: ChunkInfo, source_type: str | None, path_prefix: str | None
) -> bool:
    doc = index.docs.get(chunk.doc)
    if doc is None:
        return False
    if source_type is not None and doc.source_type != source_type:
        return False
    return path_prefix is None or doc.rel.startswith(path_prefix.lstrip("./"))


def _stems(text: str) -> set[str]:
    return {stem(t) for t in tokens(text)}


def _score(
    index: DocumentIndex, query: str, found: Mapping[str, _Candidate], recipe: DocRecipe
) -> None:
    """Each chunk's own features and score; then what its document adds (`_lift`)."""
    terms = set(query_terms(query_text(query)))
    intent = query_intent(query)
    roles = wanted_roles(query)
    cosines = scaled({k: c.cosine for k, c in found.items() if c.cosine is not None})
    top_bm25 = max((c.bm25 for c in found.values()), default=0.0)
    for key, cand in found.items():
        chunk = cand.chunk
        doc = index.docs[chunk.doc]
        section = index.sections.get(chunk.section)
        headings = " ".join(section.breadcrumb) if section else doc.title

        def share(words: set[str]) -> float:
            return len(terms & words) / len(terms) if terms else 0.0

        f = cand.features
        f["cosine"] = cosines.get(key, 0.0)
        f["bm25"] = cand.bm25 / top_bm25 if top_bm25 > 0 else 0.0
        f["terms"] = share(_stems(chunk.text))
        f["heading"] = share(_stems(headings))
        f["path"] = share(_stems(doc.rel.replace("/", " ")))
        f["intent"] = float(doc.source_type in intent)
        cand.role = bool(roles) and section is not None and section_role(section.title) in roles
        cand.score = sum(recipe.weights[name] * f[name] for name in OWN_FEATURES)
    _lift(found, recipe)


def _lift(found: Mapping[str, _Candidate], recipe: DocRecipe) -> None:
    """What a chunk's document adds: a share of the document's best score (`doc`), so the
    sections of a document that answers stay together; and, within the documents that answer
    best (ROLE_GATE), the section whose heading has the role the question asks for (`role`):
    let loose on every document, it would rank another alert's Diagnosis above this one's."""
    doc_best: dict[str, float] = {}
    for cand in found.values():
        doc_best[cand.chunk.doc] = max(doc_best.get(cand.chunk.doc, 0.0), cand.score)
    top = max(doc_best.values(), default=0.0)
    for cand in found.values():
        best = doc_best[cand.chunk.doc]
        cand.features["doc"] = best
        cand.features["role"] = float(cand.role and best >= ROLE_GATE * top)
        cand.score += recipe.w_doc * best + recipe.w_role * cand.features["role"]


def _hits(
    index: DocumentIndex,
    found: Mapping[str, _Candidate],
    recipe: DocRecipe,
    *,
    limit: int,
    explain: bool,
) -> list[DocHit]:
    best: dict[str, _Candidate] = {}  # section key -> its best chunk
    for cand in sorted(found.values(), key=lambda c: (-c.score, c.chunk.id)):
        best.setdefault(cand.chunk.section, cand)
    hits: list[DocHit] = []
    per_doc: dict[str, int] = {}
    for section_key, cand in best.items():
        section = index.sections.get(section_key)
        doc = index.docs.get(cand.chunk.doc)
        if section is None or doc is None or per_doc.get(doc.uid, 0) >= recipe.per_doc:
            continue
        per_doc[doc.uid] = per_doc.get(doc.uid, 0) + 1
        hits.append(
            DocHit(
                path=doc.rel,
                title=doc.title,
                heading=section.title,
                breadcrumb=list(section.breadcrumb),
                section_key=section.section_key,
                source_type=doc.source_type,
                lines=[section.start_line, section.end_line],
                snippet=_snippet(cand.chunk.text),
                score=round(cand.score, 4),
                explain=_explain(cand, recipe) if explain else None,
            )
        )
        if len(hits) >= limit:
            break
    return hits


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1].rstrip() + "…"


def _explain(cand: _Candidate, recipe: DocRecipe) -> dict[str, Any]:
    weights = recipe.weights
    return {
        "recipe": recipe.name,
        "chunk": cand.chunk.id,
        "chunk_lines": [cand.chunk.start_line, cand.chunk.end_line],
        "raw_cosine": cand.cosine,
        "features": {k: round(v, 4) for k, v in cand.features.items()},
        "weights": weights,
        "contributions": {k: round(weights[k] * v, 4) for k, v in cand.features.items()},
    }
