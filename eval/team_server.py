"""`python -m eval team-server`: two graphmem nodes on one graph of a FalkorDB server on
loopback (tests/servers), as a team runs them on two machines: what a write costs, how soon
the other node's recall finds it, a bulk import, the server's memory and a backup.

Every figure goes through the public API (`remember`, `recall`, `remember_many`, `backup`),
with the hash embedder, so that the numbers are the store's and not the model's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


NODE_SCRIPT = """
import json, sys, time
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.service import open_store
url, home, seconds, name = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
with open_store(home, embedder=HashEmbedder(), store_url=url) as gm:
    gm.recall("warm up")
    print("ready", flush=True)
    sys.stdin.readline()  # every node starts at once
    writes = recalls = 0
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        gm.remember(f"{name} note {writes}: service s{writes % 97} timed out after deploy")
        writes += 1
        for _ in range(4):
            gm.recall(f"why did service s{(writes * 7 + recalls) % 97} time out", limit=10)
            recalls += 1
    print(json.dumps({"writes": writes, "recalls": recalls}), flush=True)
"""


def _nodes_at_once(url: str, home: Path, nodes: int, seconds: float) -> dict[str, float]:
    """`nodes` graphmem processes on one graph, each storing one note then recalling four times
    in a loop for `seconds`: aggregate writes/s and recalls/s."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", NODE_SCRIPT, url, str(home / f"n{i}"), str(seconds), f"n{i}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(nodes)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    done = [json.loads(proc.communicate(timeout=seconds + 120)[0]) for proc in procs]
    return {
        "nodes": nodes,
        "writes_per_s": round(sum(d["writes"] for d in done) / seconds, 1),
        "recalls_per_s": round(sum(d["recalls"] for d in done) / seconds, 1),
    }


def _lag(url: str, home: Path, writes: int) -> dict[str, float]:
    """Node 0 writes; nodes 1 and 2 each recall until they find it: ms after the ack."""
    first, *others = (
        open_store(home / f"lag{i}", embedder=HashEmbedder(), store_url=url) for i in range(3)
    )
    try:
        for other in others:
            other.recall("warm up")
        lags = []
        for i in range(writes):
            memory = first.remember(f"lag note {i}: the lq{i}z queue backed up")
            acked = time.perf_counter()
            for other in others:
                while True:
                    hits = other.recall(f"lq{i}z", recipe="bm25", limit=1).hits
                    if hits and hits[0].memory.id == memory.id:
                        break
                    time.sleep(0.001)
                lags.append((time.perf_counter() - acked) * 1000)
    finally:
        for gm in (first, *others):
            gm.close()
    ordered = sorted(lags)
    return {
        "p50": round(float(np.percentile(ordered, 50)), 1),
        "p99": round(float(np.percentile(ordered, 99)), 1),
        "max": round(ordered[-1], 1),
    }


def run_three_nodes(
    seconds: float = 20.0, writes: int = 100, progress: Callable[[str], None] = print
) -> dict[str, Any]:
    """One node, then three on one graph: aggregate throughput; and the visibility lag."""
    machine_start = machine_ms()
    with tempfile.TemporaryDirectory(prefix="team-nodes-") as tmp:
        home = Path(tmp)
        with servers.standalone(home / "server") as server:
            runs = []
            for nodes in (1, 3):
                progress(f"{nodes} node(s), {seconds:g} s")
                runs.append(_nodes_at_once(server.store_url(f"load{nodes}"), home, nodes, seconds))
            progress(f"visibility lag over {writes} writes, two nodes looking")
            lag = _lag(server.store_url("lag"), home, writes)
    return {
        "benchmark": "team-server-nodes",
        "machine_ms": {"start": machine_start, "end": machine_ms()},
        "cores": os.cpu_count(),
        "seconds": seconds,
        "mix": "each node: store one note, recall four times, in a loop (hash embedder)",
        "runs": runs,
        "visibility_lag_ms": lag,
    }
