"""`python -m eval console` times every console page through a real owner and HTTP server."""

from __future__ import annotations

from pathlib import Path

from eval.console_bench import run_console_bench
from graphmem import open_store
from graphmem.embeddings.hashing import HashEmbedder


def test_the_console_benchmark_times_every_page(tmp_path: Path) -> None:
    home = tmp_path / "project" / ".graphmem"
    with open_store(home, embedder=HashEmbedder(), extract_on_write=False) as gm:
        gm.remember_many(
            [{"content": f"Deploy step {n}: sync the argocd app named shop-{n}"} for n in range(12)]
        )
        gm.index_triples()

    result = run_console_bench(home, "hash", rounds=2)

    assert result["memories"] == 12
    assert set(result["pages"]) >= {"search", "memory", "multihop", "inbox", "stats"}
    assert all(page["n"] == 2 and page["p95_ms"] > 0 for page in result["pages"].values())
    assert result["meets_target"] == (result["worst_p95_ms"] <= result["target_ms"])
