"""Entities and facts in the graph: writing an extraction replaces the old one, shared triples
are one Fact with provenance from each memory, merging moves links and records aliases."""

from __future__ import annotations

import pytest

from graphmem.errors import InvalidInput, NotFound
from graphmem.models import utcnow
from graphmem.service import GraphMemory
from graphmem.storage.protocols import EntityRow, FactRow, Mention, Provenance, fact_id


def _entity(norm: str, label: str = "concept") -> EntityRow:
    return EntityRow(norm, norm.title(), norm, "".join(c for c in norm if c.isalnum()), label)


def _write(gm: GraphMemory, memory_id: str, names: list[str], triples: list[tuple[str, str, str]]):
    facts = [FactRow(fact_id(s, p, o), s, p, o, s, o, f"{s} {p} {o}", 0.8) for s, p, o in triples]
    gm.store.entities.write_extraction(
        [memory_id],
        extractor="test",
        entities=[_entity(n) for n in names],
        aliases={},
        mentions=[Mention(memory_id, n, n) for n in names],
        facts=facts,
        provenance=[Provenance(f.id, memory_id, 0.8) for f in facts],
        at=utcnow(),
    )


def test_one_triple_from_two_memories_is_one_fact_with_two_sources(gm: GraphMemory) -> None:
    a = gm.remember("checkout uses redis")
    b = gm.remember("as noted, checkout uses redis")
    for memory in (a, b):
        _write(gm, memory.id, ["checkout", "redis"], [("checkout", "uses", "redis")])
    counts = gm.store.entities.counts()
    assert counts["Fact"] == 1 and counts["Entity"] == 2 and counts["extracted"] == 2
    sources = gm.store.conn.read("MATCH (f:Fact)-[:EXTRACTED_FROM]->(m:Memory) RETURN m.id")
    assert sorted(r[0] for r in sources) == sorted([a.id, b.id])


def test_extracting_again_replaces_mentions_and_drops_facts_left_without_a_source(
    gm: GraphMemory,
) -> None:
    a = gm.remember("checkout uses redis")
    _write(gm, a.id, ["checkout", "redis"], [("checkout", "uses", "redis")])
    _write(gm, a.id, ["checkout"], [])
    assert gm.store.entities.counts()["Fact"] == 0
    assert gm.store.entities.mentions_of([a.id]) == [(a.id, "checkout", "Checkout")]


def test_pending_memories_are_the_ones_never_extracted_and_edits_make_them_pending_again(
    gm: GraphMemory,
) -> None:
    a = gm.remember("first")
    b = gm.remember("second")
    _write(gm, a.id, ["first"], [])
    assert gm.store.entities.pending_extraction_ids() == [b.id]
    gm.update(a.id, content="first, rewritten")
    assert gm.store.entities.pending_extraction_ids() == [a.id, b.id]


def test_merging_moves_mentions_and_facts_and_the_old_name_resolves_to_the_primary(
    gm: GraphMemory,
) -> None:
    a = gm.remember("api uses postgres")
    b = gm.remember("api uses postgresql")
    _write(gm, a.id, ["api", "postgres"], [("api", "uses", "postgres")])
    _write(gm, b.id, ["api", "postgresql"], [("api", "uses", "postgresql")])
    moved = gm.store.entities.merge("postgresql", ["postgres"])
    assert moved == 2  # one mention, one fact end
    entities = {row[0]: row for row in gm.store.entities.overview(query=None, label=None, limit=10)}
    assert "postgres" not in entities
    assert entities["postgresql"][3] == 2  # mentioned by both memories now
    assert entities["postgresql"][5] == ["postgres"]
    assert gm.store.entities.resolve_norms(["postgres"]) == {"postgres": "postgresql"}


def test_merge_refuses_unknown_entities_and_an_empty_duplicate_list(gm: GraphMemory) -> None:
    a = gm.remember("api uses postgres")
    _write(gm, a.id, ["api", "postgres"], [])
    with pytest.raises(NotFound):
        gm.store.entities.merge("api", ["nope"])
    with pytest.raises(InvalidInput):
        gm.store.entities.merge("api", ["api"])


def test_the_walks_index_follows_every_change_of_the_entity_graph(gm: GraphMemory) -> None:
    a = gm.remember("checkout uses redis")
    b = gm.remember("the cart uses redis too")
    _write(gm, a.id, ["checkout", "redis"], [("checkout", "uses", "redis")])
    assert gm.store.entities.memories_mentioning(["redis"]) == [("redis", a.id)]  # index read now

    _write(gm, b.id, ["cart", "redis"], [("cart", "uses", "redis")])  # a later extraction
    assert sorted(gm.store.entities.memories_mentioning(["redis"])) == sorted(
        [("redis", a.id), ("redis", b.id)]
    )
    assert {f[0] for f in gm.store.entities.facts_between(["redis"])} == {"checkout", "cart"}

    gm.merge_entities("checkout", ["cart"])
    assert gm.store.entities.degrees(["checkout", "cart"]) == {"checkout": 2}

    newer = gm.remember("checkout uses valkey now")
    gm.mark_outdated(a.id, reason="moved to valkey", superseded_by=newer.id)
    assert gm.store.entities.supersession_links([a.id]) == [(newer.id, a.id)]

    gm.store.knowledge.set_fields(
        b.id, {"lifecycle": "archived"}
    )  # the walk passes live memories only
    assert gm.store.entities.memories_mentioning(["redis"]) == [("redis", a.id)]
    gm.delete(a.id)
    assert gm.store.entities.memories_mentioning(["redis"]) == []
    assert gm.store.entities.mentions_of([a.id]) == []

    with pytest.raises(RuntimeError), gm.store.transaction():  # rolled back: nothing changes
        _write(gm, newer.id, ["valkey"], [])
        raise RuntimeError("abandoned")
    assert gm.store.entities.mentions_of([newer.id]) == []
