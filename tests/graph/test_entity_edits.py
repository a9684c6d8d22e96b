"""Correcting entity resolution by hand: a merge, an alias, a rename and a split each change what
the entity pages show and what later extraction resolves names to, and each is audited, so
`steward_undo` puts the entity graph back as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graphmem.errors import Conflict, InvalidInput, NotFound
from graphmem.service import GraphMemory

TEXTS = [
    "The api uses Postgres.",
    "The api uses PostgreSQL.",
    "The checkout-service depends on Redis for carts.",
    "Mercury deploys the billing-worker.",
    "Mercury owns the ledger service.",
]


@pytest.fixture
def graph(gm: GraphMemory) -> list[str]:
    """TEXTS remembered and extracted; their ids in order."""
    ids = [m.id for m in gm.remember_many([{"content": t} for t in TEXTS])]
    gm.index_triples()
    return ids


def _picture(gm: GraphMemory, *entity_ids: str) -> dict[str, Any]:
    """What a person sees of the entity graph: the list, and each entity's page (or none)."""
    pages: dict[str, Any] = {}
    for entity_id in entity_ids:
        try:
            pages[entity_id] = gm.entity_page(entity_id).model_dump()
        except NotFound:
            pages[entity_id] = None
    return {"list": gm.list_entities(limit=100).model_dump(), "pages": pages}


def _named_in(gm: GraphMemory, text: str) -> set[str]:
    memory = gm.remember(text)
    gm.index_triples()
    return {entity_id for _, entity_id, _ in gm.store.entities.mentions_of([memory.id])}


def test_a_merge_is_audited_and_its_undo_brings_the_duplicate_back(
    gm: GraphMemory, graph: list[str]
) -> None:
    before = _picture(gm, "postgresql", "postgres")
    report = gm.merge_entities("postgresql", ["postgres"])
    assert report.merged == ["postgres"] and report.audit_id
    assert gm.entity_page("postgresql").mentions == 2
    entry = gm.audit_log(limit=5).entries[0]
    assert entry.action == "curate:merge-entities" and entry.undoable
    undone = gm.steward_undo(report.audit_id)
    assert undone.undone == [report.audit_id] and "postgres" in undone.entities
    assert _picture(gm, "postgresql", "postgres") == before
    assert _named_in(gm, "Postgres needs a vacuum.") >= {"postgres"}


def test_the_undo_of_a_merge_keeps_what_was_named_since(gm: GraphMemory, graph: list[str]) -> None:
    report = gm.merge_entities("postgresql", ["postgres"])
    later = gm.remember("PostgreSQL needs a vacuum on Sundays.")
    gm.index_triples()
    assert report.audit_id is not None
    gm.steward_undo(report.audit_id)
    assert gm.entity_page("postgresql").mentions == 2  # its own memory and the later one
    assert later.id in [m.id for m in gm.entity_page("postgresql").memories]
    assert [m.id for m in gm.entity_page("postgres").memories] == [graph[0]]


def test_an_alias_makes_later_text_resolve_to_the_entity_until_it_is_removed(
    gm: GraphMemory, graph: list[str]
) -> None:
    report = gm.add_entity_alias("redis", "KeyDB")
    assert report.changed and report.alias == "keydb" and report.aliases == ["keydb"]
    assert "redis" in _named_in(gm, "The cache runs on KeyDB.")
    assert not gm.add_entity_alias("redis", "keydb").changed  # already so: nothing written
    removed = gm.remove_entity_alias("redis", "KeyDB")
    assert removed.aliases == [] and removed.audit_id
    assert "keydb" in _named_in(gm, "The session store runs on KeyDB.")
    undone = gm.steward_undo(removed.audit_id)  # the name has an entity of its own now
    assert undone.undone == [] and "keydb changed since" in undone.skipped[0]["why"]
    assert gm.store.entities.resolve_norms(["keydb"]) == {"keydb": "keydb"}


def test_an_alias_undone_resolves_no_more(gm: GraphMemory, graph: list[str]) -> None:
    before = _picture(gm, "redis")
    report = gm.add_entity_alias("redis", "KeyDB")
    assert report.audit_id is not None
    gm.steward_undo(report.audit_id)
    assert _picture(gm, "redis") == before
    assert gm.store.entities.resolve_norms(["keydb"]) == {}


def test_an_alias_that_names_another_entity_is_refused_with_a_merge_suggested(
    gm: GraphMemory, graph: list[str]
) -> None:
    with pytest.raises(Conflict, match="merge"):
        gm.add_entity_alias("postgresql", "Postgres")
    with pytest.raises(NotFound):
        gm.add_entity_alias("no-such-entity", "x")
    with pytest.raises(InvalidInput):
        gm.add_entity_alias("redis", "  ")
    with pytest.raises(NotFound):
        gm.remove_entity_alias("redis", "memcached")


def test_a_renamed_entity_shows_its_new_name_and_both_names_resolve_to_it(
    gm: GraphMemory, graph: list[str]
) -> None:
    before = _picture(gm, "checkout-service")
    report = gm.rename_entity("checkout-service", "checkout-gateway")
    assert report.previous == "checkout-service" and report.entity_id == "checkout-service"
    page = gm.entity_page("checkout-service")
    assert page.name == "checkout-gateway" and "checkout-service" in page.aliases
    assert page.memories[0].via == "checkout-gateway"
    assert "checkout-service" in _named_in(gm, "The checkout-service retries twice.")
    assert "checkout-service" in _named_in(gm, "The checkout-gateway retries twice.")
    assert report.audit_id is not None
    gm.steward_undo(report.audit_id)
    after = _picture(gm, "checkout-service")
    assert after["pages"]["checkout-service"]["name"] == "checkout-service"
    assert after["pages"]["checkout-service"]["aliases"] == []
    assert gm.store.entities.resolve_norms(["checkout-gateway"]) == {}
    assert before["pages"]["checkout-service"]["name"] == "checkout-service"


def test_a_rename_to_another_entitys_name_is_refused(gm: GraphMemory, graph: list[str]) -> None:
    with pytest.raises(Conflict, match="merge"):
        gm.rename_entity("postgres", "PostgreSQL")
    with pytest.raises(InvalidInput):
        gm.rename_entity("postgres", "")
    with pytest.raises(NotFound):
        gm.rename_entity("no-such-entity", "x")


def test_a_split_moves_exactly_the_chosen_memories_mentions_and_facts(
    gm: GraphMemory, graph: list[str]
) -> None:
    before = _picture(gm, "mercury")
    report = gm.split_entity("mercury", [graph[4]], name="Mercury team")
    assert report.new_entity_id == "mercury team" and report.memories == [graph[4]]
    assert len(report.facts) == 1 and report.facts_kept == []
    assert [m.id for m in gm.entity_page("mercury").memories] == [graph[3]]
    moved = gm.entity_page("mercury team")
    assert [m.id for m in moved.memories] == [graph[4]] and moved.label == "org"
    assert [f.predicate for f in moved.facts] == ["owned_by"]
    assert gm.entity_page("mercury").facts == []
    assert report.audit_id is not None
    gm.steward_undo(report.audit_id)
    assert _picture(gm, "mercury", "mercury team") == {**before, "pages": {
        **before["pages"], "mercury team": None}}  # fmt: skip


def test_a_split_keeps_the_name_under_a_new_id_and_refuses_what_it_cannot_do(
    gm: GraphMemory, graph: list[str]
) -> None:
    report = gm.split_entity("mercury", [graph[4]])
    assert report.new_entity_id == "mercury~2" and report.name == "Mercury"
    assert gm.entity_page("mercury~2").name == "Mercury"
    assert "mercury" in _named_in(gm, "Mercury ships on Fridays.")
    with pytest.raises(InvalidInput):
        gm.split_entity("mercury", [graph[0]])  # it does not name Mercury
    with pytest.raises(InvalidInput):
        gm.split_entity("mercury", [])
    with pytest.raises(NotFound):
        gm.split_entity("no-such-entity", [graph[0]])


def test_an_undo_after_a_later_change_of_the_entity_is_skipped(
    gm: GraphMemory, graph: list[str]
) -> None:
    renamed = gm.rename_entity("redis", "Redis 7")
    gm.rename_entity("redis", "Valkey")
    assert renamed.audit_id is not None
    report = gm.steward_undo(renamed.audit_id)
    assert report.undone == [] and "redis changed since" in report.skipped[0]["why"]
    assert gm.entity_page("redis").name == "Valkey"


def test_a_split_takes_back_a_wrong_merge_with_its_name(gm: GraphMemory, graph: list[str]) -> None:
    gm.merge_entities("postgresql", ["postgres"])
    report = gm.split_entity("postgresql", [graph[0]], name="Postgres")
    assert report.new_entity_id == "postgres"
    assert gm.entity_page("postgresql").aliases == []
    assert [m.id for m in gm.entity_page("postgres").memories] == [graph[0]]
    merged = _picture(gm, "postgresql", "postgres")
    assert report.audit_id is not None
    gm.steward_undo(report.audit_id)
    assert gm.store.entities.resolve_norms(["postgres"]) == {"postgres": "postgresql"}
    assert gm.entity_page("postgresql").mentions == 2
    assert _picture(gm, "postgresql", "postgres") != merged
    assert "postgresql" in _named_in(gm, "Postgres needs a vacuum.")


def test_the_undo_of_a_split_whose_entity_was_named_since_is_skipped(
    gm: GraphMemory, graph: list[str]
) -> None:
    report = gm.split_entity("mercury", [graph[4]], name="Mercury team")
    assert "mercury team" in _named_in(gm, "Mercury team ships the ledger service.")
    assert report.audit_id is not None
    undone = gm.steward_undo(report.audit_id)
    assert undone.undone == [] and "mercury team changed since" in undone.skipped[0]["why"]


def test_a_split_moves_a_document_chunks_mention_and_its_undo_brings_it_back(
    gm: GraphMemory, graph: list[str], store_path: Path
) -> None:
    doc = store_path.parent / "docs" / "mercury.md"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text("# Mercury\n\nMercury runs the payroll batch every night.\n")
    gm.index_documents([doc])
    gm.index_triples()
    chunks = [x.source for x in gm.store.entities.links(["mercury"]) if x.kind == "chunk"]
    assert len(chunks) == 1
    before = _picture(gm, "mercury")
    report = gm.split_entity("mercury", chunks, name="Mercury payroll")
    entity = next(e for e in gm.list_entities("payroll").entities if e.id == "mercury payroll")
    assert entity.chunks == 1 and entity.mentions == 0 and report.memories == chunks
    assert report.audit_id is not None
    gm.steward_undo(report.audit_id)
    assert _picture(gm, "mercury") == before


def test_an_entity_page_says_when_it_was_seen_which_sections_name_it_and_when_facts_held(
    gm: GraphMemory, graph: list[str], store_path: Path
) -> None:
    doc = store_path.parent / "docs" / "mercury.md"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text("# Teams\n\n## Mercury\n\nMercury runs the payroll batch every night.\n")
    gm.index_documents([doc])
    gm.index_triples()
    page = gm.entity_page("mercury")
    written = {m: gm.get(m).created_at for m in graph}
    assert (page.first_seen, page.last_seen) == (written[graph[3]], written[graph[4]])
    assert [(s.path, s.breadcrumb) for s in page.sections] == [
        ("docs/mercury.md", ["Teams", "Mercury"])
    ]
    for fact in page.facts:
        times = sorted(written[m] for m in fact.sources)
        assert (fact.first_stated, fact.last_stated) == (times[0], times[-1])
    assert page.facts  # "Mercury deploys the billing-worker", "Mercury owns the ledger service"
    quiet = gm.entity_page("redis")
    assert quiet.sections == [] and quiet.first_seen == quiet.last_seen == written[graph[2]]
