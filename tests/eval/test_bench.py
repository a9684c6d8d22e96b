"""The speed benchmark end to end on a small store (the numbers themselves are not asserted)."""

from __future__ import annotations

from eval.bench import run_bench
from graphmem.embeddings.hashing import HashEmbedder


def test_a_small_bench_reports_every_measure_beside_the_machine_speed() -> None:
    result = run_bench(
        400, 5, embedder=HashEmbedder(), embedding="hash", pool_size=150, notes=20, single=5
    )

    assert result["memories"] == 405
    assert (result["embedded_import_memories"], result["supplied_vector_import_memories"]) == (
        150,
        250,
    )
    assert result["embedding_space"] == HashEmbedder().space.label
    assert result["embedded_import_notes"] == 20
    for key in (
        "embedded_import_notes_per_s",
        "recall_ms_p50",
        "recall_ms_p95",
        "cold_recall_s_median",
        "store_bytes_per_memory",
    ):
        assert result[key] > 0, key
    for when in ("start", "end"):
        assert set(result["machine_ms"][when]) == {"python", "numpy"}
        assert all(v > 0 for v in result["machine_ms"][when].values())
