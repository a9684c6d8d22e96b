"""Recall warnings: dead ends to avoid, and memories only keywords can find.

Before an agent acts on recalled knowledge, tell it what already failed, and only when it is
about what was asked: a dead end is worth a warning when it clears the relevance bar the prompt
hook's injections clear (graphmem.recall.relevance), or when a decision among the hits avoids it
and that decision clears the bar. Sharing a context, a service or a tag with a hit is no reason
on its own: a store's dead ends share "infra" with half its memories. Each warning says why it
is shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.models import Hit, Memory, RecallWarning
from graphmem.recall.relevance import RelevanceBar
from graphmem.storage.protocols import Store
from graphmem.text import content_terms, shortened

MAX_WARNINGS = 3
LABEL_CHARS = 80  # of a dead end's title or content in the message


@dataclass(frozen=True)
class Match:
    """How a memory stands to the query in absolute terms: what the relevance bar reads."""

    cosine: float | None  # the better of its own vector's and its best passage's; None: no vector
    found: int  # of the query's content words, how many it holds
    asked: int  # the query's content words

    @property
    def terms(self) -> float:
        return self.found / self.asked if self.asked else 0.0

    def clears(self, bar: RelevanceBar) -> bool:
        if self.cosine is None:  # the query has no vector: every one of its words, then
            return self.asked > 0 and self.found == self.asked
        return bar.clears(self.cosine, self.terms)

    def describe(self) -> str:
        words = f"{self.found} of the query's {self.asked} words" if self.asked else ""
        if self.cosine is None:
            return words
        return f"cosine {self.cosine:.2f}" + (f", {words}" if self.found else "")


def dead_end_warnings(
    store: Store,
    hits: Sequence[Hit],
    query: str,
    query_vector: npt.NDArray[np.float32] | None,
    space: EmbeddingSpace | None,
    bar: RelevanceBar,
) -> list[RecallWarning]:
    """At most MAX_WARNINGS dead ends about the query: a hit that clears the bar, a dead end a
    decision among the hits avoids (when that decision clears the bar), a dead end close to the
    query by itself; in that order, each with its reason."""
    dead_ends = store.knowledge.dead_end_ids()
    if not dead_ends:
        return []
    hit_ids = {h.memory.id for h in hits}
    decisions = {h.memory.id for h in hits if h.memory.kind == "decision"}
    avoided: dict[str, list[str]] = {}
    if decisions:
        for dead_end, deciders in store.knowledge.avoided_by(dead_ends).items():
            chosen = [d for d in deciders if d in decisions]
            if chosen:
                avoided[dead_end] = chosen
    near = _near(store, dead_ends, query_vector, space, bar.cosine_with_terms)
    looked = [*dict.fromkeys([*(i for i in dead_ends if i in hit_ids), *avoided, *near])]
    deciders = sorted({d for chosen in avoided.values() for d in chosen})
    matches = _matches(store, [*looked, *deciders], query, query_vector, space)
    found: list[tuple[int, float, str, str, str | None]] = []  # order, -cosine, id, reason, via
    for memory_id in looked:
        match = matches.get(memory_id)
        if match is None:  # archived or gone
            continue
        linked = [d for d in avoided.get(memory_id, []) if d in matches and matches[d].clears(bar)]
        if match.clears(bar):
            among = "one of the hits and " if memory_id in hit_ids else ""
            order = 0 if memory_id in hit_ids else 2
            reason, via = f"it is {among}close to the query ({match.describe()})", None
        elif linked:
            order, via = 1, linked[0]
            reason = (
                f"decision {via}, a hit close to the query ({matches[via].describe()}), avoids it"
            )
        else:
            continue
        found.append((order, -(match.cosine or 0.0), memory_id, reason, via))
    found.sort()
    chosen_ids = [memory_id for _, _, memory_id, _, _ in found[:MAX_WARNINGS]]
    memories = store.memories.get_many(chosen_ids)
    return [
        _warning(memories[memory_id], reason, via)
        for _, _, memory_id, reason, via in found[:MAX_WARNINGS]
        if memory_id in memories
    ]


def dead_end_label(memory: Memory) -> str:
    """A dead end in a line: its title (or content) cut with an ellipsis, and what to do
    instead when it says."""
    alternative = _alternative(memory)
    return shortened(memory.title or memory.content, LABEL_CHARS) + (
        f" (instead: {shortened(alternative, LABEL_CHARS)})" if alternative else ""
    )


def _warning(memory: Memory, reason: str, via: str | None) -> RecallWarning:
    message = f"dead end {memory.id}: {dead_end_label(memory)}; shown because {reason}"
    return RecallWarning(kind="dead_end", message=message, memory=memory, reason=reason, via=via)


def _near(
    store: Store,
    ids: Sequence[str],
    vector: npt.NDArray[np.float32] | None,
    space: EmbeddingSpace | None,
    floor: float,
) -> list[str]:
    """Those of `ids` whose own vector or best passage is at least `floor` from the query."""
    if vector is None or space is None:
        return []
    row_ids, matrix = store.vectors.matrix(space)
    located = row_ids.within(list(ids), len(matrix))
    close: dict[str, float] = {}
    if located:
        sims = matrix[[row for _, row in located]] @ vector
        close = {i: float(s) for (i, _), s in zip(located, sims.tolist(), strict=True)}
    for memory_id, passage in store.vectors.passage_scores(space, vector, list(ids)).items():
        close[memory_id] = max(close.get(memory_id, passage.best), passage.best)
    return [i for i, s in sorted(close.items(), key=lambda p: -p[1]) if s >= floor]


def _matches(
    store: Store,
    ids: Sequence[str],
    query: str,
    vector: npt.NDArray[np.float32] | None,
    space: EmbeddingSpace | None,
) -> dict[str, Match]:
    """What the relevance bar reads of each memory: its raw cosine and the query's words in it,
    read from the in-process columns and vectors (no memory is read)."""
    rows = store.memories.scoring_rows(list(ids))
    terms = content_terms(query)
    cosines: dict[str, float] = {}
    if vector is not None and space is not None and rows:
        row_ids, matrix = store.vectors.matrix(space)
        located = row_ids.within(list(rows), len(matrix))
        if located:
            sims = matrix[[row for _, row in located]] @ vector
            cosines = {i: float(s) for (i, _), s in zip(located, sims.tolist(), strict=True)}
        for memory_id, passage in store.vectors.passage_scores(space, vector, list(rows)).items():
            cosines[memory_id] = max(cosines.get(memory_id, passage.best), passage.best)
    return {
        memory_id: Match(
            cosine=cosines.get(memory_id, 0.0) if vector is not None else None,
            found=sum(t in row.tokens for t in terms),
            asked=len(terms),
        )
        for memory_id, row in rows.items()
    }


def _alternative(memory: Memory) -> str | None:
    record = memory.metadata.get("record")
    alternative = record.get("alternative") if isinstance(record, dict) else None
    return alternative if isinstance(alternative, str) and alternative else None


def missing_vector_warnings(store: Store, space: EmbeddingSpace) -> list[RecallWarning]:
    """Memories without a vector in the query's space can only be found by keyword: say so."""
    missing = store.memories.count() - len(store.vectors.ids(space))
    if missing <= 0:
        return []
    message = (
        f"{missing} memories have no vector in {space.label} and can only be found by keyword; "
        "run `graphmem reembed` to embed them"
    )
    return [RecallWarning(kind="missing_vectors", message=message)]
