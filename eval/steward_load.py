"""Recall through the store's owner while the steward runs in it: what an agent waits for when
the owner's schedule starts a run. The store's owner is started on a built store; recall is
timed idle, then again, query after query, for as long as a steward run (every scope, a dry run)
asked by another process lasts: `graphmem steward run --json`, as a person would, run after run
until as many recalls overlapped a run as were timed idle. (A second
client in this process would time its own reading of the run's findings as recall's wait.)"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from eval.owner import served

IDLE_QUERIES = 200  # and at least as many while the steward runs, over as many runs as it takes
MAX_RUNS = 30
MAX_QUERIES = 20_000  # while the run lasts: a bound, whatever happens


def queries_from(texts: Sequence[str], n: int, seed: int) -> list[str]:
    """The first words of `n` stored texts: questions that have answers in the store."""
    rng = random.Random(seed)
    return [" ".join(text.split()[:8]) for text in rng.sample(list(texts), min(n, len(texts)))]


def percentiles(times: Sequence[float]) -> dict[str, Any]:
    ordered = sorted(times)

    def at(q: float) -> float:
        return round(1000 * ordered[min(int(q * len(ordered)), len(ordered) - 1)], 2)

    return {"n": len(ordered), "p50_ms": at(0.5), "p95_ms": at(0.95), "max_ms": at(1.0)}


def run_load(
    home: Path, embedding: str, queries: Sequence[str], *, max_runs: int = MAX_RUNS
) -> dict[str, Any]:
    """Idle and busy recall latency through the owner, and the run's own time."""
    with served(home, embedding, timeout=120) as asker:
        for query in queries[:20]:  # warm: columns read, caches filled
            asker.recall(query)

        def timed(query: str) -> tuple[float, float]:
            """(when it was asked, seconds since the epoch; how long it took)"""
            at, started = time.time(), time.perf_counter()
            asker.recall(query)
            return at, time.perf_counter() - started

        idle = [timed(queries[i % len(queries)])[1] for i in range(IDLE_QUERIES)]
        command = [sys.executable, "-m", "graphmem", "steward", "run", "--home", str(home)]
        asked: list[tuple[float, float]] = []
        runs: list[tuple[float, float, int]] = []  # (started, finished, found)
        while len(runs) < max_runs and _overlapping(asked, runs) < IDLE_QUERIES:
            runner = subprocess.Popen(
                [*command, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            while runner.poll() is None and len(asked) < MAX_QUERIES:
                asked.append(timed(queries[len(asked) % len(queries)]))
            stdout, stderr = runner.communicate()
            if runner.returncode != 0:
                raise RuntimeError(f"steward run failed: {stderr[-500:]}")
            run = json.loads(stdout)
            started, finished = (
                datetime.fromisoformat(run[k]).timestamp() for k in ("started_at", "finished_at")
            )
            runs.append((started, finished, sum(run["found"].values())))
    busy = _overlapping(asked, runs, times=True)
    idle_stats, busy_stats = percentiles(idle), percentiles(busy or [0.0])
    return {
        "steward_runs": len(runs),
        "steward_run_seconds": round(statistics.median(f - s for s, f, _ in runs), 2),
        "found": runs[-1][2],
        "recall_idle": idle_stats,
        "recall_during_run": busy_stats,
        "p95_ratio": round(busy_stats["p95_ms"] / max(idle_stats["p95_ms"], 1e-3), 2),
    }


def _overlapping(
    asked: Sequence[tuple[float, float]],
    runs: Sequence[tuple[float, float, int]],
    *,
    times: bool = False,
) -> Any:
    """The recalls a run overlapped (not those while its process was starting): how many, or
    (`times`) how long each took."""
    took = [t for at, t in asked if any(at < f and at + t > s for s, f, _ in runs)]
    return took if times else len(took)
