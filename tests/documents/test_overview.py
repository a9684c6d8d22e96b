"""What the store holds of its documents, as the console lists them: every document by path with
its sections, and one document's sections and the memories that cite it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import InvalidInput, NotFound
from graphmem.service import GraphMemory, open_store

DEPLOY = (
    "# Deploy\n\nArgoCD syncs main.\n\n## Rollback\n\nRevert the commit.\n\n### Hotfix\n\nTag it.\n"
)


@pytest.fixture
def gm(tmp_path: Path) -> Iterator[GraphMemory]:
    (tmp_path / "docs" / "adr").mkdir(parents=True)
    (tmp_path / "docs" / "deploy.md").write_text(DEPLOY)
    (tmp_path / "docs" / "adr" / "0001-argocd.md").write_text("# 1. Use ArgoCD\n\nWe do.\n")
    (tmp_path / "cron.txt").write_text("0 2 * * * backup\n")
    store = open_store(tmp_path / ".graphmem", embedder=HashEmbedder())
    store.index_documents()
    try:
        yield store
    finally:
        store.close()


def test_the_overview_lists_indexed_and_cited_files_by_path_with_their_sections(
    gm: GraphMemory,
) -> None:
    backups = gm.remember("Backups run at 02:00")
    gm.cite_source(backups.id, "cron.txt")

    listed = gm.documents_overview().documents

    assert [(d.path, d.sections) for d in listed] == [
        ("cron.txt", 0), ("docs/adr/0001-argocd.md", 1), ("docs/deploy.md", 3),
    ]  # fmt: skip
    assert (listed[2].title, listed[2].source_type) == ("Deploy", "docs")
    assert [d.path for d in gm.documents_overview(limit=2).documents] == [
        d.path for d in listed[:2]
    ]
    with pytest.raises(InvalidInput, match="limit"):
        gm.documents_overview(limit=0)


def test_a_document_page_has_its_sections_in_reading_order_and_its_citations_oldest_first(
    gm: GraphMemory,
) -> None:
    later = gm.remember("Roll back by reverting", created_at="2024-02-01")
    first = gm.remember("Deploys go through ArgoCD", created_at="2024-01-01", title="Deploys")
    gm.cite_source(later.id, "docs/deploy.md", section="rollback")
    gm.cite_source(first.id, "docs/deploy.md")
    gm.mark_outdated(later.id, reason="hotfixes now")

    page = gm.document_page("docs/deploy.md")

    assert (page.path, page.title, page.source_type) == ("docs/deploy.md", "Deploy", "docs")
    assert page.indexed_at is not None and page.indexed_at.tzinfo is not None
    assert [(s.title, s.level, s.start_line) for s in page.sections] == [
        ("Deploy", 1, 1), ("Rollback", 2, 5), ("Hotfix", 3, 9),
    ]  # fmt: skip
    assert [(c.memory_id, c.title, c.lifecycle, c.section) for c in page.cited_by] == [
        (first.id, "Deploys", "active", None), (later.id, None, "outdated", "rollback"),
    ]  # fmt: skip
    with pytest.raises(NotFound, match="no indexed document"):
        gm.document_page("docs/nope.md")
