"""Many agents, one store: concurrent MCP clients (real stdio server processes) and CLI processes
doing mixed store/recall/update operations, then a check that every acknowledged write is there.

Everything runs on this machine against a temp store; loops are bounded by the operation count.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from eval.embedding import environ
from eval.metrics import percentile
from graphmem.daemon.client import stop_owner
from graphmem.service import GraphMemory
from graphmem.settings import load_settings


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.acked: dict[str, str] = {}  # id -> content last acknowledged

    def record(self, op: str, seconds: float) -> None:
        with self.lock:
            self.latency[op].append(seconds * 1000)

    def fail(self, message: str) -> None:
        with self.lock:
            self.errors.append(message[:300])


def _pick(rng: random.Random, own: list[str]) -> str:
    roll = rng.random()
    if own and roll < 0.2:
        return "update"
    return "recall" if roll < 0.5 else "store"


async def _mcp_worker(name: str, ops: int, env: dict[str, str], tally: Tally) -> None:
    rng = random.Random(name)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "graphmem", "serve"], env=env
    )
    own: list[str] = []
    async with Client(params) as client:
        for i in range(ops):
            op = _pick(rng, own)
            if op == "store":
                args: dict[str, Any] = {
                    "content": f"{name} note {i}: queue q{i % 17} stalled on v{i % 5}"
                }
                tool = "store_memory"
            elif op == "update":
                target = rng.choice(own)
                args = {"id": target, "content": f"{name} revised note {i} for {target}"}
                tool = "update_memory"
            else:
                args = {"query": f"why did queue q{rng.randrange(17)} stall?", "limit": 5}
                tool = "recall_memory"
            started = time.perf_counter()
            result = await client.call_tool(tool, args)
            tally.record(op, time.perf_counter() - started)
            if result.is_error:
                tally.fail(f"{name} {tool}: {result.content}")
                continue
            data = result.structured_content or {}
            if op in ("store", "update"):
                with tally.lock:
                    tally.acked[data["id"]] = data["content"]
                if op == "store":
                    own.append(data["id"])


def _cli_worker(name: str, ops: int, env: dict[str, str], tally: Tally) -> None:
    rng = random.Random(name)
    own: list[str] = []
    for i in range(ops):
        op = _pick(rng, own)
        if op == "store":
            content = f"{name} note {i}: cache c{i % 11} cold after deploy"
            argv = ["store", "--content", content, "--json"]
        elif op == "update":
            target = rng.choice(own)
            content = f"{name} revised note {i} for {target}"
            argv = ["update", target, "--content", content, "--json"]
        else:
            argv = ["recall", f"why is cache c{rng.randrange(11)} cold?", "--limit", "5", "--json"]
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "graphmem", *argv],
            capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip
        tally.record(f"cli-{op}", time.perf_counter() - started)
        if proc.returncode != 0:
            tally.fail(f"{name} {argv[0]} exit {proc.returncode}: {proc.stderr.strip()}")
            continue
        if op in ("store", "update"):
            data = json.loads(proc.stdout)
            with tally.lock:
                tally.acked[data["id"]] = data["content"]
            if op == "store":
                own.append(data["id"])


def run_stress(
    *, mcp_clients: int, cli_workers: int, ops: int, cli_ops: int | None, embedding: str
) -> dict[str, Any]:
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="graphmem-stress-") as tmp:
        home = Path(tmp) / "store"
        env = {**os.environ, "GRAPHMEM_HOME": str(home), **environ(embedding),
               "GRAPHMEM_DAEMON_IDLE_TIMEOUT": "30"}  # fmt: skip
        started = time.perf_counter()
        threads = [
            threading.Thread(target=_cli_worker, args=(f"cli{n}", cli_ops or ops, env, tally))
            for n in range(cli_workers)
        ]
        for thread in threads:
            thread.start()

        async def all_mcp() -> None:
            async with anyio.create_task_group() as group:
                for n in range(mcp_clients):
                    group.start_soon(_mcp_worker, f"mcp{n}", ops, env, tally)

        try:
            anyio.run(all_mcp)
        except BaseException as exc:
            tally.fail(f"mcp clients: {type(exc).__name__}: {exc}")
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
        stop_owner(home)
        settings = load_settings(home, environ=environ(embedding))
        lost = []
        with GraphMemory(settings) as gm:
            present = gm.store.memories.get_many(list(tally.acked))
            for memory_id, content in tally.acked.items():
                if memory_id not in present or present[memory_id].content != content:
                    lost.append(memory_id)
            total = gm.stats().total
    every = [v for values in tally.latency.values() for v in values]
    return {
        "benchmark": "stress",
        "mcp_clients": mcp_clients,
        "cli_workers": cli_workers,
        "ops_per_mcp_client": ops,
        "ops_per_cli_worker": cli_ops or ops,
        "operations": len(every),
        "errors": len(tally.errors),
        "lock_errors": sum("lock" in e.lower() for e in tally.errors),
        "error_samples": tally.errors[:5],
        "acknowledged_writes": len(tally.acked),
        "lost_writes": len(lost),
        "memories_in_store": total,
        "latency_ms": {
            op: {
                "n": len(v),
                "p50": percentile(v, 50),
                "p95": percentile(v, 95),
                "mean": round(statistics.mean(v), 2),
            }
            for op, v in sorted(tally.latency.items())
        },
        "latency_ms_p95_all": percentile(every, 95) if every else None,
        "wall_seconds": round(wall, 1),
        "embedding": embedding,
    }
