"""Speed benchmark: batched import rate vs one-by-one stores, recall latency, store size, peak RSS.

Memories are synthetic engineering notes built from fixed word lists with a seeded RNG, so every
run measures the same workload.
"""

from __future__ import annotations

import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from eval.metrics import percentile
from graphmem import open_store
from graphmem.embeddings.base import Embedder

SERVICES = [
    "orders",
    "billing",
    "auth-api",
    "gateway",
    "search",
    "payments",
    "ledger",
    "notify",
    "catalog",
    "inventory",
    "checkout",
    "profile",
    "reports",
    "scheduler",
    "mailer",
]
EVENTS = [
    "timed out",
    "returned 502",
    "leaked connections",
    "ran out of memory",
    "deadlocked",
    "dropped messages",
    "served stale cache",
    "failed the health check",
    "double-charged",
    "lost the lock",
    "retried forever",
    "logged secrets",
]
CAUSES = [
    "a missing index on created_at",
    "the v2 client pool size",
    "an expired TLS cert",
    "a race in token refresh",
    "a bad feature flag",
    "the nightly migration",
    "DNS caching in the sidecar",
    "an unbounded queue",
    "clock skew between nodes",
    "a schema change without backfill",
]
FIXES = [
    "rolled back the deploy",
    "added the index concurrently",
    "raised the pool to 50",
    "rotated the certificate",
    "added a per-user lock",
    "disabled the flag",
    "set a queue limit",
    "pinned the client version",
    "added jitter to retries",
]


def synthetic_memories(n: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        service, event = rng.choice(SERVICES), rng.choice(EVENTS)
        cause, fix = rng.choice(CAUSES), rng.choice(FIXES)
        out.append(
            {
                "content": f"{service} {event} after release {i % 97}.{i % 13}: caused by {cause}; we {fix} (TICKET-{i}).",
                "type": rng.choice(["episodic", "semantic", "procedural"]),
                "kind": rng.choice(["note", "incident", "decision", "runbook"]),
                "tags": [service, rng.choice(["oncall", "db", "perf", "security"])],
                "service": service,
                "importance": round(rng.random(), 2),
            }
        )
    return out


def run_bench(n: int, queries: int, *, embedder: Embedder, single: int = 200) -> dict[str, Any]:
    memories = synthetic_memories(n)
    rng = random.Random(11)
    with tempfile.TemporaryDirectory(prefix="graphmem-bench-") as tmp:
        lines = [json.dumps(m) for m in memories]
        with open_store(Path(tmp) / "store", embedder=embedder, extract_on_write=False) as gm:
            embedder.embed(["warm up"])
            started = time.perf_counter()
            report = gm.import_jsonl(lines)
            import_s = time.perf_counter() - started
            print(f"imported {report.imported} in {import_s:.1f}s", file=sys.stderr)

            started = time.perf_counter()
            for m in synthetic_memories(single, seed=99):
                gm.remember(**m)
            single_rate = single / (time.perf_counter() - started)

            latencies = []
            for _ in range(queries):
                q = f"why did {rng.choice(SERVICES)} {rng.choice(EVENTS)}? {rng.choice(CAUSES)}"
                started = time.perf_counter()
                gm.recall(q, limit=10)
                latencies.append((time.perf_counter() - started) * 1000)
            store_bytes = gm.stats().store_bytes
        import_rate = report.imported / import_s
        return {
            "benchmark": "bench",
            "memories": n,
            "embedding_space": embedder.space.label,
            "import_memories_per_s": round(import_rate, 1),
            "single_store_memories_per_s": round(single_rate, 1),
            "batched_speedup": round(import_rate / single_rate, 2),
            "recall_queries": queries,
            "recall_ms_p50": percentile(latencies, 50),
            "recall_ms_p95": percentile(latencies, 95),
            "store_bytes": store_bytes,
            "store_bytes_per_memory": round(store_bytes / (n + single), 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }
