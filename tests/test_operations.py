"""Backup and restore: consistent while serving, careful with a live store."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from graphmem.daemon.client import connect
from graphmem.daemon.owner import Owner
from graphmem.daemon.paths import live_owner
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import Conflict, InvalidInput, SchemaError
from graphmem.operations import restore
from graphmem.service import GraphMemory
from graphmem.settings import load_settings
from graphmem.storage.kuzu.backup import MANIFEST
from tests.servers.falkordb_servers import Server, node_data_dir


def settings_for(path: Path):  # type: ignore[no-untyped-def]
    return load_settings(path, environ={"GRAPHMEM_EMBEDDING_PROVIDER": "hash"})


def test_backup_while_writes_go_on_holds_a_consistent_store(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "live")
    owner = Owner(GraphMemory(settings, embedder=HashEmbedder()))
    serving = threading.Thread(target=owner.serve, daemon=True)
    serving.start()
    try:
        deadline = time.monotonic() + 30
        while live_owner(settings.home) is None and time.monotonic() < deadline:
            serving.join(timeout=0.05)
        writer_client, backup_client = connect(settings), connect(settings)
        assert writer_client is not None and backup_client is not None
        done = threading.Event()

        def keep_writing() -> None:
            batch = 0
            while not done.is_set() and batch < 200:
                writer_client.remember_many(
                    [{"content": f"batch {batch} note {i}"} for i in range(10)]
                )
                batch += 1

        writer = threading.Thread(target=keep_writing)
        writer.start()
        info = backup_client.backup(tmp_path / "backup")
        done.set()
        writer.join(timeout=60)
        writer_client.close()
        backup_client.close()
    finally:
        owner.stop()
        serving.join(timeout=30)

    manifest = json.loads((tmp_path / "backup" / MANIFEST).read_text())
    assert manifest["memories"] == info.memories
    report = restore(tmp_path / "backup", settings_for(tmp_path / "copy"))
    with GraphMemory(settings_for(tmp_path / "copy"), embedder=HashEmbedder()) as copy:
        stats = copy.stats()
        assert stats.total == info.memories == report.backup.memories
        assert stats.missing_vectors == 0, "every memory in the copy has its vector"
        assert not copy.db_status().pending


@pytest.fixture
def backed_up(tmp_path: Path) -> Path:
    with GraphMemory(settings_for(tmp_path / "source"), embedder=HashEmbedder()) as gm:
        gm.remember_many([{"content": f"note {i}"} for i in range(5)])
        gm.backup(tmp_path / "backup")
    return tmp_path / "backup"


def test_restore_refuses_to_overwrite_memories_without_force(
    tmp_path: Path, backed_up: Path
) -> None:
    target = settings_for(tmp_path / "target")
    with GraphMemory(target, embedder=HashEmbedder()) as gm:
        kept = gm.remember("precious note").id
    with pytest.raises(Conflict, match="--force"):
        restore(backed_up, target)
    with GraphMemory(target, embedder=HashEmbedder()) as gm:
        assert gm.get(kept).content == "precious note"
    report = restore(backed_up, target, force=True)
    assert report.previous_kept_at and Path(report.previous_kept_at).exists()
    with GraphMemory(target, embedder=HashEmbedder()) as gm:
        assert gm.stats().total == 5


def test_restore_refuses_a_live_store_unless_forced_and_then_stops_its_owner(
    tmp_path: Path, backed_up: Path
) -> None:
    target = settings_for(tmp_path / "target")
    owner = Owner(GraphMemory(target, embedder=HashEmbedder()))
    serving = threading.Thread(target=owner.serve, daemon=True)
    serving.start()
    try:
        deadline = time.monotonic() + 30
        while live_owner(target.home) is None and time.monotonic() < deadline:
            serving.join(timeout=0.05)
        with pytest.raises(Conflict, match="live"):
            restore(backed_up, target)
    finally:
        owner.stop()
        serving.join(timeout=30)
    assert restore(backed_up, target).backup.memories == 5  # an empty store needs no force


def test_backup_refuses_a_non_empty_target_and_a_path_inside_the_store(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "file").write_text("x")
    with GraphMemory(settings_for(tmp_path / "s"), embedder=HashEmbedder()) as gm:
        with pytest.raises(Conflict):
            gm.backup(tmp_path / "full")
        with pytest.raises(InvalidInput):
            gm.backup(tmp_path / "s" / "inner")


def test_restore_rejects_what_is_not_a_backup_or_is_too_new(
    tmp_path: Path, backed_up: Path
) -> None:
    with pytest.raises(InvalidInput, match="not a graphmem backup"):
        restore(tmp_path, settings_for(tmp_path / "t"))
    manifest = json.loads((backed_up / MANIFEST).read_text())
    (backed_up / MANIFEST).write_text(json.dumps({**manifest, "schema_version": 9999}))
    with pytest.raises(SchemaError):
        restore(backed_up, settings_for(tmp_path / "t2"))


def test_a_team_graphs_backup_restores_into_it_replacing_what_it_held(
    tmp_path: Path, falkordb_server: Server
) -> None:
    settings = settings_for(node_data_dir(tmp_path / "node", falkordb_server.store_url("team")))
    with GraphMemory(settings, embedder=HashEmbedder()) as gm:
        kept = [gm.remember(f"team note {i}").id for i in range(3)]
        gm.backup(tmp_path / "backup")
        gm.delete(kept[0])
        later = gm.remember("written after the backup").id
    with pytest.raises(Conflict, match="--force"):
        restore(tmp_path / "backup", settings)
    report = restore(tmp_path / "backup", settings, force=True)
    assert report.path == str(settings.store_url) and report.backup.memories == 3
    with GraphMemory(settings, embedder=HashEmbedder()) as gm:
        assert {m.id for m in gm.list(limit=10).memories} == set(kept)
        assert later not in {h.memory.id for h in gm.recall("written after the backup").hits}
        assert gm.recall("team note", recipe="bm25", limit=5).hits
