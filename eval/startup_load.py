"""Recall through the owner while it works through a backlog it found at start: a store whose
memories wait for extraction (imported with extraction off), served by an owner with extraction
on, as a new user's first start after an import meets it.

The store is copied first, so every run starts from the same backlog. Recall is timed on the
copy served idle (an owner with extraction off), then from the start of an owner that extracts,
for `seconds`; both paced as an agent asks, a query and then `think` seconds. The result says
how fast the backlog drained meanwhile, since background work that never runs would pass the
latency test too.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from eval.owner import served
from eval.steward_load import percentiles, queries_from

IDLE_QUERIES = 200


def run_startup_load(
    store: Path,
    embedding: str,
    *,
    seconds: float = 60.0,
    think: float = 0.1,
    multihop: bool = False,
) -> dict[str, Any]:
    """Idle recall latency, then recall latency and the backlog's drain during an owner's
    first `seconds` on a copy of `store`. With `multihop`, `recall_multihop` is timed instead:
    the entity graph it walks is what the backlog keeps changing."""
    with tempfile.TemporaryDirectory(prefix="graphmem-startup-") as tmp:
        home = Path(tmp) / "store"
        shutil.copytree(store, home, ignore=shutil.ignore_patterns("owner.*", "*.lock"))
        with served(home, embedding) as asker:
            texts = [m.content for m in asker.list(limit=1000).memories]
            queries = queries_from(texts, 500, seed=7)
            ask = asker.recall_multihop if multihop else asker.recall
            for query in queries[:20]:  # warm: columns read, caches filled
                ask(query)
            idle = _paced(ask, queries, think, count=IDLE_QUERIES)
            memories = asker.stats().total
        started = time.perf_counter()
        with served(home, embedding, extract=True) as asker:
            up = time.perf_counter() - started
            before = asker.stats().backlog
            ask = asker.recall_multihop if multihop else asker.recall
            busy = _paced(ask, queries, think, seconds=seconds)
            after = asker.stats().backlog
            elapsed = time.perf_counter() - started - up
    idle_stats, busy_stats = percentiles(idle), percentiles(busy)
    drained = before.get("extraction", 0) - after.get("extraction", 0)
    return {
        "memories": memories,
        "embedding": embedding,
        "timed": "recall_multihop" if multihop else "recall",
        "think_seconds": think,
        "owner_start_seconds": round(up, 2),
        "backlog_at_start": before,
        "backlog_at_end": after,
        "extracted_per_second": round(drained / elapsed, 1),
        "recall_idle": idle_stats,
        "recall_during_backlog": busy_stats,
        "p50_ratio": round(busy_stats["p50_ms"] / max(idle_stats["p50_ms"], 1e-3), 2),
        "p95_ratio": round(busy_stats["p95_ms"] / max(idle_stats["p95_ms"], 1e-3), 2),
    }


def run_walk_after_write(store: Path, embedding: str, *, rounds: int = 30) -> dict[str, Any]:
    """`recall_multihop` right after a write, as an agent storing and asking in turn meets it:
    on a copy of a settled `store`, served by an owner that extracts, each round stores a
    memory, waits until it is extracted (the entity graph changed), then times the walk that
    comes first after the change, and one more."""
    with tempfile.TemporaryDirectory(prefix="graphmem-walk-") as tmp:
        home = Path(tmp) / "store"
        shutil.copytree(store, home, ignore=shutil.ignore_patterns("owner.*", "*.lock"))
        with served(home, embedding, extract=True) as asker:
            texts = [m.content for m in asker.list(limit=1000).memories]
            queries = queries_from(texts, 500, seed=7)
            for query in queries[:20]:
                asker.recall_multihop(query)
            first: list[float] = []
            again: list[float] = []
            for n in range(rounds):
                asker.remember(f"{texts[n % len(texts)]} (written again, round {n})")
                deadline = time.monotonic() + 60
                while asker.stats().backlog.get("extraction", 0) and time.monotonic() < deadline:
                    time.sleep(0.05)
                for took in (first, again):
                    started = time.perf_counter()
                    asker.recall_multihop(queries[n % len(queries)])
                    took.append(time.perf_counter() - started)
            memories = asker.stats().total
    return {
        "memories": memories,
        "embedding": embedding,
        "rounds": rounds,
        "first_walk_after_a_write": percentiles(first),
        "next_walk": percentiles(again),
    }


def _paced(
    ask: Callable[[str], Any],
    queries: Sequence[str],
    think: float,
    *,
    count: int | None = None,
    seconds: float | None = None,
) -> list[float]:
    """Query after query with `think` seconds between, `count` of them or for `seconds`."""
    took: list[float] = []
    deadline = None if seconds is None else time.monotonic() + seconds
    while (count is None or len(took) < count) and (
        deadline is None or time.monotonic() < deadline
    ):
        started = time.perf_counter()
        ask(queries[len(took) % len(queries)])
        took.append(time.perf_counter() - started)
        time.sleep(think)
    return took
