"""Indexing project documents: what is read, what changed, what moved or went, and nothing of a
secret left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.service import GraphMemory, open_store

RUNBOOK = """\
---
title: Database failover
---
# Database failover

When the primary stops answering, promote the replica.

## Promote the replica

1. Run `pg_ctl promote` on the replica.
2. Point PGHOST at it.

## Verify

Check that writes succeed.
"""

ADR = """\
# 0007 Use Kùzu for memory

## Context

We need relations between memories.

## Decision

We use Kùzu, an embedded graph database.
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "docs" / "runbooks").mkdir(parents=True)
    (root / "docs" / "adr").mkdir()
    (root / "docs" / "runbooks" / "db-failover.md").write_text(RUNBOOK)
    (root / "docs" / "adr" / "0007-kuzu.md").write_text(ADR)
    (root / "README.md").write_text("# Project\n\nSee docs/.\n")
    (root / "src").mkdir()
    (root / "src" / "notes.md").write_text("# Not a default root\n\nIgnored by default.\n")
    return root


@pytest.fixture
def gm(project: Path) -> Iterator[GraphMemory]:
    store = open_store(project / ".graphmem", embedder=HashEmbedder())
    try:
        yield store
    finally:
        store.close()


def paths_of(gm: GraphMemory) -> set[str]:
    rows = gm.cypher("MATCH (d:Document) WHERE d.indexed_sha IS NOT NULL RETURN d.rel", {})
    return {r[0] for r in rows.rows}


def test_the_default_run_reads_docs_and_the_projects_own_markdown(gm: GraphMemory) -> None:
    report = gm.index_documents()

    assert sorted(report.added) == [
        "README.md",
        "docs/adr/0007-kuzu.md",
        "docs/runbooks/db-failover.md",
    ]
    assert paths_of(gm) == set(report.added)  # src/notes.md is not under a default glob
    assert report.chunks > 0 and report.embedded == report.chunks


def test_sections_form_a_tree_with_breadcrumbs_and_chunks_in_reading_order(
    gm: GraphMemory,
) -> None:
    gm.index_documents()

    rows = gm.cypher(
        "MATCH (c:Section)-[:CHILD_OF]->(p:Section) RETURN c.title, p.title, c.breadcrumb "
        "ORDER BY c.ord",
        {},
    ).rows
    assert [
        "Promote the replica",
        "Database failover",
        ["Database failover", "Promote the replica"],
    ] in rows
    chain = gm.cypher(
        "MATCH (a:Chunk)-[:NEXT]->(b:Chunk) WHERE a.doc = b.doc RETURN a.ord, b.ord", {}
    ).rows
    assert chain and all(b == a + 1 for a, b in chain)
    linked = gm.cypher(
        "MATCH (d:Document {rel: 'docs/runbooks/db-failover.md'})-[:HAS_SECTION]->(s:Section) "
        "RETURN count(s)",
        {},
    ).rows
    assert linked[0][0] >= 3


def test_a_second_run_reads_nothing_that_did_not_change(gm: GraphMemory) -> None:
    gm.index_documents()

    again = gm.index_documents()

    assert again.unchanged == 3 and not (again.added or again.updated or again.removed)
    assert again.embedded == 0


def test_a_changed_file_is_replaced_and_its_unchanged_chunks_keep_their_vectors(
    gm: GraphMemory, project: Path
) -> None:
    gm.index_documents()
    doc = project / "docs" / "runbooks" / "db-failover.md"
    doc.write_text(
        RUNBOOK.replace("Check that writes succeed.", "Check that writes succeed twice.")
    )

    report = gm.index_documents()

    assert report.updated == ["docs/runbooks/db-failover.md"]
    assert report.embedded == 1 < report.chunks  # only the changed chunk is embedded again
    hits = gm.search_docs("writes succeed twice", recipe="bm25").hits
    assert hits[0].heading == "Verify"
    assert "twice" in gm.expand_section(hits[0].path, hits[0].section_key).text


def test_a_deleted_file_is_removed_with_its_sections_and_chunks(
    gm: GraphMemory, project: Path
) -> None:
    gm.index_documents()
    (project / "docs" / "adr" / "0007-kuzu.md").unlink()

    report = gm.index_documents()

    assert report.removed == ["docs/adr/0007-kuzu.md"]
    assert "docs/adr/0007-kuzu.md" not in paths_of(gm)
    assert all(
        h.path != "docs/adr/0007-kuzu.md" for h in gm.search_docs("graph", recipe="bm25").hits
    )
    left = gm.cypher("MATCH (s:Section) WHERE s.title = 'Decision' RETURN count(s)", {}).rows
    assert left == [[0]]


def test_a_renamed_file_is_moved_without_embedding_anything_again(
    gm: GraphMemory, project: Path
) -> None:
    gm.index_documents()
    old = project / "docs" / "adr" / "0007-kuzu.md"
    old.rename(project / "docs" / "adr" / "0007-use-kuzu.md")

    report = gm.index_documents()

    assert report.moved == [{"from": "docs/adr/0007-kuzu.md", "to": "docs/adr/0007-use-kuzu.md"}]
    assert report.embedded == 0 and not report.removed and not report.added
    hit = gm.search_docs("embedded graph database", recipe="bm25").hits[0]
    assert hit.path == "docs/adr/0007-use-kuzu.md"


def test_a_citation_follows_a_renamed_file(gm: GraphMemory, project: Path) -> None:
    gm.index_documents()
    memory = gm.remember("We promote the replica by hand")
    gm.cite_source(memory.id, "docs/runbooks/db-failover.md")
    (project / "docs" / "runbooks" / "db-failover.md").rename(
        project / "docs" / "runbooks" / "failover.md"
    )

    gm.index_documents()

    cited = gm.cypher(
        "MATCH (:Memory {id: $id})-[:CITES]->(d:Document) RETURN d.path", {"id": memory.id}
    ).rows
    assert cited == [["docs/runbooks/failover.md"]]


def test_named_paths_index_only_those_and_a_folder_outside_is_its_own_root(
    gm: GraphMemory, project: Path, tmp_path: Path
) -> None:
    shared = tmp_path / "shared-docs" / "guides"
    shared.mkdir(parents=True)
    (shared / "oncall.md").write_text("# On call\n\nPage the platform team.\n")

    report = gm.index_documents([project / "src" / "notes.md", tmp_path / "shared-docs"])

    assert sorted(report.added) == ["guides/oncall.md", "src/notes.md"]
    hit = gm.search_docs("page the platform team", recipe="bm25").hits[0]
    assert hit.path == "guides/oncall.md"  # relative to the root it was indexed under


def test_binary_and_oversized_files_are_skipped_and_reported(project: Path, tmp_path: Path) -> None:
    (project / "docs" / "diagram.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    (project / "docs" / "huge.md").write_text("# Huge\n\n" + "word " * 2000)
    with open_store(project / ".graphmem", embedder=HashEmbedder(), docs_max_file_bytes=5000) as gm:
        report = gm.index_documents()

    skipped = {s.path: s.why for s in report.skipped}
    assert skipped["docs/diagram.md"] == "binary"
    assert skipped["docs/huge.md"].startswith("larger than 5000 bytes")
    assert "docs/huge.md" not in report.added


def test_vendored_and_gitignored_files_are_not_indexed(gm: GraphMemory, project: Path) -> None:
    (project / "docs" / "node_modules" / "pkg").mkdir(parents=True)
    (project / "docs" / "node_modules" / "pkg" / "README.md").write_text("# vendored\n")
    (project / ".gitignore").write_text("docs/drafts/\n")
    (project / "docs" / "drafts").mkdir()
    (project / "docs" / "drafts" / "wip.md").write_text("# Draft\n")

    report = gm.index_documents()

    assert not [p for p in report.added if "node_modules" in p or "drafts" in p]


SECRETS = {
    "key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
    "-----END OPENSSH PRIVATE KEY-----",
    "bearer": "Bearer Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZg",
    "password": "hunter2-Xq9v",
    "api_key": "sk_live_51Habcdefghijklmnopqrstuv",
}


def test_secrets_are_redacted_before_anything_is_stored_or_embedded(
    project: Path, tmp_path: Path
) -> None:
    embedded: list[str] = []

    class Recording(HashEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            embedded.extend(texts)
            return super().embed(texts)

    (project / "docs" / "setup.md").write_text(
        "# Setup\n\n```sh\n"
        f'curl -H "Authorization: {SECRETS["bearer"]}" https://api.example.invalid\n'
        f"export DB_PASSWORD={SECRETS['password']}\n```\n\n"
        f"api_key: {SECRETS['api_key']}\n\n{SECRETS['key']}\n"
    )
    with open_store(project / ".graphmem", embedder=Recording()) as gm:
        report = gm.index_documents()
        stored = gm.cypher("MATCH (c:Chunk) RETURN c.text, c.search_text", {}).rows
        section = gm.expand_section("docs/setup.md", "setup")

    assert report.redacted >= 4
    everything = "\n".join([*embedded, *(t for row in stored for t in row), section.text])
    store_bytes = b"".join(
        p.read_bytes() for p in (project / ".graphmem").rglob("*") if p.is_file()
    )
    for name, secret in SECRETS.items():
        needle = secret.splitlines()[1] if name == "key" else secret.removeprefix("Bearer ")
        assert needle not in everything, name
        assert needle.encode() not in store_bytes, name
    assert "[REDACTED]" in section.text


def test_a_run_killed_midway_leaves_the_store_consistent_and_the_next_run_finishes(
    project: Path,
) -> None:
    for i in range(150):
        (project / "docs" / f"page-{i:02}.md").write_text(
            f"# Page {i}\n\n" + "\n\n".join(f"## Part {j}\n\nText {i} {j}." for j in range(8))
        )
    env = {**os.environ, "GRAPHMEM_EMBEDDING_PROVIDER": "hash"}
    home = str(project / ".graphmem")
    script = f"from graphmem import open_store\nopen_store({home!r}).index_documents()\n"
    child = subprocess.Popen([sys.executable, "-c", script], env=env)
    time.sleep(1.5)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)

    with open_store(project / ".graphmem", embedder=HashEmbedder()) as gm:
        report = gm.index_documents()
        orphans = gm.cypher(
            "MATCH (c:Chunk) WHERE NOT EXISTS { MATCH (c)-[:IN_SECTION]->(:Section) } "
            "RETURN count(c)",
            {},
        ).rows
        indexed = paths_of(gm)
    assert orphans == [[0]]
    assert len(report.added) + len(report.updated) + report.unchanged == 153
    assert {f"docs/page-{i:02}.md" for i in range(150)} <= indexed


def test_entities_named_in_documents_are_extracted_and_listed_with_memories(
    gm: GraphMemory, project: Path
) -> None:
    (project / "docs" / "runbooks" / "billing.md").write_text(
        "# billing-api outage\n\n## Mitigation\n\nRestart billing-api and check the Postgres pool.\n"
    )
    gm.index_documents()
    gm.remember("billing-api returned 502 during the deploy")

    report = gm.index_triples()  # a one-shot store extracts when asked; the owner on its own

    assert report.chunks > 0
    pending = gm.cypher("MATCH (c:Chunk) WHERE c.extracted_by IS NULL RETURN count(*)", {}).rows
    assert pending == [[0]]
    entity = next(e for e in gm.list_entities("billing").entities if e.id == "billing-api")
    assert entity.mentions == 1 and entity.chunks >= 1
    named = gm.cypher(
        "MATCH (c:Chunk)-[:MENTIONS]->(:Entity {id: 'billing-api'}) RETURN count(c)", {}
    ).rows
    assert named[0][0] >= 1


def test_the_owner_extracts_entities_of_new_chunks_in_the_background(project: Path) -> None:
    with open_store(project / ".graphmem", embedder=HashEmbedder(), extract_on_write=True) as gm:
        gm.index_documents()
        assert gm.wait_for_extraction(60)
        pending = gm.cypher("MATCH (c:Chunk) WHERE c.extracted_by IS NULL RETURN count(*)", {})
        assert pending.rows == [[0]]


def test_an_adr_that_supersedes_another_links_them_and_the_timeline_follows(
    gm: GraphMemory, project: Path
) -> None:
    adr = project / "docs" / "adr"
    (adr / "0003-sessions-in-redis.md").write_text(
        "# 3. Sessions in Redis\n\n## Status\n\nSuperseded by [ADR 12](0012-sessions-in-postgres.md)"
        "\n\n## Decision\n\nUser sessions are kept in Redis.\n"
    )
    (adr / "0012-sessions-in-postgres.md").write_text(
        "# 12. Sessions in Postgres\n\n## Status\n\nAccepted. Supersedes ADR 3.\n\n"
        "## Decision\n\nUser sessions are kept in Postgres, since Redis evicted them.\n"
    )
    gm.index_documents()

    links = gm.cypher("MATCH (n:Document)-[:SUPERSEDES]->(o:Document) RETURN n.rel, o.rel", {}).rows
    assert links == [
        ["docs/adr/0012-sessions-in-postgres.md", "docs/adr/0003-sessions-in-redis.md"]
    ]
    timeline = gm.knowledge_timeline("where are user sessions kept")
    assert [(d.path, d.superseded_by) for d in timeline.documents] == [
        ("docs/adr/0003-sessions-in-redis.md", "docs/adr/0012-sessions-in-postgres.md"),
        ("docs/adr/0012-sessions-in-postgres.md", None),
    ]

    (adr / "0012-sessions-in-postgres.md").write_text(
        "# 12. Sessions in Postgres\n\n## Status\n\nAccepted.\n\n## Decision\n\nPostgres.\n"
    )
    (adr / "0003-sessions-in-redis.md").write_text("# 3. Sessions in Redis\n\nRedis.\n")
    gm.index_documents()
    assert not gm.cypher("MATCH (:Document)-[s:SUPERSEDES]->(:Document) RETURN s", {}).rows


def test_multihop_reaches_the_sections_that_name_what_its_hits_name(
    gm: GraphMemory, project: Path
) -> None:
    (project / "docs" / "runbooks" / "ledger.md").write_text(
        "# ledger-service\n\n## Restart\n\nRestart ledger-service with `make restart-ledger`.\n"
    )
    gm.index_documents()
    gm.remember("The nightly payout job failed because ledger-service timed out")
    gm.index_triples()

    result = gm.recall_multihop("why did the nightly payout job fail?")

    section = next(s for s in result.sections if s.path == "docs/runbooks/ledger.md")
    assert section.via_memory == result.hits[0].memory.id
    assert "-mentions-> ledger-service <-mentions-" in section.route_text
