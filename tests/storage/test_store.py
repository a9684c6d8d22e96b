"""The store on disk: one process holds it, a second is told who; writes are atomic."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import InvalidInput, StorageError, StoreLocked
from graphmem.models import Memory, utcnow
from graphmem.service import GraphMemory
from graphmem.settings import load_settings
from graphmem.storage import engines
from graphmem.storage.kuzu import connection, opening
from graphmem.storage.locking import HOLDER_FILE

HOLDER = textwrap.dedent(
    """
    import select, sys
    from graphmem.embeddings.hashing import HashEmbedder
    from graphmem.service import open_store

    gm = open_store(sys.argv[1], embedder=HashEmbedder())
    gm.remember("written by the holder process")
    print("ready", flush=True)
    select.select([sys.stdin], [], [], 10.0)  # hold the store until told to stop, 10 s at most
    gm.close()
    """
)


def quick_open(path: Path) -> GraphMemory:
    settings = load_settings(path, environ={}, overrides={"lock_timeout": 0.5})
    return GraphMemory(settings, embedder=HashEmbedder())


def test_second_process_gets_store_locked_naming_the_holder_then_opens_after_it_exits(
    store_path: Path, cli_env: dict[str, str]
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(store_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=cli_env,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "ready"

        with pytest.raises(StoreLocked) as caught:
            quick_open(store_path)
        assert caught.value.fields["pid"] == holder.pid
        assert str(holder.pid) in caught.value.message
        assert caught.value.exit_code == 4

        holder.stdin.write("stop\n")
        holder.stdin.flush()
        assert holder.wait(timeout=10) == 0

        gm = quick_open(store_path)
        try:
            assert [m.content for m in gm.list().memories] == ["written by the holder process"]
        finally:
            gm.close()
    finally:
        if holder.poll() is None:
            os.kill(holder.pid, signal.SIGKILL)
            holder.wait(timeout=10)


def test_an_open_store_records_its_holder_and_removes_the_record_on_close(
    gm: GraphMemory, store_path: Path
) -> None:
    record = json.loads((store_path / HOLDER_FILE).read_text(encoding="utf-8"))
    assert record["pid"] == os.getpid()
    gm.close()
    assert not (store_path / HOLDER_FILE).exists()


def test_a_closed_store_refuses_work_with_a_storage_error(gm: GraphMemory) -> None:
    gm.close()
    gm.close()  # closing twice is harmless
    with pytest.raises(StorageError, match="closed"):
        gm.list()


def test_memories_persist_across_close_and_reopen(
    gm: GraphMemory, reopen: Callable[..., GraphMemory]
) -> None:
    stored = gm.remember_many([{"content": f"persisted {i}", "tags": ["p"]} for i in range(3)])
    gm.close()
    again = reopen()
    assert [again.get(m.id) for m in stored] == stored
    assert again.stats().missing_vectors == 0


@pytest.mark.parametrize("count", [3, 300], ids=["row by row", "bulk copy"])
def test_a_batch_keeps_every_field_whichever_way_it_is_written(
    gm: GraphMemory, reopen: Callable[..., GraphMemory], count: int
) -> None:
    items = [
        {
            "content": f"payments {i} timed out after the deploy",
            "title": f"incident {i}",
            "type": "semantic",
            "kind": "incident",
            "tags": ["pay", f"t{i % 3}"],
            "context": "prod",
            "service": "payments",
            "importance": 0.7,
            "metadata": {"ticket": f"PAY-{i}", "nested": {"n": i}},
            "created_at": "2024-03-01T10:00:00+00:00",
            "valid_from": "2024-03-02T00:00:00+00:00",
            "session_id": f"s{i % 2}",
        }
        for i in range(count)
    ]
    stored = gm.remember_many(items, batch_size=count)
    gm.close()
    again = reopen()
    assert [again.get(m.id) for m in stored] == stored
    assert again.cypher("MATCH (m:Memory) RETURN DISTINCT m.access_count").rows == [[0]]
    assert again.recall("PAY-2 incident", limit=1).hits[0].memory.id == stored[2].id


def test_a_failed_batch_insert_leaves_no_rows_behind(gm: GraphMemory) -> None:
    now = utcnow()
    memories = [
        Memory(
            id=f"01TESTBATCH00000000000000{i}", content=f"batch {i}", created_at=now, updated_at=now
        )
        for i in range(3)
    ]
    wrong = np.zeros((3, 7), dtype=np.float32)  # not the space's 384 dims
    with pytest.raises(InvalidInput, match="dims"):
        gm.store.memories.insert(memories, wrong, gm.embedder.space)
    assert gm.stats().total == 0
    assert gm.list().memories == []
    gm.remember("the store still takes writes")
    assert gm.stats().total == 1


def test_cypher_results_are_json_friendly(gm: GraphMemory) -> None:
    memory = gm.remember("dated", created_at="2022-05-25T15:00:00")
    result = gm.cypher("MATCH (m:Memory) RETURN m.id, m.created_at, m")
    assert result.columns[:2] == ["m.id", "m.created_at"]
    row = result.rows[0]
    assert row[0] == memory.id
    assert row[1] == "2022-05-25T15:00:00+00:00"  # stored as UTC, written with its offset
    json.dumps(result.rows)  # nodes included
    assert row[2]["content"] == "dated"


def test_cypher_write_with_write_flag_changes_the_store(gm: GraphMemory) -> None:
    memory = gm.remember("about to be canonical")
    gm.cypher(
        "MATCH (m:Memory {id:$id}) SET m.lifecycle='canonical'", {"id": memory.id}, write=True
    )
    assert gm.get(memory.id).lifecycle == "canonical"
    assert gm.stats().by_lifecycle == {"canonical": 1}


@contextmanager
def reading_meanwhile(read: Callable[[], object]) -> Iterator[list[BaseException]]:
    """Four threads call `read` without pause until the block ends; yields what they raised."""
    stop = threading.Event()
    failures: list[BaseException] = []

    def keep_reading() -> None:
        while not stop.is_set():
            try:
                read()
            except BaseException as exc:
                failures.append(exc)
                return

    readers = [threading.Thread(target=keep_reading) for _ in range(4)]
    for thread in readers:
        thread.start()
    try:
        yield failures
    finally:
        stop.set()
        for thread in readers:
            thread.join(timeout=60)


def test_a_large_batch_commits_while_other_threads_keep_reading(gm: GraphMemory) -> None:
    """Big batches COPY their vectors, and Kùzu checkpoints at such a commit: it must wait
    for reads in flight instead of timing out while they run."""
    gm.remember("seed note about queues")

    def read() -> None:
        gm.recall("queues", limit=3)
        gm.store.conn.read("MATCH (m:Memory) RETURN m.id, m.content, m.search_text")

    with reading_meanwhile(read) as failures:
        for batch in range(3):
            gm.remember_many([{"content": f"batch {batch} note {i}"} for i in range(300)])
    assert failures == []
    assert gm.stats().vectors == 901


def test_checkpoints_of_a_growing_log_and_of_a_backup_wait_for_reads_in_flight(
    gm: GraphMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kùzu 0.11.3 deadlocks when it checkpoints beside a read and then drops the commit.
    With the threshold at zero every write checkpoints, while four threads keep reading."""
    monkeypatch.setattr(connection, "CHECKPOINT_WAL_BYTES", 0)

    def read() -> None:
        gm.store.conn.read("MATCH (m:Memory) WHERE m.content <> $x RETURN count(*)", {"x": ""})

    with reading_meanwhile(read) as failures:
        ids = [gm.remember(f"note {i} about the write-ahead log").id for i in range(20)]
        info = gm.backup(tmp_path / "backup")
    assert failures == []
    assert not (gm.store.home / gm.store.conn.engine.wal_file).exists(), (
        "the last write checkpointed"
    )
    assert info.memories == 20
    assert gm.stats().total == 20
    assert gm.get(ids[-1]).content == "note 19 about the write-ahead log"


def test_a_log_left_past_the_threshold_is_checkpointed_after_the_next_commit_not_inside_it(
    gm: GraphMemory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(connection, "CHECKPOINT_WAL_BYTES", 1 << 40)
    gm.remember_many([{"content": f"note {i} written while the log grows"} for i in range(3)])
    wal = gm.store.home / gm.store.conn.engine.wal_file
    assert wal.stat().st_size > 0
    monkeypatch.setattr(connection, "CHECKPOINT_WAL_BYTES", 0)
    with gm.store.transaction():
        assert wal.exists(), "no checkpoint inside the transaction"
        gm.store.meta_set("probe", "1")
    assert not wal.exists()
    assert "checkpoint" not in caplog.text


def test_kuzu_page_cache_follows_the_store_size_within_what_kuzu_would_take(
    tmp_path: Path,
) -> None:
    """Kùzu's default page cache is 80% of the machine's memory, set up at every open.
    LadybugDB keeps its default: its checkpoint fails once the store outgrows the pool."""
    assert opening.buffer_pool_bytes(tmp_path, engines.LADYBUG) == 0
    engine = engines.KUZU
    assert opening.buffer_pool_bytes(tmp_path, engine) == opening.MIN_BUFFER_POOL
    with open(tmp_path / engine.db_file, "wb") as db:
        db.truncate(600 << 20)  # sparse: the size is what counts
    assert opening.buffer_pool_bytes(tmp_path, engine) == max(opening.MIN_BUFFER_POOL, 1800 << 20)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    with open(tmp_path / engine.db_file, "wb") as db:
        db.truncate(memory)
    assert opening.buffer_pool_bytes(tmp_path, engine) == 0, "Kùzu's own default, not more"


def test_table_names_see_a_table_made_or_dropped_through_cypher(gm: GraphMemory) -> None:
    assert "Scratch" not in gm.store.conn.table_names()
    gm.cypher("CREATE NODE TABLE Scratch(id STRING PRIMARY KEY)", write=True)
    assert "Scratch" in gm.store.conn.table_names()
    gm.cypher("DROP TABLE Scratch", write=True)
    assert "Scratch" not in gm.store.conn.table_names()
