"""The entity graph's contract (graphmem.storage.protocols.Entities), the same on every engine:
an extraction written and read back, replaced by the next one, the entity index that recall and
the multi-hop walk read, merges, an entity's deletion and its undo, what is left to extract, a
memory's deletion forgetting the facts only it stated, and a store opened afresh reading the
same entity index from its scans."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.errors import InvalidInput, NotFound
from graphmem.models import Memory, utcnow
from graphmem.storage.protocols import EXTRACT
from graphmem.storage.protocols.entities import (
    EntityLink,
    EntityRow,
    FactRow,
    Mention,
    Provenance,
    compact_key,
    fact_id,
)

pytestmark = [
    pytest.mark.falkordb,
    pytest.mark.filterwarnings("ignore:Call to '__init__' function:DeprecationWarning"),
]

SPACE = EmbeddingSpace("hash", "contract", 8)
AT = datetime(2026, 3, 4, 5, 6, 7, 123456)
ALICE, BOB, PAYMENTS, BERLIN = "alice", "bob", "payments service", "berlin"
LABELS = {ALICE: "person", BOB: "person", PAYMENTS: "service", BERLIN: "place", "robert": "person"}
WORKS_ON = fact_id(ALICE, "works_on", PAYMENTS)
VISITED = fact_id(BOB, "visited", BERLIN)
BOB_OWNS = fact_id(BOB, "owns", PAYMENTS)


def _memories(n: int, **fields: Any) -> list[Memory]:
    now = utcnow().replace(microsecond=0)
    return [
        Memory(
            id=f"01ENTITY{i:018d}",
            content=f"note {i} about the payments service",
            title=f"note {i}" if i % 2 else None,
            context="billing" if i < 3 else "ops",
            created_at=now + timedelta(seconds=i),
            updated_at=now + timedelta(seconds=i),
            **fields,
        )
        for i in range(n)
    ]


def _insert(store: Any, memories: list[Memory]) -> list[str]:
    vectors = np.random.default_rng(1).standard_normal((len(memories), SPACE.dim))
    store.memories.insert(memories, vectors.astype(np.float32), SPACE)
    return [m.id for m in memories]


def _entity(norm: str) -> EntityRow:
    return EntityRow(norm, norm.title(), norm, compact_key(norm), LABELS[norm])


def _fact(subject: str, predicate: str, obj: str, confidence: float) -> FactRow:
    return FactRow(
        fact_id(subject, predicate, obj), subject, predicate, obj, subject.title(), obj.title(),
        f"{subject} {predicate} {obj}", confidence,
    )  # fmt: skip


def _extract(
    store: Any,
    ids: list[str],
    named: dict[str, list[str]],
    facts: dict[str, list[FactRow]],
    *,
    entities: list[str] | None = None,
    aliases: dict[str, str] | None = None,
) -> None:
    """Write what an extraction of `ids` found: memory -> entity norms named, memory -> facts."""
    found = facts.values()
    store.entities.write_extraction(
        ids,
        extractor="test",
        entities=[_entity(e) for e in entities or sorted({e for n in named.values() for e in n})],
        aliases=aliases or {},
        mentions=[Mention(m, e, e.title()) for m, es in named.items() for e in es],
        facts=list({f.id: f for fs in found for f in fs}.values()),
        provenance=[Provenance(f.id, m, f.confidence) for m, fs in facts.items() for f in fs],
        at=AT,
    )


def _standard(store: Any, n: int = 4) -> list[str]:
    """Memories 0-2 extracted: 0 names Alice and payments, 1 Bob, payments and Berlin, 2 Alice
    and Berlin; Alice works on payments (from 0 and 2), Bob visited Berlin (from 1)."""
    ids = _insert(store, _memories(n))
    works = _fact(ALICE, "works_on", PAYMENTS, 0.8)
    _extract(
        store,
        ids[:3],
        {ids[0]: [ALICE, PAYMENTS], ids[1]: [BOB, PAYMENTS, BERLIN], ids[2]: [ALICE, BERLIN]},
        {ids[0]: [works], ids[1]: [_fact(BOB, "visited", BERLIN, 0.9)], ids[2]: [works]},
    )
    return ids


def _fact_confidence(store: Any, fact: str) -> float:
    rows = store.cypher("MATCH (f:Fact {id: $id}) RETURN f.confidence", {"id": fact}, write=False)
    return float(rows.rows[0][0])


def test_an_extraction_reads_back_from_the_store(contract_store: Any) -> None:
    ids = _standard(contract_store)
    entities = contract_store.entities
    assert entities.of_memory(ids[0]) == [
        (ALICE, "Alice", "person", "Alice"),
        (PAYMENTS, "Payments Service", "service", "Payments Service"),
    ]
    assert entities.facts_of_memory(ids[1]) == [
        (VISITED, "Bob", "visited", "Berlin", "bob visited berlin", 0.9)
    ]
    assert entities.fact_sources([WORKS_ON, VISITED, "fnone"]) == {
        WORKS_ON: [ids[2], ids[0]],  # newest first
        VISITED: [ids[1]],
    }
    assert entities.names([ALICE, BERLIN, "nobody"]) == {
        ALICE: ("Alice", "person"), BERLIN: ("Berlin", "place"),
    }  # fmt: skip
    assert entities.by_key(["paymentsservice", "bob", "nokey"]) == {
        "paymentsservice": [(PAYMENTS, "Payments Service", "service")],
        "bob": [(BOB, "Bob", "person")],
    }
    assert entities.resolve_norms([ALICE, "nobody"]) == {ALICE: ALICE}
    assert sorted(entities.people_by_prefix(["al", "bo"])) == [
        (ALICE, ALICE, "Alice"), (BOB, BOB, "Bob"),
    ]  # fmt: skip
    assert entities.people_by_prefix(["be"]) == []  # Berlin is a place
    assert entities.counts() == {"Entity": 4, "Fact": 2, "mentions": 7, "extracted": 3}
    row = entities.row(PAYMENTS)
    assert row == {
        "id": PAYMENTS, "name": "Payments Service", "norm": PAYMENTS, "key": "paymentsservice",
        "label": "service", "created_at": AT, "aliases": [],
    }  # fmt: skip
    assert type(row["created_at"]) is datetime and row["created_at"].tzinfo is None
    assert entities.row("nobody") is None
    assert entities.overview(query=None, label=None, limit=3) == [
        (ALICE, "Alice", "person", 2, 1, [], 0),
        (BERLIN, "Berlin", "place", 2, 1, [], 0),
        (PAYMENTS, "Payments Service", "service", 2, 1, [], 0),
    ]
    assert entities.overview(query="PAY", label=None, limit=10) == [
        (PAYMENTS, "Payments Service", "service", 2, 1, [], 0)
    ]
    assert [r[0] for r in entities.overview(query=None, label="person", limit=10)] == [ALICE, BOB]
    assert contract_store.pending.items(EXTRACT) == [ids[3]]
    assert entities.pending_extraction_ids() == [ids[3]]


def test_extracting_again_replaces_what_the_memory_said_before(contract_store: Any) -> None:
    ids = _standard(contract_store)
    entities = contract_store.entities
    lower = _fact(ALICE, "works_on", PAYMENTS, 0.5)
    owns = _fact(BOB, "owns", PAYMENTS, 0.6)
    entities.index()
    # memory 1 now names Bob and payments only, and no longer says Bob visited Berlin
    _extract(contract_store, [ids[1]], {ids[1]: [BOB, PAYMENTS]}, {ids[1]: [owns, lower]})
    assert [e for e, *_ in entities.of_memory(ids[1])] == [BOB, PAYMENTS]
    assert sorted(e for _, e, _ in entities.mentions_of([ids[1]])) == [BOB, PAYMENTS]
    assert entities.facts_between([BERLIN]) == []
    assert entities.fact_sources([VISITED]) == {}  # only memory 1 said it
    assert entities.fact_sources([WORKS_ON])[WORKS_ON] == [ids[2], ids[1], ids[0]]
    assert _fact_confidence(contract_store, WORKS_ON) == pytest.approx(0.8)  # the higher kept
    assert entities.counts() == {"Entity": 4, "Fact": 2, "mentions": 6, "extracted": 3}
    # a fact only this memory stated, stated again: made anew with what it says now
    _extract(
        contract_store, [ids[1]], {ids[1]: [BOB]}, {ids[1]: [_fact(BOB, "owns", PAYMENTS, 0.3)]}
    )
    assert _fact_confidence(contract_store, BOB_OWNS) == pytest.approx(0.3)
    assert [f[0] for f in entities.facts_of_memory(ids[1])] == [BOB_OWNS]
    # an extraction that finds nothing still marks the memory done
    _extract(contract_store, [ids[3]], {}, {})
    assert entities.pending_extraction_ids() == []
    assert entities.counts()["extracted"] == 4


def test_the_entity_index_takes_in_each_extraction(contract_store: Any) -> None:
    ids = _insert(contract_store, _memories(3))
    entities = contract_store.entities
    assert entities.index().mentions_of(ids) == []
    works = _fact(ALICE, "works_on", PAYMENTS, 0.8)
    _extract(contract_store, [ids[0]], {ids[0]: [ALICE, PAYMENTS]}, {ids[0]: [works]})
    assert entities.fresh_index() is None  # a commit changed the graph since it was read
    _extract(
        contract_store,
        [ids[1]],
        {ids[1]: [ALICE, PAYMENTS]},
        {ids[1]: [works]},
        entities=[ALICE, PAYMENTS],  # known already: the extraction names them again
    )
    index = entities.index()
    assert entities.fresh_index() is index
    assert entities.mentions_of([ids[0], ids[1]]) == [
        (ids[0], ALICE, "Alice"), (ids[0], PAYMENTS, "Payments Service"),
        (ids[1], ALICE, "Alice"), (ids[1], PAYMENTS, "Payments Service"),
    ]  # fmt: skip
    assert index.facts_of(ALICE) == [(ALICE, "works_on", PAYMENTS, WORKS_ON)]  # once
    assert entities.degrees([ALICE, BERLIN]) == {ALICE: 2}
    assert index.sources_of[WORKS_ON] == [ids[0], ids[1]]
    assert entities.resolve_known([ALICE, "nobody"]) == {ALICE: ALICE}


def test_the_walks_reads_agree_from_the_store_and_from_the_index(contract_store: Any) -> None:
    ids = _standard(contract_store)
    archived = _memories(5)[4].model_copy(update={"lifecycle": "archived"})
    _insert(contract_store, [archived])
    _extract(
        contract_store,
        [archived.id],
        {archived.id: [BOB, PAYMENTS]},
        {archived.id: [_fact(BOB, "visited", BERLIN, 0.5)]},
        entities=[BOB, PAYMENTS, BERLIN],
    )
    entities = contract_store.entities

    def walk() -> tuple[Any, ...]:
        return (
            sorted(entities.things_mentioned_with([ALICE, BOB], ["service", "place"], limit=10)),
            entities.things_mentioned_with([ALICE, BOB], ["place"], limit=1),
            sorted(
                entities.facts_of_people([BOB, ALICE, PAYMENTS], ["visited", "works"], limit=10)
            ),
            entities.things_mentioned_with([PAYMENTS], ["place"], limit=10),  # not a person
        )

    assert entities.fresh_index() is None  # nothing read yet: from the store, person by person
    from_store = walk()
    assert from_store == (
        [
            (ids[0], ALICE, PAYMENTS, "Payments Service"),
            (ids[1], BOB, BERLIN, "Berlin"),
            (ids[1], BOB, PAYMENTS, "Payments Service"),
            (ids[2], ALICE, BERLIN, "Berlin"),
        ],
        [(ids[2], ALICE, BERLIN, "Berlin")],
        [
            (ids[0], ALICE, "works_on", PAYMENTS, "Payments Service"),
            (ids[1], BOB, "visited", BERLIN, "Berlin"),
            (ids[2], ALICE, "works_on", PAYMENTS, "Payments Service"),
        ],
        [],
    )
    entities.index()
    assert entities.fresh_index() is not None
    assert walk() == from_store
    assert sorted(entities.memories_mentioning([BOB, BERLIN])) == [
        (BERLIN, ids[1]), (BERLIN, ids[2]), (BOB, ids[1]),
    ]  # fmt: skip
    assert entities.degrees([BOB]) == {BOB: 2}  # archived memories count
    assert sorted(entities.facts_between([BERLIN])) == [(BOB, "visited", BERLIN, VISITED)]


def test_a_merge_moves_every_edge_onto_the_primary(contract_store: Any) -> None:
    ids = _standard(contract_store)
    entities = contract_store.entities
    # "robert" is Bob by another name: memory 3 names both, and says he owns payments
    _extract(
        contract_store,
        [ids[3]],
        {ids[3]: ["robert", BOB]},
        {ids[3]: [_fact("robert", "owns", PAYMENTS, 0.7)]},
        entities=["robert"],
    )
    assert entities.index().degrees([BOB]) == {BOB: 2}
    with pytest.raises(InvalidInput):
        entities.merge(BOB, [BOB])
    with pytest.raises(NotFound):
        entities.merge(BOB, ["robert", "nobody"])
    with pytest.raises(NotFound):
        entities.merge("nobody", ["robert"])
    assert entities.merge(BOB, ["robert", BOB]) == 2  # a mention and a fact's subject
    assert entities.names(["robert"]) == {}
    assert entities.resolve_norms(["robert", BOB]) == {"robert": BOB, BOB: BOB}
    assert entities.row(BOB)["aliases"] == ["robert"]
    assert [e for e, *_ in entities.of_memory(ids[3])] == [BOB]  # one mention kept
    assert entities.fresh_index() is None  # a merge is not described: the index reads again
    assert entities.degrees([BOB, "robert"]) == {BOB: 2}
    assert entities.resolve_known(["robert"]) == {"robert": BOB}
    owns = fact_id("robert", "owns", PAYMENTS)
    assert (BOB, "owns", PAYMENTS, owns) in entities.facts_between([BOB])
    assert entities.overview(query="bob", label=None, limit=5)[0][5] == ["robert"]


def test_an_entity_deleted_comes_back_from_its_row(contract_store: Any) -> None:
    ids = _standard(contract_store)
    entities = contract_store.entities
    _extract(contract_store, [ids[3]], {ids[3]: [BOB]}, {}, aliases={"bobby": BOB})
    row = entities.row(BOB)
    assert row is not None and row["aliases"] == ["bobby"]
    entities.delete(BOB)
    assert entities.row(BOB) is None
    assert entities.resolve_norms(["bobby", BOB]) == {}
    assert [e for e, *_ in entities.of_memory(ids[1])] == [BERLIN, PAYMENTS]
    assert entities.counts()["Entity"] == 3
    entities.restore(row)
    assert entities.row(BOB) == row
    entities.delete(BOB)
    entities.restore({**row, "created_at": row["created_at"].isoformat()})  # from an audit row
    assert entities.row(BOB) == row
    assert entities.of_memory(ids[1])[0][0] == BERLIN  # its edges are not restored


def test_the_links_into_an_entity_read_back_and_move_in_one_rewrite(contract_store: Any) -> None:
    ids = _standard(contract_store)
    entities = contract_store.entities
    links = entities.links([BOB, ALICE])
    assert links == [
        EntityLink("memory", ids[1], BOB, "Bob", "test"),
        EntityLink("subject", VISITED, BOB),
        EntityLink("memory", ids[0], ALICE, "Alice", "test"),
        EntityLink("memory", ids[2], ALICE, "Alice", "test"),
        EntityLink("subject", WORKS_ON, ALICE),
    ]
    assert entities.links([BERLIN])[-1] == EntityLink("object", VISITED, BERLIN)
    # Bob's mention and fact move to a new "bob~2", which is also called "bobby"
    row = {**entities.row(BOB), "id": "bob~2"}
    moved = [EntityLink(e.kind, e.source, "bob~2", e.name, e.extractor) for e in links[:2]]
    entities.rewrite(
        rows=[row], aliases={"bobby": "bob~2"}, unlink=links[:2],
        link=[*moved, moved[0], EntityLink("memory", "no-such-memory", "bob~2")],
    )  # fmt: skip
    assert entities.links([BOB]) == []
    assert entities.links(["bob~2"]) == moved  # an edge already there is made once
    assert entities.resolve_norms(["bobby"]) == {"bobby": "bob~2"}
    assert entities.index().memories_naming("bob~2") == [ids[1]]
    assert entities.index().facts_of("bob~2") == [("bob~2", "visited", BERLIN, VISITED)]
    # and back: an alias that points elsewhere by now is left alone
    entities.rewrite(aliases={"robby": ALICE})
    entities.rewrite(
        unalias=[("bobby", "bob~2"), ("robby", BOB)], unlink=moved, link=links[:2],
        delete=["bob~2"],
    )  # fmt: skip
    assert entities.row("bob~2") is None and entities.links([BOB]) == links[:2]
    assert entities.resolve_norms(["bobby", "robby"]) == {"robby": ALICE}
    assert entities.index().memories_naming(BOB) == [ids[1]]


def test_what_is_left_to_extract(contract_store: Any) -> None:
    ids = _insert(contract_store, _memories(5))
    archived = _memories(6)[5].model_copy(update={"lifecycle": "archived"})
    _insert(contract_store, [archived])
    entities = contract_store.entities
    _extract(contract_store, [ids[1]], {}, {})
    pending = entities.pending_extraction(limit=10, context=None, include_done=False)
    assert pending == [
        (ids[0], "note 0 about the payments service"),
        (ids[2], "note 2 about the payments service"),
        (ids[3], "note 3. note 3 about the payments service"),
        (ids[4], "note 4 about the payments service"),
    ]
    assert entities.pending_extraction(limit=2, context="billing", include_done=True) == [
        (ids[0], "note 0 about the payments service"),
        (ids[1], "note 1. note 1 about the payments service"),
    ]
    after = entities.pending_extraction(limit=5, context=None, include_done=True, after=ids[2])
    assert [i for i, _ in after] == [ids[3], ids[4]]
    assert entities.count_pending_extraction(context=None, include_done=False) == 4
    assert entities.count_pending_extraction(context="ops", include_done=True) == 2
    assert entities.count_before(ids[2], context=None) == 3
    assert entities.count_before(ids[4], context="billing") == 3
    contract_store.pending.put(EXTRACT, ["01ENTITYGONE"])
    assert entities.texts_for_extraction([ids[1], "01ENTITYGONE", ids[3], ids[0]]) == [
        (ids[0], "note 0 about the payments service"),
        (ids[3], "note 3. note 3 about the payments service"),
    ]
    assert "01ENTITYGONE" not in entities.pending_extraction_ids()  # its work is finished
    entities.mark_pending_extraction([ids[1]])
    assert ids[1] in entities.pending_extraction_ids()
    assert entities.count_pending_extraction(context=None, include_done=False) == 5
    assert entities.counts()["extracted"] == 0


def test_deleting_a_memory_forgets_the_facts_only_it_stated(contract_store: Any) -> None:
    ids = _standard(contract_store)
    entities = contract_store.entities
    entities.index()
    contract_store.memories.delete(ids[1])  # the only source of "Bob visited Berlin"
    assert entities.fact_sources([VISITED, WORKS_ON]) == {WORKS_ON: [ids[2], ids[0]]}
    assert entities.counts() == {"Entity": 4, "Fact": 1, "mentions": 4, "extracted": 2}
    assert entities.facts_between([BOB]) == []
    assert entities.degrees([BOB, BERLIN]) == {BERLIN: 1}
    contract_store.memories.delete(ids[0])  # memory 2 still says Alice works on payments
    assert entities.fact_sources([WORKS_ON]) == {WORKS_ON: [ids[2]]}
    assert entities.names([BOB]) == {BOB: ("Bob", "person")}  # entities stay (the steward's)


def test_a_store_opened_afresh_reads_the_same_entity_index(
    contract_store: Any, engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    ids = _standard(contract_store)
    _extract(contract_store, [ids[3]], {ids[3]: ["robert"]}, {}, entities=["robert"])
    contract_store.entities.merge(BOB, ["robert"])
    contract_store.cypher(
        "MATCH (n:Memory {id: $n}), (o:Memory {id: $o}) CREATE (n)-[:SUPERSEDES]->(o)",
        {"n": ids[2], "o": ids[0]},
        write=True,
    )

    def seen(store: Any) -> tuple[Any, ...]:
        index = store.entities.index()
        return (
            sorted(index.mentions_of(ids)),
            sorted(index.facts_between([ALICE, BOB, BERLIN, PAYMENTS])),
            index.supersession_links([ids[0]]),
            index.resolve(["robert", ALICE, "nobody"]),
            index.degrees([ALICE, BOB, BERLIN, PAYMENTS]),
            {f: sorted(m) for f, m in index.sources_of.items()},
            dict(index.labels),
        )

    before = seen(contract_store)
    assert before[2:5] == (
        [(ids[2], ids[0])],
        {"robert": BOB, ALICE: ALICE},
        {ALICE: 2, BOB: 2, BERLIN: 2, PAYMENTS: 2},
    )
    assert before[5] == {VISITED: [ids[1]], WORKS_ON: sorted([ids[0], ids[2]])}
    contract_store.close()
    again = _reopen(engine, tmp_path, request)
    try:
        assert again.entities.fresh_index() is None
        assert seen(again) == before
        assert again.entities.resolve_known(["robert"]) == {"robert": BOB}
    finally:
        again.close()


def _reopen(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    if engine == "embedded":
        from graphmem.storage import open_store_at

        return open_store_at(tmp_path / "store")
    from graphmem.storage.falkordb.store import FalkorStore
    from graphmem.store_url import parse_store_url

    server = request.getfixturevalue("falkordb_server")
    return FalkorStore.open(parse_store_url(server.store_url("project")), tmp_path / "home2")
