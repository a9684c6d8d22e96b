"""Schema migrations: recorded once, a no-op on reopen, and a newer store is refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from graphmem.schema import migrations

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import SchemaError
from graphmem.service import GraphMemory, open_store
from graphmem.storage import engines
from graphmem.storage.kuzu.connection import KuzuConnection


def test_shipped_migrations_start_at_0001_core_and_are_ordered() -> None:
    known = migrations()
    assert (known[0].version, known[0].name) == (1, "core")
    assert [m.version for m in known] == sorted({m.version for m in known})
    assert all(m.statements for m in known)


def test_a_new_store_records_every_migration_and_has_none_pending(gm: GraphMemory) -> None:
    status = gm.db_status()
    assert [m.version for m in status.applied] == [m.version for m in migrations()]
    assert status.applied[0].name == "core"
    assert status.applied[0].applied_at is not None
    assert status.pending == []
    assert status.schema_version == status.latest_version == migrations()[-1].version
    assert status.path == str(gm.path)


def test_a_new_store_has_its_tables_and_no_kuzu_full_text_index(gm: GraphMemory) -> None:
    tables = {row[0] for row in gm.cypher("CALL show_tables() RETURN name").rows}
    assert {"Memory", "_Meta", "_Migration", "SUPERSEDES"} <= tables
    indexes = {row[0] for row in gm.cypher("CALL show_indexes() RETURN index_name").rows}
    assert "memory_fts" not in indexes  # keyword search runs in process


def test_a_new_store_never_makes_the_index_a_later_migration_drops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kill -9 between making it and dropping it left Kùzu's half-made index tables, and
    the next open failed on them."""
    executed: list[str] = []
    run = KuzuConnection.execute

    def spy(self: KuzuConnection, query: str, params: Any = None) -> Any:
        executed.append(query)
        return run(self, query, params)

    monkeypatch.setattr(KuzuConnection, "execute", spy)
    with open_store(tmp_path / "new", embedder=HashEmbedder()) as gm:
        assert gm.db_status().pending == []
    assert not [q for q in executed if "FTS_INDEX" in q]


def test_upgrading_a_store_with_the_old_full_text_index_drops_it_and_keeps_keyword_search(
    gm: GraphMemory, reopen: Callable[..., GraphMemory]
) -> None:
    if gm.store.conn.engine is not engines.KUZU:  # its stores never had the index
        pytest.skip("only Kùzu stores made before migration 4 have Kùzu's full-text index")
    memory = gm.remember("the ledger service returned 502 after release v2")
    # the store as version 3 left it: Kùzu's index present, migration 4 not applied
    gm.cypher(
        "CALL CREATE_FTS_INDEX('Memory', 'memory_fts', ['search_text'], stemmer := 'porter')",
        write=True,
    )
    gm.cypher("MATCH (m:_Migration {version: 4}) DELETE m", write=True)
    gm.close()

    again = reopen()

    indexes = {row[0] for row in again.cypher("CALL show_indexes() RETURN index_name").rows}
    assert "memory_fts" not in indexes
    assert again.db_status().pending == []
    assert [h.memory.id for h in again.recall("502 v2", recipe="bm25")] == [memory.id]


def test_reopening_a_store_applies_nothing_and_keeps_its_data(
    gm: GraphMemory, reopen: Callable[..., GraphMemory]
) -> None:
    memory = gm.remember("survives a reopen")
    before = gm.db_status()
    gm.close()

    again = reopen()

    assert again.store.migrate() == []
    assert again.db_status() == before
    assert again.get(memory.id) == memory
    assert again.recall("survives", recipe="bm25")[0].memory.id == memory.id


def test_a_store_with_a_newer_schema_is_refused_on_open(gm: GraphMemory, store_path: Path) -> None:
    gm.cypher(
        "CREATE (:_Migration {version: 9999, name: 'from_the_future', "
        "applied_at: timestamp('2030-01-01 00:00:00')})",
        write=True,
    )
    gm.close()

    with pytest.raises(SchemaError, match="9999") as caught:
        open_store(store_path, embedder=HashEmbedder())
    assert caught.value.fields["store_version"] == 9999
    assert caught.value.fields["supported_version"] == migrations()[-1].version
    assert caught.value.exit_code == 4

    # the refused open released the store: trying again gives the same answer, not "locked"
    with pytest.raises(SchemaError):
        open_store(store_path, embedder=HashEmbedder())


def test_upgrading_relinks_sections_an_earlier_version_linked_to_another_document(
    gm: GraphMemory, reopen: Callable[..., GraphMemory], tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("alpha", "beta"):
        (docs / f"{name}.md").write_text(f"# {name}\n\nthe {name} notes\n\n## usage\n\nrun it\n")
    gm.index_documents([docs])
    # the store as versions before 13 left it: beta's sections hang off alpha
    gm.cypher(
        "MATCH (b:Document)-[r:HAS_SECTION]->(s:Section), (a:Document) "
        "WHERE b.path ENDS WITH 'beta.md' AND a.path ENDS WITH 'alpha.md' "
        "DELETE r CREATE (a)-[:HAS_SECTION]->(s)",
        write=True,
    )
    gm.cypher("MATCH (m:_Migration {version: 13}) DELETE m", write=True)
    wrong = {
        o["path"].rsplit("/", 1)[-1]: o["sections"] for o in gm.store.documents.overview(limit=9)
    }
    assert wrong == {"alpha.md": 4, "beta.md": 0}
    gm.close()

    again = reopen()

    fixed = {
        o["path"].rsplit("/", 1)[-1]: o["sections"] for o in again.store.documents.overview(limit=9)
    }
    assert fixed == {"alpha.md": 2, "beta.md": 2}
    assert again.db_status().pending == []
