"""`python -m eval failover`: a team store's primary killed again and again under load.

A sentinel watches a primary and its replica (tests/servers); graphmem nodes find the primary
through it and write with `durability = "replicated"`, each note under its own idempotency key,
retrying a failed call as an agent would. Every few seconds the primary is killed (SIGKILL);
the sentinel promotes the replica, and a new replica takes the dead primary's place, so that
the next kill has one to fail over to. At the end every key an acknowledgement was given for
must hold the memory it named (lost = 0), and no key may hold two (twice = 0)."""

from __future__ import annotations

import itertools
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from eval.metrics import percentile
from graphmem import GraphMemory, open_store
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import StorageError
from graphmem.models import utcnow
from graphmem.storage.falkordb import connection

RETRY_EVERY = 0.1  # s between an agent's tries of one call
TRIES = 300  # of one call at most: 30 s, far above a failover's
WAIT_MS = 1000  # a commit's wait for its replica (the new primary has none for a while)
PROMOTION_TIMEOUT = 30.0


class Writers:
    """Threads that each store notes under keys of their own until stopped, retrying a call
    until it is acknowledged (or TRIES run out)."""

    def __init__(self, nodes: list[GraphMemory]) -> None:
        self.acknowledged: dict[str, str] = {}  # key -> memory id
        self.gave_up: list[str] = []
        self.retries: list[int] = []
        self.ack_times: list[float] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._write, args=(node, f"n{i}"), daemon=True)
            for i, node in enumerate(nodes)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(TRIES * RETRY_EVERY + 30)

    def _write(self, node: GraphMemory, name: str) -> None:
        for i in itertools.count():
            if self._stop.is_set():
                return
            key = f"{name}-{i}"
            for attempt in range(TRIES):
                try:
                    memory = node.remember(f"note {i} of {name}", idempotency_key=key)
                except StorageError:
                    time.sleep(RETRY_EVERY)
                    continue
                with self._lock:
                    self.acknowledged[key] = memory.id
                    self.retries.append(attempt)
                    self.ack_times.append(time.monotonic())
                break
            else:
                self.gave_up.append(key)

    def count(self) -> int:
        with self._lock:
            return len(self.acknowledged)


def run(*, kills: int = 5, nodes: int = 2, between: float = 3.0) -> dict[str, Any]:
    from tests.servers import falkordb_servers as servers

    connection.WAIT_MS = WAIT_MS
    with tempfile.TemporaryDirectory(prefix="eval-failover-") as tmp:
        home = Path(tmp)
        with servers.watched_primary(home / "servers") as watched:
            primary, replica = watched.primary, watched.replica
            started: list[servers.Server] = []
            url = watched.store_url("team")
            members = [_node(home / f"node{i}", url) for i in range(nodes)]
            writers = Writers(members)
            outages: list[float] = []
            promotions: list[float] = []
            try:
                writers.start()
                for kill in range(kills):
                    time.sleep(between)
                    before = writers.count()
                    killed_at = time.monotonic()
                    primary.kill()
                    promotions.append(_promoted(watched, replica, killed_at))
                    outages.append(_next_ack(writers, before, killed_at))
                    # the dead primary's place: a new replica of the new primary
                    primary, replica = (
                        replica,
                        servers.start_replica(
                            servers.Server(home / "servers" / f"replica{kill + 1}"), replica
                        ),
                    )
                    started.append(replica)
                    _known_to_sentinel(watched, replica)
                    print(
                        f"kill {kill + 1}: promoted in {promotions[-1]:.2f} s, writes again "
                        f"after {outages[-1]:.2f} s, {writers.count()} acknowledged",
                        file=sys.stderr,
                    )
                time.sleep(between)
            finally:
                writers.stop()
                try:
                    found = _check(members[0], writers.acknowledged)
                finally:
                    for member in members:
                        member.close()
                    for server in started:
                        server.stop()
    elapsed = writers.ack_times[-1] - writers.ack_times[0] if writers.ack_times else 0.0
    return {
        "benchmark": "failover",
        "kills": kills,
        "nodes": nodes,
        "durability": "replicated",
        "acknowledged_writes": len(writers.acknowledged),
        "acknowledged_writes_lost": found["lost"],
        "stored_twice": found["twice"],
        "calls_given_up": len(writers.gave_up),
        "writes_per_s": round(len(writers.acknowledged) / elapsed, 1) if elapsed else None,
        "promotion_s": [round(s, 2) for s in promotions],
        "no_write_acknowledged_for_s": [round(s, 2) for s in outages],
        "retries_per_call_max": max(writers.retries, default=0),
        "retries_per_call_p99": percentile([float(r) for r in writers.retries], 99),
        "calls_retried": sum(1 for r in writers.retries if r),
    }


def _node(home: Path, url: str) -> GraphMemory:
    return open_store(
        home, embedder=HashEmbedder(), extract_on_write=False, store_url=url,
        durability="replicated",
    )  # fmt: skip


def _promoted(watched: Any, replica: Any, since: float) -> float:
    """Seconds from the kill until the sentinel names `replica` as the primary."""
    deadline = since + PROMOTION_TIMEOUT
    while watched.primary_port() != replica.port:
        if time.monotonic() > deadline:
            raise RuntimeError("the sentinel did not promote the replica")
        time.sleep(0.02)
    return time.monotonic() - since


def _next_ack(writers: Writers, before: int, since: float) -> float:
    """Seconds from the kill until a write made after it is acknowledged."""
    deadline = since + PROMOTION_TIMEOUT
    while writers.count() <= before + 1:  # the one in flight at the kill may land at once
        if time.monotonic() > deadline:
            raise RuntimeError("no write was acknowledged after the failover")
        time.sleep(0.01)
    return time.monotonic() - since


def _known_to_sentinel(watched: Any, replica: Any) -> None:
    """The sentinel has found the new replica up, so the next kill has a replica to promote."""
    deadline = time.monotonic() + PROMOTION_TIMEOUT
    while True:
        with watched.sentinel.client() as client:
            known = client.sentinel_slaves("graphmem")
        if any(
            int(r["port"]) == replica.port and not r.get("is_disconnected")
            and not r.get("is_sdown") for r in known
        ):  # fmt: skip
            return
        if time.monotonic() > deadline:
            raise RuntimeError("the sentinel did not find the new replica")
        time.sleep(0.1)


def _check(node: GraphMemory, acknowledged: dict[str, str]) -> dict[str, int]:
    """Acknowledged keys whose memory is missing or another; memories beyond one a note."""
    stored = node.store.memories.stored_by_keys([f"key:{k}" for k in acknowledged], now=utcnow())
    held = {k.removeprefix("key:"): m for k, (m, _) in stored.items()}
    lost = sum(1 for key, memory in acknowledged.items() if held.get(key) != memory)
    # each key's note has a text of its own: a text held twice is a call stored twice
    copies = node.cypher("MATCH (m:Memory) RETURN m.content, count(*)", {}).rows
    return {"lost": lost, "twice": sum(int(n) - 1 for _, n in copies)}
