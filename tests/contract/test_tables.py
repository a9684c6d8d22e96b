"""Copying a store table by table (graphmem.storage.protocols.Tables, what `graphmem migrate` runs)
and backups, on the engine under test: an embedded store filled through GraphMemory is copied
into it and from it into a fresh embedded store, every table with the same rows and digest on
all three, vectors byte for byte, and the copy in the middle still works as a store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import Conflict, InvalidInput
from graphmem.models import Memory, utcnow
from graphmem.service import GraphMemory, open_store
from graphmem.storage import open_store_at, read_backup_manifest
from graphmem.storage.protocols import Digest, TableSpec

pytestmark = [
    pytest.mark.falkordb,
    pytest.mark.filterwarnings("ignore:Call to '__init__' function:DeprecationWarning"),
]

VECTOR_SETS = ("Vec_", "Psg_", "Chk_")
SPACE = EmbeddingSpace("hash", "tables", 8)


def fill(gm: GraphMemory, project: Path) -> None:
    """Something in most tables: memories with vectors and passages, an idempotency key, an
    audited change, a superseded decision, entities and facts, a document, a session's review
    item, a steward run."""
    long = " ".join(f"The ledger batch {i} settles at night and retries twice." for i in range(60))
    gm.remember_many(
        [
            {"content": f"note {i}: the ledger retries {i} times", "metadata": {"n": i}}
            for i in range(40)
        ]
        + [{"content": long, "tags": ["ledger", "batch"]}]
    )
    incident = gm.remember("Migration #47 broke the orders.created_at index", idempotency_key="k")
    gm.promote_sediment(incident.id)
    old = gm.store_decision(decision="Sessions live in Redis", rationale="fast").id
    new = gm.store_decision(decision="Sessions live in Postgres", rationale="evictions").id
    gm.mark_outdated(old, reason="Redis evicted sessions", superseded_by=new)
    gm.index_triples()
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "deploys.md").write_text(
        '# Deploys\n\n## Rolling back\n\nRedeploy the previous tag. It\'s "quick" \\ safe.\n'
        "\n## Canaries\n\nOne pod first, then the rest (é, 日本).\n"
    )
    gm.index_documents([str(project / "docs")])
    gm.close_session("We decided to cache tokens for five minutes.", dry_run=False)
    gm.steward_run(scope="duplicates", dry_run=False)


@pytest.fixture
def source(tmp_path: Path) -> Any:
    project = tmp_path / "project"
    gm = open_store(project / ".graphmem", embedder=HashEmbedder())
    try:
        fill(gm, project)
        yield gm
    finally:
        gm.close()


def _copy(from_store: Any, to_store: Any, folder: Path) -> dict[str, Digest]:
    """Every table of `from_store` exported into `folder` and loaded into `to_store`; the
    exported digests."""
    folder.mkdir()
    exported = {}
    for spec in from_store.tables.specs():
        exported[spec.name] = from_store.tables.export(spec, folder)
        to_store.tables.load(spec, folder)
    return exported


def _digests(store: Any, specs: list[TableSpec]) -> dict[str, Digest]:
    return {spec.name: store.tables.digest(spec) for spec in specs}


def test_a_filled_store_copies_there_and_back_with_every_row(
    source: GraphMemory, contract_store: Any, tmp_path: Path
) -> None:
    specs = source.store.tables.specs()
    assert contract_store.tables.specs() == [s for s in specs if not s.name.startswith(VECTOR_SETS)]
    before = _digests(source.store, specs)
    rows = {name: d.rows for name, d in before.items()}
    assert rows["Memory"] >= 44 and rows["MENTIONS"] > 0 and rows["Fact"] > 0
    assert rows["Document"] == 1 and rows["SUPERSEDES"] == 1 and rows["Section"] >= 3
    assert all(rows[t] > 0 for t in ("Audit", "StoreKey", "StewardRun", "ReviewItem", "Session"))
    assert any(s.name.startswith("Psg_") and rows[s.name] > 0 for s in specs)

    assert _copy(source.store, contract_store, tmp_path / "there") == before
    assert contract_store.tables.specs() == specs  # the vector sets came with their rows
    assert _digests(contract_store, specs) == before

    back = open_store_at(tmp_path / "back")
    try:
        back.migrate()
        assert _copy(contract_store, back, tmp_path / "back-files") == before
        assert _digests(back, specs) == before
    finally:
        back.close()


def test_the_copy_answers_as_the_store_it_was_copied_from(
    source: GraphMemory, contract_store: Any, tmp_path: Path
) -> None:
    _copy(source.store, contract_store, tmp_path / "there")
    space = source.embedder.space
    ids, matrix = source.store.vectors.matrix(space)
    got_ids, got = contract_store.vectors.matrix(space)
    order = {i: n for n, i in enumerate(got_ids)}
    assert sorted(got_ids) == sorted(ids)
    assert np.array_equal(got[[order[i] for i in ids]], matrix)  # byte for byte, as vectors
    some = sorted(ids)[:5]
    assert contract_store.memories.get_many(some) == source.store.memories.get_many(some)
    found = contract_store.vectors.nearest(space, matrix[3], 1)
    assert found[0][0] == ids[3]
    # versions, their links and the session's review items read alike
    source_knowledge, knowledge = source.store.knowledge, contract_store.knowledge
    successors = knowledge.newest_successors(ids)
    assert successors == source_knowledge.newest_successors(ids) and len(successors) == 1
    for version in (*successors, *successors.values()):
        assert sorted(knowledge.chain(version), key=lambda v: v[0].id) == sorted(
            source_knowledge.chain(version), key=lambda v: v[0].id
        )
        assert knowledge.linked_memories(version) == source_knowledge.linked_memories(version)
    assert contract_store.sessions.by_client() == source.store.sessions.by_client()
    items = contract_store.sessions.review_items(session=None, status=None, action=None, limit=50)
    assert items and items == source.store.sessions.review_items(
        session=None, status=None, action=None, limit=50
    )
    # the engine's own schema records are its own still
    assert contract_store.migration_status().pending == []
    assert contract_store.migrate() == []


@pytest.mark.parametrize("engine", ["falkordb"], indirect=True)
def test_tables_bigger_than_a_batch_copy_whole(
    source: GraphMemory, contract_store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphmem.storage.falkordb import tables

    # loads in batches and exports in pages: seven rows a query, two vectors
    monkeypatch.setattr(tables, "BATCH_ROWS", 7)
    monkeypatch.setattr(tables, "BATCH_VALUES", 2 * source.embedder.space.dim)
    specs = source.store.tables.specs()
    before = _digests(source.store, specs)
    assert _copy(source.store, contract_store, tmp_path / "there") == before
    assert _digests(contract_store, specs) == before
    back = open_store_at(tmp_path / "back")
    try:
        back.migrate()
        assert _copy(contract_store, back, tmp_path / "back-files") == before
    finally:
        back.close()


def test_a_store_made_on_the_engine_copies_into_a_working_embedded_store(
    contract_store: Any, tmp_path: Path
) -> None:
    ids, now = [f"01NATIVE{i:018d}" for i in range(4)], utcnow().replace(microsecond=0)
    memories = [Memory(id=i, content=f"native {i}", created_at=now, updated_at=now) for i in ids]
    contract_store.memories.insert(memories, np.eye(4, 8, dtype=np.float32), SPACE)
    back = open_store_at(tmp_path / "back")
    try:
        back.migrate()
        _copy(contract_store, back, tmp_path / "files")
        # the copy says it is migrated to the embedded schema: nothing applied again
        assert back.migration_status().pending == [] and back.migrate() == []
        assert back.memories.get_many(ids) == {m.id: m for m in memories}
        assert back.vectors.nearest(SPACE, np.eye(4, 8, dtype=np.float32)[2], 1)[0][0] == ids[2]
    finally:
        back.close()


def test_loading_a_table_replaces_its_rows(
    source: GraphMemory, contract_store: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "files"
    _copy(source.store, contract_store, folder)
    memory = next(s for s in source.store.tables.specs() if s.name == "Memory")
    mentions = next(s for s in source.store.tables.specs() if s.name == "MENTIONS")
    want = source.store.tables.digest(memory)
    contract_store.tables.load(memory, folder)  # again: the same rows, not twice as many
    assert contract_store.tables.digest(memory) == want
    # a node table's rows took their relationships with them, as a delete does
    assert contract_store.tables.digest(mentions).rows == 0
    contract_store.tables.load(mentions, folder)
    assert contract_store.tables.digest(mentions) == source.store.tables.digest(mentions)


def test_a_backup_holds_the_store_as_it_was(
    source: GraphMemory, contract_store: Any, tmp_path: Path
) -> None:
    _copy(source.store, contract_store, tmp_path / "there")
    count = contract_store.memories.count()
    info = contract_store.backup(tmp_path / "backup")
    assert read_backup_manifest(tmp_path / "backup") == info
    assert info.memories == count
    assert info.schema_version == contract_store.migration_status().schema_version
    assert info.bytes > 0
    with pytest.raises(Conflict):
        contract_store.backup(tmp_path / "backup")
    with pytest.raises(InvalidInput):
        contract_store.backup(contract_store.home / "inside")


@pytest.mark.parametrize("engine", ["falkordb"], indirect=True)
def test_a_falkordb_backup_restores_into_another_graph(
    source: GraphMemory, contract_store: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from graphmem.storage.falkordb.backup import backup_tables, restore_tables
    from graphmem.storage.falkordb.store import FalkorStore
    from graphmem.store_url import parse_store_url

    server = request.getfixturevalue("falkordb_server")
    _copy(source.store, contract_store, tmp_path / "there")
    specs = contract_store.tables.specs()
    before = _digests(contract_store, specs)
    contract_store.backup(tmp_path / "backup")
    # a write after the backup is not in it
    contract_store.memories.delete(sorted(contract_store.memories.all_ids())[0])
    graphs = set(contract_store.conn.client.execute_command("GRAPH.LIST"))
    assert graphs == {contract_store.conn.url.graph_key}  # the backup's copy is gone

    listed, exported = backup_tables(tmp_path / "backup")
    assert listed == specs
    assert {name: Digest(**d) for name, d in exported.items()} == before
    restored = FalkorStore.open(parse_store_url(server.store_url("restored")), tmp_path / "r")
    try:
        restored.migrate()
        restore_tables(restored, tmp_path / "backup")
        assert _digests(restored, specs) == before
        assert restored.memories.count() == read_backup_manifest(tmp_path / "backup").memories
    finally:
        restored.close()


@pytest.mark.parametrize("engine", ["falkordb"], indirect=True)
def test_a_backup_in_a_cluster_copies_the_graph_on_its_shard(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from graphmem.storage.falkordb.backup import restore_tables
    from graphmem.storage.falkordb.store import FalkorStore
    from graphmem.store_url import parse_store_url

    cluster = request.getfixturevalue("falkordb_cluster")
    entry = cluster.masters[-1].port
    store = FalkorStore.open(
        parse_store_url(f"falkordb://127.0.0.1:{entry}/tables"), tmp_path / "a"
    )
    copy = FalkorStore.open(parse_store_url(f"falkordb://127.0.0.1:{entry}/copied"), tmp_path / "b")
    try:
        store.migrate()
        copy.migrate()
        ids, now = [f"01CLUSTER{i:017d}" for i in range(3)], utcnow().replace(microsecond=0)
        store.memories.insert(
            [
                Memory(id=i, content=f"cluster note {i}", created_at=now, updated_at=now)
                for i in ids
            ],
            np.eye(3, 8, dtype=np.float32),
            SPACE,
        )
        info = store.backup(tmp_path / "backup")
        assert info.memories == 3
        restore_tables(copy, tmp_path / "backup")
        assert copy.memories.get_many(ids) == store.memories.get_many(ids)
        assert copy.vectors.nearest(SPACE, np.eye(3, 8, dtype=np.float32)[1], 1)[0][0] == ids[1]
    finally:
        store.close()
        copy.close()
