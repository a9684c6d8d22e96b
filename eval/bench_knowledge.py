"""Scale check for knowledge over time: N memories spread over two years, some of them linked
into supersession chains; latency of knowledge_timeline and recall_as_of."""

from __future__ import annotations

import itertools
import random
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from eval.bench import synthetic_memories
from eval.metrics import percentile
from graphmem import open_store
from graphmem.embeddings.base import Embedder

START = datetime(2023, 1, 1)


def run_knowledge_bench(
    n: int, chains: int, queries: int, *, embedder: Embedder, chain_length: int = 3
) -> dict[str, Any]:
    if chains * chain_length > n:
        raise SystemExit("need at least chains x chain_length memories")
    rng = random.Random(5)
    memories = synthetic_memories(n)
    for i, memory in enumerate(memories):  # two years of history, oldest first
        memory["created_at"] = (START + timedelta(minutes=i * 105)).isoformat()
    with (
        tempfile.TemporaryDirectory(prefix="graphmem-kbench-") as tmp,
        open_store(Path(tmp) / "store", embedder=embedder, extract_on_write=False) as gm,
    ):
        started = time.perf_counter()
        stored = gm.remember_many(memories)
        store_s = time.perf_counter() - started
        picks = rng.sample(range(n), chains * chain_length)
        members: list[str] = []
        started = time.perf_counter()
        for c in range(chains):
            group = sorted(picks[c * chain_length : (c + 1) * chain_length])
            ids = [stored[i].id for i in group]
            for older, newer in itertools.pairwise(ids):
                gm.mark_outdated(older, reason=f"revised in chain {c}", superseded_by=newer)
            members.extend(ids)
        link_s = time.perf_counter() - started
        print(
            f"stored {n} in {store_s:.1f}s, linked {chains} chains in {link_s:.1f}s",
            file=sys.stderr,
        )

        timeline_ms, as_of_ms, lengths = [], [], []
        for _ in range(queries):
            target = rng.choice(members)
            started = time.perf_counter()
            timeline = gm.knowledge_timeline(memory_id=target)
            timeline_ms.append((time.perf_counter() - started) * 1000)
            lengths.append(len(timeline.entries))
        for _ in range(queries):
            memory = rng.choice(memories)
            when = START + timedelta(days=rng.randrange(730))
            started = time.perf_counter()
            gm.recall_as_of(memory["content"][:60], as_of=when, limit=10)
            as_of_ms.append((time.perf_counter() - started) * 1000)
    return {
        "benchmark": "knowledge",
        "memories": n,
        "chains": chains,
        "chain_length": chain_length,
        "embedding_space": embedder.space.label,
        "store_seconds": round(store_s, 1),
        "link_seconds": round(link_s, 1),
        "timeline_ms": {"p50": percentile(timeline_ms, 50), "p95": percentile(timeline_ms, 95)},
        "timeline_versions_mean": round(sum(lengths) / len(lengths), 2),
        "recall_as_of_ms": {"p50": percentile(as_of_ms, 50), "p95": percentile(as_of_ms, 95)},
        "queries": queries,
    }
