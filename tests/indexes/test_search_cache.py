"""Search structures saved at close: a new process starts warm, and never trusts stale files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from graphmem.indexes import search_state
from graphmem.indexes.search_cache import CACHE_DIR, MANIFEST
from graphmem.service import GraphMemory

NOTES = [
    "the ledger service returned 502 after release v2",
    "postgres connection pool exhausted during the nightly batch",
    "rotated the TLS certificate on the gateway",
    "kafka consumer lag grew after the schema change",
    "rolled back the billing deploy because of double charges",
    "redis cache served stale prices for an hour",
]


@pytest.fixture(autouse=True)
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_state, "MIN_MEMORIES", 3)


def _ranked(gm: GraphMemory, query: str, recipe: str = "hybrid") -> list[str]:
    return [hit.memory.id for hit in gm.recall(query, recipe=recipe, limit=5)]


def _warm_and_close(gm: GraphMemory) -> dict[str, list[str]]:
    gm.remember_many([{"content": text} for text in NOTES])
    ranked = {q: _ranked(gm, q) for q in ("502 ledger", "stale cache", "kafka lag")}
    gm.close()
    return ranked


def test_a_reopened_store_answers_from_the_saved_structures_with_the_same_ranking(
    gm: GraphMemory, reopen: Callable[..., GraphMemory], store_path: Path
) -> None:
    before = _warm_and_close(gm)
    assert (store_path / CACHE_DIR / MANIFEST).exists()

    again = reopen()

    assert {q: _ranked(again, q) for q in before} == before
    _, matrix = again.store.vectors.matrix(again.embedder.space)
    assert isinstance(matrix.base, np.memmap)  # read from the saved file, not from Kùzu
    assert not again.store.search.unsaved


def test_a_write_by_a_later_process_makes_the_saved_files_stale(
    gm: GraphMemory, reopen: Callable[..., GraphMemory]
) -> None:
    _warm_and_close(gm)
    writer = reopen()
    added = writer.remember("zookeeper quorum lost after the zebra migration")
    writer.close()

    reader = reopen()

    assert _ranked(reader, "zookeeper zebra", recipe="bm25") == [added.id]
    assert added.id in reader.store.vectors.ids(reader.embedder.space)


def test_a_write_through_cypher_makes_the_saved_files_stale(
    gm: GraphMemory, reopen: Callable[..., GraphMemory]
) -> None:
    _warm_and_close(gm)
    writer = reopen()
    writer.cypher("MATCH (m:Memory) WHERE m.content CONTAINS 'kafka' DETACH DELETE m", write=True)
    writer.close()

    reader = reopen()

    assert _ranked(reader, "kafka consumer lag", recipe="bm25") == []


def test_damaged_files_are_ignored(
    gm: GraphMemory, reopen: Callable[..., GraphMemory], store_path: Path
) -> None:
    before = _warm_and_close(gm)
    for path in (store_path / CACHE_DIR).iterdir():
        if path.name != MANIFEST:
            path.write_bytes(b"not what was saved")

    again = reopen()

    assert {q: _ranked(again, q) for q in before} == before


def test_a_small_store_saves_nothing(
    gm: GraphMemory, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_state, "MIN_MEMORIES", 1000)
    _warm_and_close(gm)
    assert not (store_path / CACHE_DIR).exists()


def test_passages_are_saved_and_found_again_after_reopening(
    gm: GraphMemory, reopen: Callable[..., GraphMemory]
) -> None:
    long = gm.remember("We rotated the gateway certificate. The ledger returned 502 after v2.")
    gm.remember_many([{"content": text} for text in NOTES])
    space = gm.embedder.space
    query = gm.embedder.embed_query("ledger 502")
    before = gm.store.vectors.passage_scores(space, query, [long.id])
    gm.recall("ledger 502")  # loads the passages, so that closing saves them
    gm.close()

    again = reopen()
    after = again.store.vectors.passage_scores(space, query, [long.id])
    assert after[long.id].best == pytest.approx(before[long.id].best)
    assert after[long.id].total == before[long.id].total == 2
    assert again.store.vectors.nearest_passages(space, query, 1) == [long.id]
    rows = again.store.search.read_matrix(
        f"Psg_{space.name}", space.dim, lambda m: m.rows.view(space.dim)
    )
    assert isinstance(rows.base, np.memmap)  # read from the saved file, not from Kùzu
