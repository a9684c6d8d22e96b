"""A team's store survives its primary: a sentinel watches a primary and its replica, the nodes
find the primary through it, and `durability = replicated` acknowledges a write only once the
replica has it. The primary is killed (SIGKILL) in the middle of the writes; the sentinel
promotes the replica; the node reconnects. No acknowledged write is lost, none is stored twice,
and a call sees at most a retry (with its idempotency key, which makes the retry safe)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import StorageError
from graphmem.models import utcnow
from graphmem.service import GraphMemory, open_store
from graphmem.storage.falkordb import connection
from tests.servers.falkordb_servers import Watched

pytestmark = pytest.mark.filterwarnings("ignore:Call to '__init__' function:DeprecationWarning")

KILL_AFTER = 15  # acknowledged writes before the primary dies
WRITES = 30  # in all, bounded
TRIES = 40  # attempts of one call at most, 0.1 s apart: a failover takes ~1-2 s here


def _write_all(node: GraphMemory, acknowledged: dict[str, str], retries: dict[str, int]) -> None:
    """Each note under its own key, retried as an agent would until the store acknowledges it."""
    for i in range(WRITES):
        key = f"note-{i}"
        for attempt in range(TRIES):
            try:
                acknowledged[key] = node.remember(f"note {i} of the team", idempotency_key=key).id
                retries[key] = attempt
                break
            except StorageError:
                time.sleep(0.1)
        else:
            return  # the test fails on the missing keys


def test_killing_the_primary_loses_no_acknowledged_write_and_stores_none_twice(
    falkordb_watched: Watched, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection, "WAIT_MS", 500)
    node = open_store(
        tmp_path / "node", embedder=HashEmbedder(),
        store_url=falkordb_watched.store_url("team"), durability="replicated",
    )  # fmt: skip
    try:
        acknowledged: dict[str, str] = {}
        retries: dict[str, int] = {}
        writer = threading.Thread(target=_write_all, args=(node, acknowledged, retries))
        writer.start()
        deadline = time.monotonic() + 60
        while len(acknowledged) < KILL_AFTER:
            assert writer.is_alive() and time.monotonic() < deadline
            time.sleep(0.005)
        falkordb_watched.primary.kill()  # SIGKILL, between or inside a write
        deadline = time.monotonic() + 30
        while falkordb_watched.primary_port() != falkordb_watched.replica.port:
            assert time.monotonic() < deadline, "the sentinel did not promote the replica"
            time.sleep(0.05)
        # the new primary has no replica: each write waits for one in vain (0.5 s here), fails
        # saying it is written, and its retry finds it by its key
        writer.join(120)
        assert not writer.is_alive()

        assert len(acknowledged) == WRITES
        assert max(retries.values()) < TRIES  # each call succeeded, after retries at most
        assert sum(1 for n in retries.values() if n) >= 1  # the failover was seen
        stored = node.store.memories.stored_by_keys(
            [f"key:{k}" for k in acknowledged], now=utcnow()
        )
        assert {k.removeprefix("key:"): m for k, (m, _) in stored.items()} == acknowledged
        assert node.store.memories.count() == WRITES  # none twice
    finally:
        node.close()
