"""Lease: background work that must run once per store (the steward, extraction's backlog, the
stream's trimming) runs on the node that holds the work's lease in the server
(docs/adr/0011-falkordb-engine.md).

A lease is a key on the graph's slot, `{GRAPH}:lease:<work>`, holding the holder's node id,
set with NX and a time to live. The holder renews it (every third of the time, say) with a
script that extends it only while it still holds it, and releases it the same way; the other
nodes try to take it at their own ticks. Work under a lease stays idempotent, as on one node
(a pending row is deleted in the commit that does its work), so a lease that lapses mid-run
repeats work, never loses it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from graphmem.storage.falkordb.connection import FalkorConnection

TTL_SECONDS = 30.0
RETRY_SECONDS = 0.5  # how often a node waiting for a lease tries again
_RENEW = (
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "
    "return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"
)
_RELEASE = (
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
)


class Lease:
    def __init__(
        self, conn: FalkorConnection, work: str, *, ttl: float = TTL_SECONDS, key: str = ""
    ) -> None:
        """`key`: a key of the server's rather than the graph's, for work that must run once
        per server whichever graph it is for."""
        self.conn = conn
        self.key = key or conn.url.key(f"lease:{work}")
        self.ttl_ms = max(1, int(ttl * 1000))

    @property
    def _client(self) -> Any:
        return self.conn.client

    def acquire(self) -> bool:
        """Take the lease, or keep it when this node holds it already; False when another
        node holds it."""
        if self._client.set(self.key, self.conn.node_id, nx=True, px=self.ttl_ms):
            return True
        return self.renew()

    def renew(self) -> bool:
        """Extend the lease while this node holds it; False when it lapsed or another holds it."""
        return bool(self._client.eval(_RENEW, 1, self.key, self.conn.node_id, self.ttl_ms))

    def release(self) -> None:
        """Give it up, if this node holds it (never another's)."""
        self._client.eval(_RELEASE, 1, self.key, self.conn.node_id)

    def holder(self) -> str | None:
        found = self._client.get(self.key)
        return str(found) if found is not None else None

    @contextmanager
    def holding(self, *, wait: float = 0.0) -> Iterator[bool]:
        """Hold the lease for the block, renewed every third of its time to live, released at
        its end; yields False (holding nothing) when another node kept it for `wait` s."""
        deadline = time.monotonic() + wait
        while not self.acquire():
            if time.monotonic() >= deadline:
                yield False
                return
            time.sleep(RETRY_SECONDS)
        done = threading.Event()

        def renew() -> None:
            while not done.wait(self.ttl_ms / 3000):
                try:
                    self.renew()
                except Exception:  # the server is away: the lease may lapse, work repeats
                    continue

        renewer = threading.Thread(target=renew, name="graphmem-lease", daemon=True)
        renewer.start()
        try:
            yield True
        finally:
            done.set()
            renewer.join()
            if not self.conn.closed:
                self.release()
