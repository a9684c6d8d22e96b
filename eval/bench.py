"""Speed benchmark at N memories: import rates (embedded here, and with vectors supplied), single
stores, warm recall latency, `graphmem recall` from a new process, store size and peak RSS.

Memories are synthetic engineering notes built from fixed word lists with a seeded RNG, so every
run measures the same workload.
"""

from __future__ import annotations

import base64
import compileall
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import graphmem
from eval.embedding import environ
from eval.falkordb_graphs import StoreUrls, embedded
from eval.metrics import percentile
from graphmem import GraphMemory, open_store
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


def synthetic_notes(n: int, seed: int = 5) -> list[dict[str, Any]]:
    """Notes of three sentences, each embedded on its own as well (graphmem.passages): what an
    import of written-up incidents costs, against the one-sentence memories above."""
    rng = random.Random(seed)
    return [
        {
            "content": f"{rng.choice(SERVICES)} {rng.choice(EVENTS)} after release {i % 97}. "
            f"It was caused by {rng.choice(CAUSES)}. We {rng.choice(FIXES)} (TICKET-{i}).",
            "kind": "incident",
        }
        for i in range(n)
    ]


def _notes_rates(embedder: Embedder, n: int) -> tuple[float, float]:
    """Memories per second of an embedded import of `n` three-sentence notes, in a store of
    their own: until the import returns, and until the worker has embedded their passages."""
    lines = [json.dumps(m) for m in synthetic_notes(n)]
    with (
        tempfile.TemporaryDirectory(prefix="graphmem-bench-notes-") as tmp,
        open_store(tmp, embedder=embedder, extract_on_write=False) as gm,
    ):
        started = time.perf_counter()
        imported = gm.import_jsonl(lines).imported
        returned = time.perf_counter() - started
        gm.wait_for_passages()
        return imported / returned, imported / (time.perf_counter() - started)


def _scaled(pool: list[dict[str, Any]], start: int, stop: int) -> list[dict[str, Any]]:
    """Memories start..stop, each a copy of a pool memory with its own ticket number, so the
    pool's vector is (all but the ticket) its embedding."""
    out = []
    for i in range(start, stop):
        base = pool[i % len(pool)]
        content = base["content"].rsplit("(TICKET-", 1)[0] + f"(TICKET-{i})."
        out.append({**base, "content": content})
    return out


def _server_memory(gm: GraphMemory) -> int:
    """INFO memory's used_memory of the server a node's store is on."""
    return int(gm.store.conn.server_info("memory")["used_memory"])  # type: ignore[attr-defined]


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def machine_ms() -> dict[str, float]:
    """How fast this machine runs right now, on fixed work (the best of five tries): a shared
    machine's speed drifts by a third over a day, so a result is read beside the score measured
    with it."""
    note = {"content": "payments timed out after the deploy", "tags": ["pay", "prod"], "n": 7}
    rng = np.random.default_rng(3)
    matrix, queries = rng.random((20_000, 384), np.float32), rng.random((384, 32), np.float32)

    def python() -> None:
        for _ in range(10_000):
            json.loads(json.dumps(note))

    def numpy() -> None:
        for _ in range(5):
            matrix @ queries

    return {name: _best_ms(work) for name, work in (("python", python), ("numpy", numpy))}


def _best_ms(work: Callable[[], None], tries: int = 5) -> float:
    times = []
    for _ in range(tries):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return round(min(times) * 1000, 1)


COLD_RUNS = 5  # new processes timed; the median is reported (single runs vary by ±20% here)


def _compile_bytecode() -> None:
    """Write graphmem's bytecode, as installing it does: where PYTHONDONTWRITEBYTECODE is set (as
    in some CI images), each new process would otherwise compile ~80 modules again (~60 ms)
    that no installed copy compiles."""
    compileall.compile_dir(Path(graphmem.__file__).parent, quiet=1)


def _cold_recall_s(home: Path, query: str, embedding: str) -> float:
    """Wall time of `graphmem recall` in a new process on the closed store, to its result."""
    env = {**os.environ, "GRAPHMEM_HOME": str(home), **environ(embedding)}
    command = [sys.executable, "-m", "graphmem", "recall", query, "--limit", "5", "--json"]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or not json.loads(done.stdout):
        raise RuntimeError(f"cold recall failed: {done.stderr[-500:]}")
    return elapsed


def run_bench(
    n: int,
    queries: int,
    *,
    embedder: Embedder,
    embedding: str = "local",
    pool_size: int = 5_000,
    notes: int = 2_000,
    single: int = 200,
    chunk: int = 50_000,
    store: StoreUrls = embedded,
) -> dict[str, Any]:
    """Import `pool_size` memories through the embedder (the local import rate; and `notes`
    three-sentence notes in a store of their own), the rest with the pool's vectors supplied
    (the bulk rate), then time single stores and recall, warm and from a new process."""
    machine_start = machine_ms()
    pool = synthetic_memories(min(pool_size, n))
    rng = random.Random(11)
    label = embedder.space.label
    with tempfile.TemporaryDirectory(prefix="graphmem-bench-") as tmp:
        home = Path(tmp) / "store"
        where = store()  # the data dir's own database, or a graph on a server
        if where:  # the new-process recalls below open the same graph
            from tests.servers.falkordb_servers import node_data_dir

            node_data_dir(home, where["store_url"])
        with open_store(home, embedder=embedder, extract_on_write=False) as gm:
            stats = gm.stats()
            engine = f"{stats.engine} {stats.engine_version}"
            server_start = _server_memory(gm) if where else 0
            embedder.embed(["warm up"])
            started = time.perf_counter()
            report = gm.import_jsonl([json.dumps(m) for m in pool])
            embedded_rate = report.imported / (time.perf_counter() - started)
            print(f"embedded import: {embedded_rate:.0f}/s", file=sys.stderr)
            notes_rate, notes_done_rate = _notes_rates(embedder, notes)
            print(f"embedded import of notes: {notes_rate:.0f}/s", file=sys.stderr)

            _, matrix = gm.store.vectors.matrix(embedder.space)
            pool_vectors = [  # the compact form: base64 of little-endian float32
                base64.b64encode(row.astype("<f4").tobytes()).decode()
                for row in matrix[: len(pool)]
            ]
            supplied_s, supplied_n = 0.0, 0
            for first in range(len(pool), n, chunk):
                batch = _scaled(pool, first, min(first + chunk, n))
                lines = [
                    json.dumps(
                        {
                            **m,
                            "vector": pool_vectors[(first + k) % len(pool)],
                            "embedding_space": label,
                        }
                    )
                    for k, m in enumerate(batch)
                ]
                started = time.perf_counter()
                supplied_n += gm.import_jsonl(lines).vectors_supplied
                supplied_s += time.perf_counter() - started
                print(f"imported {first + len(batch)} / {n}", file=sys.stderr)

            started = time.perf_counter()
            for m in synthetic_memories(single, seed=99):
                gm.remember(**m)
            single_rate = single / (time.perf_counter() - started)

            def question() -> str:
                return f"why did {rng.choice(SERVICES)} {rng.choice(EVENTS)}? {rng.choice(CAUSES)}"

            started = time.perf_counter()
            gm.recall(question(), limit=10)
            first_query_ms = (time.perf_counter() - started) * 1000
            latencies = []
            for _ in range(queries):
                q = question()
                started = time.perf_counter()
                gm.recall(q, limit=10)
                latencies.append((time.perf_counter() - started) * 1000)
            # the server's memory for the graph (and its change stream), its data's home
            server_bytes = _server_memory(gm) - server_start if where else None
        peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        store_bytes = _dir_bytes(home)
        _compile_bytecode()
        cold = sorted(_cold_recall_s(home, question(), embedding) for _ in range(COLD_RUNS))
        total = n + single
        return {
            "benchmark": "bench",
            "machine_ms": {"start": machine_start, "end": machine_ms()},
            "memories": total,
            "engine": engine,  # GRAPHMEM_ENGINE picks it
            "embedding_space": label,
            "embedded_import_memories_per_s": round(embedded_rate, 1),
            "embedded_import_memories": report.imported,
            # three sentences each, every sentence embedded too (graphmem.passages), by the
            # background worker: the rate until the import returns, and until that is done
            "embedded_import_notes_per_s": round(notes_rate, 1),
            "embedded_import_notes_with_passages_per_s": round(notes_done_rate, 1),
            "embedded_import_notes": notes,
            "supplied_vector_import_memories_per_s": (
                round(supplied_n / supplied_s, 1) if supplied_s else None
            ),
            "supplied_vector_import_memories": supplied_n,
            "single_store_memories_per_s": round(single_rate, 1),
            "recall_queries": queries,
            "recall_first_query_ms": round(first_query_ms, 1),
            "recall_ms_p50": percentile(latencies, 50),
            "recall_ms_p95": percentile(latencies, 95),
            "cold_recall_s_median": round(cold[COLD_RUNS // 2], 3),
            "store_bytes": store_bytes,
            "store_bytes_per_memory": round(store_bytes / total, 1),
            "peak_rss_mb": round(peak_rss_mb, 1),
            "server_used_memory_bytes": server_bytes,
            "server_bytes_per_memory": round(server_bytes / total, 1) if server_bytes else None,
        }
