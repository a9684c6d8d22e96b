"""Recall warnings: dead ends to avoid, and memories only keywords can find.

Before an agent acts on recalled knowledge, tell it what already failed. A dead end is relevant
when a decision among the hits avoids it, when it shares a context, service or tag with the
hits, or when its meaning is close to the query's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.models import Hit, Memory, RecallWarning
from graphmem.storage.protocols import Store

CLOSE_MEANING = 0.5  # cosine of the query to a dead end that counts as the same topic
MAX_WARNINGS = 3


def dead_end_warnings(
    store: Store,
    hits: Sequence[Hit],
    query_vector: npt.NDArray[np.float32] | None,
    space: EmbeddingSpace | None,
) -> list[RecallWarning]:
    dead_ends = store.knowledge.dead_end_ids()
    if not dead_ends:
        return []
    found: dict[str, Memory] = {h.memory.id: h.memory for h in hits if h.memory.kind == "dead_end"}
    if hits:
        for memory in store.knowledge.dead_ends_near(
            [h.memory for h in hits[:5]], limit=MAX_WARNINGS
        ):
            found.setdefault(memory.id, memory)
    if query_vector is not None and space is not None and len(found) < MAX_WARNINGS:
        row_ids, matrix = store.vectors.matrix(space)
        others = [i for i in dead_ends if i not in found]
        close = [
            (float(matrix[row] @ query_vector), i) for i, row in row_ids.within(others, len(matrix))
        ]
        close = sorted((c for c in close if c[0] >= CLOSE_MEANING), reverse=True)
        if close:
            extra = store.memories.get_many([i for _, i in close[: MAX_WARNINGS - len(found)]])
            found.update(extra)
    return [
        RecallWarning(
            kind="dead_end",
            message=f"dead end {memory.id}: {memory.title or memory.content[:80]}"
            + (f" (instead: {alt})" if (alt := _alternative(memory)) else ""),
            memory=memory,
        )
        for memory in list(found.values())[:MAX_WARNINGS]
    ]


def _alternative(memory: Memory) -> str | None:
    record = memory.metadata.get("record")
    return record.get("alternative") if isinstance(record, dict) else None


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
