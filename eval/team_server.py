"""`python -m eval team-server`: two graphmem nodes on one graph of a FalkorDB server on
loopback (tests/servers), as a team runs them on two machines: what a write costs, how soon
the other node's recall finds it, a bulk import, the server's memory and a backup.

Every figure goes through the public API (`remember`, `recall`, `remember_many`, `backup`),
with the hash embedder, so that the numbers are the store's and not the model's."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from eval.bench import machine_ms
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.service import open_store
from tests.servers import falkordb_servers as servers

BULK_BATCH = 500


def _quantiles(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(float(np.percentile(values, 50)), 1),
        "p95": round(float(np.percentile(values, 95)), 1),
        "max": round(max(values), 1),
    }


def run_team_server(
    writes: int = 100, bulk: int = 5_000, progress: Callable[[str], None] = print
) -> dict[str, Any]:
    machine_start = machine_ms()
    with tempfile.TemporaryDirectory(prefix="team-server-") as tmp:
        home = Path(tmp)
        with servers.standalone(home / "server") as server:
            url = server.store_url("team")
            a = open_store(home / "a", embedder=HashEmbedder(), store_url=url)
            b = open_store(home / "b", embedder=HashEmbedder(), store_url=url)
            try:
                b.recall("warm up")
                written, seen = [], []
                progress(f"{writes} writes on node a, each looked for by node b")
                for i in range(writes):
                    began = time.perf_counter()
                    memory = a.remember(f"note {i}: the zq{i}x service timed out after deploy")
                    acked = time.perf_counter()
                    written.append((acked - began) * 1000)
                    while True:  # b's recall, until it finds the note
                        hits = b.recall(f"zq{i}x", recipe="bm25", limit=1).hits
                        if hits and hits[0].memory.id == memory.id:
                            break
                        time.sleep(0.002)
                    seen.append((time.perf_counter() - acked) * 1000)
                progress(f"{bulk} more in batches of {BULK_BATCH}")
                began = time.perf_counter()
                for start in range(0, bulk, BULK_BATCH):
                    a.remember_many(
                        [{"content": f"bulk note {start + i} on service s{(start + i) % 97}"}
                         for i in range(BULK_BATCH)]
                    )  # fmt: skip
                bulk_seconds = time.perf_counter() - began
                with server.client() as client:
                    used = int(client.info("memory")["used_memory"])
                progress("a backup")
                began = time.perf_counter()
                backup = a.backup(home / "backup")
                backup_seconds = time.perf_counter() - began
            finally:
                a.close()
                b.close()
    memories = writes + bulk
    return {
        "benchmark": "team-server",
        "machine_ms": {"start": machine_start, "end": machine_ms()},
        "nodes": 2,
        "memories": memories,
        "embedding": "hash",
        "remember_ms": _quantiles(written),
        "recalled_by_the_other_node_after_the_ack_ms": _quantiles(seen),
        "remember_many_per_s": round(bulk / bulk_seconds),
        "server_used_memory_bytes_per_memory": round(used / memories),
        "backup_s": round(backup_seconds, 2),
        "backup_memories": backup.memories,
    }
