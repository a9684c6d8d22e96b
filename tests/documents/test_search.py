"""Searching indexed documents: the right section, one hit per section, a few per document, the
kind of document a question asks for, and never two models' vectors compared."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.documents.search import DOC_RECIPES
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import InvalidInput, NotFound
from graphmem.service import GraphMemory, open_store

LONG_GUIDE = "# Deploy guide\n\n" + "\n\n".join(
    f"## Step {i}\n\nDeploy the service with the deploy pipeline, stage {i}." for i in range(12)
)
RUNBOOK = """\
# Deploy rollback

## Roll back a release

Re-run the deploy pipeline with the previous image tag, then watch the error rate.
"""
ADR = """\
# ADR 12: Deploy with a pipeline

## Decision

We deploy with a pipeline rather than by hand, because hand deploys drifted.
"""


@pytest.fixture
def gm(tmp_path: Path) -> Iterator[GraphMemory]:
    docs = tmp_path / "docs"
    (docs / "runbooks").mkdir(parents=True)
    (docs / "adr").mkdir()
    (docs / "guide.md").write_text(LONG_GUIDE)
    (docs / "runbooks" / "rollback.md").write_text(RUNBOOK)
    (docs / "adr" / "0012-deploy-pipeline.md").write_text(ADR)
    store = open_store(tmp_path / ".graphmem", embedder=HashEmbedder())
    store.index_documents()
    try:
        yield store
    finally:
        store.close()


def test_a_hit_says_where_the_section_is(gm: GraphMemory) -> None:
    hit = gm.search_docs("previous image tag", recipe="bm25").hits[0]

    assert hit.path == "docs/runbooks/rollback.md"
    assert hit.heading == "Roll back a release"
    assert hit.breadcrumb == ["Deploy rollback", "Roll back a release"]
    assert hit.section_key == "deploy-rollback/roll-back-a-release"
    assert hit.source_type == "runbook"
    assert hit.lines == [3, 5]
    assert "previous image tag" in hit.snippet


def test_a_long_document_cannot_fill_the_page(gm: GraphMemory) -> None:
    hits = gm.search_docs("deploy the service with the deploy pipeline", limit=10).hits

    per_path = [h.path for h in hits]
    assert per_path.count("docs/guide.md") == DOC_RECIPES["hybrid"].per_doc < 12  # of 12 sections
    assert {"docs/runbooks/rollback.md", "docs/adr/0012-deploy-pipeline.md"} <= set(per_path)
    keys = [(h.path, h.section_key) for h in hits]
    assert len(keys) == len(set(keys))  # one hit per section


def test_the_kind_of_question_favours_the_kind_of_document(gm: GraphMemory) -> None:
    how = gm.search_docs("how do I roll back the deploy pipeline", explain=True).hits
    why = gm.search_docs("why did we decide to deploy with a pipeline", explain=True).hits

    assert how[0].source_type == "runbook"
    assert how[0].explain is not None and how[0].explain["features"]["intent"] == 1.0
    assert why[0].source_type == "adr"


def test_explain_shows_every_component_and_they_add_up_to_the_score(gm: GraphMemory) -> None:
    hit = gm.search_docs("previous image tag", explain=True).hits[0]

    assert hit.explain is not None
    parts = hit.explain["contributions"]
    assert set(parts) == {"cosine", "bm25", "terms", "heading", "path", "intent", "doc", "role"}
    assert sum(parts.values()) == pytest.approx(hit.score, abs=1e-3)


def test_the_section_whose_role_the_question_asks_for_comes_first(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "disk-full.md").write_text(
        "# Disk almost full\n\n"
        "## Meaning\n\nDisk almost full: the database volume is nearly out of space.\n\n"
        "## Diagnosis\n\nDisk almost full: run df -h on the database host.\n\n"
        "## Mitigation\n\nDisk almost full: delete old WAL segments on the database host.\n"
    )
    with open_store(tmp_path / ".graphmem", embedder=HashEmbedder()) as store:
        store.index_documents()
        fix = store.search_docs("disk almost full on the database host, what can I do?").hits
        check = store.search_docs("disk almost full on the database host, what to check?").hits

    assert fix[0].heading == "Mitigation"
    assert check[0].heading == "Diagnosis"


def test_filters_narrow_to_a_source_type_or_a_path(gm: GraphMemory) -> None:
    runbooks = gm.search_docs("deploy", source_type="runbook").hits
    under_adr = gm.search_docs("deploy", path_prefix="docs/adr/").hits

    assert runbooks and {h.source_type for h in runbooks} == {"runbook"}
    assert under_adr and {h.path for h in under_adr} == {"docs/adr/0012-deploy-pipeline.md"}


def test_expand_section_returns_the_whole_section_and_what_lies_under_it(
    gm: GraphMemory,
) -> None:
    top = gm.expand_section("docs/guide.md", "deploy-guide")
    step = gm.expand_section("docs/guide.md", "deploy-guide/step-3")

    assert [s.heading for s in top.subsections][:3] == ["Step 0", "Step 1", "Step 2"]
    assert step.text == "Deploy the service with the deploy pipeline, stage 3."
    assert step.breadcrumb == ["Deploy guide", "Step 3"]


def test_expand_section_of_an_unknown_document_or_key_is_not_found(gm: GraphMemory) -> None:
    with pytest.raises(NotFound):
        gm.expand_section("docs/nope.md", "")
    with pytest.raises(NotFound):
        gm.expand_section("docs/guide.md", "no-such-section")


def test_an_empty_query_or_an_unknown_recipe_is_invalid_input(gm: GraphMemory) -> None:
    with pytest.raises(InvalidInput):
        gm.search_docs("  ")
    with pytest.raises(InvalidInput, match="recipe"):
        gm.search_docs("deploy", recipe="magic")


def test_documents_of_another_embedding_model_are_searched_by_keyword_only(
    gm: GraphMemory, tmp_path: Path
) -> None:
    gm.close()
    with open_store(tmp_path / ".graphmem", embedder=HashEmbedder(dim=64)) as other:
        result = other.search_docs("previous image tag")

    assert result.degraded and result.embedding_space is None
    assert "another model" in result.warnings[0]
    assert result.hits[0].path == "docs/runbooks/rollback.md"  # still found, by its words


def test_recall_with_scope_docs_answers_with_sections(gm: GraphMemory) -> None:
    result = gm.recall("previous image tag", scope="docs")

    assert result.scope == "docs" and not result.hits
    assert result.sections[0].path == "docs/runbooks/rollback.md"


def test_recall_with_scope_all_ranks_memories_and_sections_together(gm: GraphMemory) -> None:
    gm.remember("We roll back by re-running the pipeline with the previous image tag")

    result = gm.recall("previous image tag", scope="all", limit=4)

    sources = [h.source for h in result.ranking]
    assert set(sources) == {"memory", "section"} and len(sources) == 4
    assert [h.score for h in result.ranking] == sorted(
        (h.score for h in result.ranking), reverse=True
    )
    assert result.hits[0].memory.content.startswith("We roll back")
    assert len(result.hits) + len(result.sections) == 4


def test_an_unknown_scope_is_invalid_input(gm: GraphMemory) -> None:
    with pytest.raises(InvalidInput, match="scope"):
        gm.recall("deploy", scope="everything")  # type: ignore[arg-type]
