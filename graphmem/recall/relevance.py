"""The relevance bar: when a recalled memory or document section is about what was asked, in
absolute terms.

Recall's scores are scaled per query (the best candidate always has cosine 1.0 and bm25 1.0), so
they rank but say nothing of whether anything matched. The bar reads what does not move with
the other candidates: the raw cosine of the query to the memory (the better of its own vector's
and its best passage's) and the share of the query's content words found in it. The prompt hook
injects only what clears it (graphmem.agents.context), and recall warns of a dead end only when
the dead end, or the hit that links it, clears it (graphmem.recall.warnings).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RelevanceBar:
    """When a recalled memory or document section is worth injecting with a prompt, or a dead
    end worth a warning: the raw cosine of the query to it (for a memory, the better of its own
    and its best passage's) alone, or a lower cosine with a share of the query's content words
    found in it (`terms`). BM25's own feature is scaled to the best candidate, so it says
    nothing absolute. Measured with the local model: see docs/agents.md#the-relevance-bar."""

    cosine: float = 0.45
    cosine_with_terms: float = 0.35
    terms: float = 0.5
    doc_cosine: float = 0.50
    doc_cosine_with_terms: float = 0.40
    doc_terms: float = 0.6

    def clears(self, cosine: float, terms: float) -> bool:
        """A memory whose raw cosine to the query is `cosine` and which holds a share `terms`
        of the query's content words."""
        return cosine >= self.cosine or (cosine >= self.cosine_with_terms and terms >= self.terms)

    def memory(self, explain: Mapping[str, Any] | None) -> bool:
        if not explain:
            return False
        sim = max(explain.get("cosine_raw") or 0.0, explain.get("passage_raw") or 0.0)
        return self.clears(sim, explain.get("features", {}).get("terms", 0.0))

    def section(self, explain: Mapping[str, Any] | None) -> bool:
        if not explain:
            return False
        sim = explain.get("raw_cosine") or 0.0
        terms = explain.get("features", {}).get("terms", 0.0)
        return sim >= self.doc_cosine or (
            sim >= self.doc_cosine_with_terms and terms >= self.doc_terms
        )
