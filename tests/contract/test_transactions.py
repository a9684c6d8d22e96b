"""What every engine must guarantee the store, tested the same on each (`make test` runs this
folder on Kùzu and on LadybugDB): all of a transaction or none of it, for readers too, across a
rollback, a reopen and a kill -9; and a store of another engine refused.

These hold the store's contract, not an engine's: they go through the store's own writes
(memories with their vectors, entities) and its transaction API."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import StorageError
from graphmem.service import GraphMemory, open_store
from graphmem.storage import engines

BATCH = 5
ROUNDS = 30  # of BATCH memories each, while two readers count


def count(gm: GraphMemory, table: str) -> int:
    return int(gm.cypher(f"MATCH (n:{table}) RETURN count(*)").rows[0][0])


def test_a_rolled_back_transaction_leaves_nothing_even_after_a_reopen(
    gm: GraphMemory, reopen: Callable[..., GraphMemory]
) -> None:
    kept = gm.remember("kept: written before the failed transaction")
    tables = {t: count(gm, t) for t in ("Memory", "Pending", "StoreKey")}
    with pytest.raises(RuntimeError), gm.store.transaction():
        gm.remember_many([{"content": f"lost {i}"} for i in range(BATCH)])
        gm.remember("lost too", idempotency_key="lost-key")
        raise RuntimeError("the caller fails before the commit")
    assert {t: count(gm, t) for t in tables} == tables
    assert [h.memory.id for h in gm.recall("lost", limit=10).hits] == [kept.id]
    gm.close()
    again = reopen()
    assert {t: count(again, t) for t in tables} == tables
    assert again.stats().missing_vectors == 0


def test_a_failed_statement_rolls_back_its_whole_transaction(gm: GraphMemory) -> None:
    with pytest.raises(StorageError), gm.store.transaction():
        gm.remember("written before the bad statement")
        gm.store.conn.execute("MATCH (m:NoSuchTable) RETURN m")
    assert count(gm, "Memory") == 0


@pytest.mark.falkordb
def test_after_commit_work_runs_on_commit_only(gm: GraphMemory) -> None:
    ran: list[str] = []
    with gm.store.transaction():
        gm.store.after_commit(lambda: ran.append("committed"))
        assert ran == []
    with pytest.raises(RuntimeError), gm.store.transaction():
        gm.store.after_commit(lambda: ran.append("rolled back"))
        raise RuntimeError
    assert ran == ["committed"]


def test_readers_never_see_half_a_transaction(gm: GraphMemory) -> None:
    """A writer commits transactions of BATCH memories, each stored by a statement of its own,
    while readers count them: every count they see is a whole number of transactions."""
    seen: list[int] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            seen.append(gm.store.memories.count())
            time.sleep(0.001)  # a reader that never yields starves the writer of the GIL

    readers = [threading.Thread(target=read) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for round_ in range(ROUNDS):
            with gm.store.transaction():
                for i in range(BATCH):
                    gm.remember(f"round {round_} item {i}")
    finally:
        stop.set()
        for reader in readers:
            reader.join(30)
    assert seen, "the readers read nothing"
    assert all(n % BATCH == 0 for n in seen), sorted(set(seen))
    assert gm.store.memories.count() == ROUNDS * BATCH


WRITER = textwrap.dedent("""
    import sys
    from graphmem import open_store
    from graphmem.embeddings.hashing import HashEmbedder
    with open_store(sys.argv[1], embedder=HashEmbedder(), extract_on_write=False) as gm:
        for round_ in range(100_000):  # until killed
            gm.remember_many([{"content": f"r{round_} i{i}"} for i in range(int(sys.argv[2]))])
            print(round_, flush=True)
""")


@pytest.mark.parametrize("batch", [BATCH, 300], ids=["logged", "copied"])
def test_kill_9_during_writes_reopens_consistent(tmp_path: Path, batch: int) -> None:
    """Killed at some point of a stream of batches (logged, or COPYed past 256), the store
    reopens with whole batches only, each memory with its vector, and takes writes again."""
    home = tmp_path / "store"
    env = {**os.environ, "GRAPHMEM_ENGINE": engines.DEFAULT.name}
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(home), str(batch)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert writer.stdout is not None
    acknowledged = -1
    deadline = time.monotonic() + 120
    while acknowledged < 2 and time.monotonic() < deadline:  # a few batches in, mid-write
        line = writer.stdout.readline()
        if not line:
            break
        acknowledged = int(line)
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(30)
    assert acknowledged >= 2, writer.stderr.read() if writer.stderr else ""
    with open_store(home, embedder=HashEmbedder(), extract_on_write=False) as gm:
        total = gm.store.memories.count()
        assert total % batch == 0 and total >= (acknowledged + 1) * batch
        assert gm.stats().missing_vectors == 0
        gm.remember("the store takes writes again")
        assert gm.store.memories.count() == total + 1


def test_a_store_of_another_engine_is_refused(gm: GraphMemory, store_path: Path) -> None:
    other = engines.LADYBUG if gm.store.conn.engine is engines.KUZU else engines.KUZU
    gm.close()
    with pytest.raises(StorageError, match=f"not {other.name}"):
        open_store(store_path, embedder=HashEmbedder(), engine=other.name)
