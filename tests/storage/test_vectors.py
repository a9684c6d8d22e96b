"""Nearest-vector search: exact for small spaces, projected then reranked exactly for big ones."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from graphmem.indexes import vectors as matrices
from graphmem.models import Memory, utcnow
from graphmem.service import GraphMemory
from graphmem.storage.kuzu import vectors


def _fill(gm: GraphMemory, n: int, seed: int = 5) -> np.ndarray:
    """n memories whose vectors, like sentence embeddings, vary along a few main directions."""
    rng = np.random.default_rng(seed)
    space = gm.embedder.space
    mixed = rng.standard_normal((n, 24)) @ rng.standard_normal((24, space.dim))
    mixed += 0.05 * rng.standard_normal((n, space.dim))
    mixed = (mixed / np.linalg.norm(mixed, axis=1, keepdims=True)).astype(np.float32)
    now = utcnow()
    memories = [
        Memory(id=f"01VEC{i:021d}", content=f"note {i}", created_at=now, updated_at=now)
        for i in range(n)
    ]
    gm.store.memories.insert(memories, mixed, space)
    return mixed


def _exact(matrix: np.ndarray, query: np.ndarray, top: int) -> list[str]:
    return [f"01VEC{i:021d}" for i in np.argsort(-(matrix @ query))[:top]]


@pytest.fixture(params=["exact", "projected"])
def scan(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both ways of scanning: every row exactly, or projected from 500 rows and reranked."""
    monkeypatch.setattr(
        matrices, "PROJECT_MIN_ROWS", 500 if request.param == "projected" else 10**9
    )


@pytest.mark.usefixtures("scan")
def test_nearest_finds_the_exact_top_ten(gm: GraphMemory) -> None:
    matrix = _fill(gm, 3000)
    for query in matrix[:20] + 0.1:
        query = (query / np.linalg.norm(query)).astype(np.float32)
        got = gm.store.vectors.nearest(gm.embedder.space, query, 10)
        assert [i for i, _ in got] == _exact(matrix, query, 10)
        assert np.allclose([s for _, s in got], np.sort(matrix @ query)[::-1][:10], atol=1e-5)


def test_a_mask_leaves_rows_out_of_a_projected_scan(
    gm: GraphMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(matrices, "PROJECT_MIN_ROWS", 500)
    matrix = _fill(gm, 2000)
    mask = np.zeros(len(matrix), bool)
    mask[1000:] = True
    got = gm.store.vectors.nearest(gm.embedder.space, matrix[0], 5, mask)
    best = np.argsort(-(matrix[1000:] @ matrix[0]))[:5] + 1000
    assert [i for i, _ in got] == [f"01VEC{i:021d}" for i in best]


def test_rows_added_after_the_projection_was_fitted_are_found(
    gm: GraphMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(matrices, "PROJECT_MIN_ROWS", 500)
    matrix = _fill(gm, 1000)
    gm.store.vectors.nearest(gm.embedder.space, matrix[0], 5)  # fits the basis
    later = gm.remember("a note stored later")
    row_ids, full = gm.store.vectors.matrix(gm.embedder.space)
    got = gm.store.vectors.nearest(gm.embedder.space, full[row_ids.row(later.id)], 1)
    assert got[0][0] == later.id


@pytest.mark.usefixtures("scan")
def test_deleted_vectors_leave_the_matrix_without_reading_it_again(
    gm: GraphMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    matrix = _fill(gm, 1500)
    space = gm.embedder.space
    gm.store.vectors.nearest(space, matrix[0], 5)  # loaded (and the projection fitted)
    reads: list[str] = []
    query_result = gm.store.conn.query_result
    monkeypatch.setattr(
        gm.store.conn,
        "query_result",
        lambda q, *a, **k: reads.append(q) or query_result(q, *a, **k),
    )
    gone = [f"01VEC{i:021d}" for i in range(0, 1500, 3)]
    gm.store.vectors.delete([*gone, "01NOTSTORED0000000000000000"])

    row_ids, left = gm.store.vectors.matrix(space)
    assert len(row_ids) == len(left) == 1000 and not set(gone) & set(row_ids)
    kept = [i for i in range(1500) if i % 3]
    for i in kept[:50]:  # rows and ids still agree
        assert gm.store.vectors.nearest(space, matrix[i], 1)[0][0] == f"01VEC{i:021d}"
    query = matrix[0]  # a deleted row's vector: its neighbours among the rest
    got = [i for i, _ in gm.store.vectors.nearest(space, query, 10)]
    assert got == [f"01VEC{kept[j]:021d}" for j in np.argsort(-(matrix[kept] @ query))[:10]]
    assert not [q for q in reads if "RETURN v.id, v.vec" in q]
    assert gm.store.vectors.count(space) == 1000  # and Kùzu agrees


def test_an_updated_text_is_found_by_its_new_words_and_not_its_old_ones(gm: GraphMemory) -> None:
    kept = gm.remember("The cache is warmed by a nightly job")
    changed = gm.remember("Deploys freeze on Fridays")
    gm.recall("deploys", limit=5)  # the matrix is loaded
    gm.update(changed.id, content="Payment retries back off exponentially")
    row_ids, matrix = gm.store.vectors.matrix(gm.embedder.space)
    assert len(row_ids) == len(matrix) == 2 and set(row_ids) == {kept.id, changed.id}
    new_text = gm.embedder.embed_query("Payment retries back off exponentially")
    assert gm.store.vectors.nearest(gm.embedder.space, new_text, 1)[0][0] == changed.id
    assert gm.recall("payment retries back off", limit=1).hits[0].memory.id == changed.id


LONG = (
    "We moved the nightly export to a new cron host. The dashboards were renamed for the "
    "quarterly review. The billing worker leaks file handles after the v3 upgrade. Lunch "
    "orders now go through the shared form."
)


def _passage_table(gm: GraphMemory) -> str:
    return vectors.passage_table_for(gm.embedder.space)


def test_a_memory_of_several_sentences_stores_one_vector_per_sentence(gm: GraphMemory) -> None:
    long = gm.remember(LONG)
    short = gm.remember("The billing worker was restarted.")
    rows = gm.cypher(f"MATCH (p:{_passage_table(gm)}) RETURN p.id ORDER BY p.id").rows
    assert [r[0] for r in rows] == [f"{long.id}#{n}" for n in range(4)]
    assert gm.store.vectors.passage_owners(gm.embedder.space) == {long.id}
    assert short.id not in gm.store.vectors.passage_owners(gm.embedder.space)


def test_passage_scores_are_each_memorys_best_sentence(gm: GraphMemory) -> None:
    long = gm.remember(LONG)
    space = gm.embedder.space
    query = gm.embedder.embed_query("billing worker leaks file handles")
    sentence = gm.embedder.embed(["The billing worker leaks file handles after the v3 upgrade."])
    whole = gm.embedder.embed([LONG])
    found = gm.store.vectors.passage_scores(space, query, [long.id, "no-such-memory"])
    assert found.keys() == {long.id}
    assert found[long.id].best == pytest.approx(float(sentence[0] @ query), abs=1e-5)
    assert found[long.id].total == 4
    assert found[long.id].best > float(whole[0] @ query)
    assert gm.store.vectors.nearest_passages(space, query, 2) == [long.id]


def test_update_and_delete_replace_and_remove_the_passages(gm: GraphMemory) -> None:
    long = gm.remember(LONG)
    gm.update(long.id, content="First new sentence here. Second new sentence here.")
    rows = gm.cypher(f"MATCH (p:{_passage_table(gm)}) RETURN p.id ORDER BY p.id").rows
    assert [r[0] for r in rows] == [f"{long.id}#0", f"{long.id}#1"]
    query = gm.embedder.embed_query("billing worker leaks file handles")
    assert gm.store.vectors.nearest_passages(gm.embedder.space, query, 5) == [long.id]
    gm.delete(long.id)
    assert gm.cypher(f"MATCH (p:{_passage_table(gm)}) RETURN count(*)").rows == [[0]]
    assert gm.store.vectors.nearest_passages(gm.embedder.space, query, 5) == []


def test_warming_a_space_reads_its_vectors_and_passages(
    gm: GraphMemory, reopen: Callable[..., GraphMemory]
) -> None:
    gm.remember(LONG)
    gm.close()
    again = reopen()
    space = again.embedder.space
    assert not again.store.search.loaded_vector_sets()
    again.store.vectors.warm(space)
    assert again.store.search.loaded_vector_sets() == {
        vectors.table_for(space),
        _passage_table(again),
    }
