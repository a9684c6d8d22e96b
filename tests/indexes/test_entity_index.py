"""The in-process entity index keeps mentions and facts only as numbered arrays: what the answer
hop, the console and the walk read of it must still come back in the store's order, with
nothing lost when the six reads disagree."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from graphmem.indexes.entity_index import EntityChange, EntityIndex


def _table(*columns: list[str]) -> pa.Table:
    return pa.table({f"c{i}": pa.array(c, pa.string()) for i, c in enumerate(columns)})


def _index(
    mentions: list[tuple[str, str]],
    names: list[tuple[str, str, str]],
    facts: Sequence[tuple[str, str, str, str]] = (),
    sources: Sequence[tuple[str, str]] = (),
    aliases: Sequence[tuple[str, str]] = (),
) -> EntityIndex:
    def columns(rows: Sequence[tuple[str, ...]], width: int) -> list[list[str]]:
        return [[row[i] for row in rows] for i in range(width)]

    return EntityIndex(
        _table(*columns(mentions, 2)),
        _table(*columns(names, 3)),
        _table(*columns(facts, 4)),
        _table([], []),
        _table(*columns(sources, 2)),
        _table(*columns(aliases, 2)),
    )


def test_mentions_come_back_in_the_order_the_store_returned_them() -> None:
    index = _index(
        [("m2", "b"), ("m1", "a"), ("m2", "a"), ("m1", "c")],
        [("a", "A", "concept"), ("b", "B", "concept"), ("c", "C", "place")],
    )

    assert index.entities_named_by("m2") == ["b", "a"]
    assert index.memories_naming("a") == ["m1", "m2"]
    assert index.entities_named_by("nobody") == []
    assert index.mentions_of(["m1"]) == [("m1", "a", "A"), ("m1", "c", "C")]
    assert index.degrees(["a", "b", "d"]) == {"a": 2, "b": 1}


def test_each_fact_is_found_from_both_ends_and_a_loop_once() -> None:
    index = _index(
        [("m1", "a")],
        [("a", "A", "person"), ("b", "B", "place")],
        [("b", "near", "a", "f1"), ("a", "likes", "b", "f2"), ("a", "is", "a", "f3")],
    )

    assert index.facts_of("a") == [
        ("b", "near", "a", "f1"),
        ("a", "likes", "b", "f2"),
        ("a", "is", "a", "f3"),
    ]
    assert index.facts_of("b") == [("b", "near", "a", "f1"), ("a", "likes", "b", "f2")]
    assert [f[3] for f in index.facts_between(["a", "b"])] == ["f1", "f2", "f3"]


def test_an_entity_made_between_the_reads_is_still_walked() -> None:
    """The mentions were read after "new" was made, the names before."""
    index = _index(
        [("m1", "a"), ("m2", "new")],
        [("a", "A", "person")],
        [("a", "knows", "new", "f1")],
    )

    assert index.memories_naming("new") == ["m2"]
    assert index.facts_of("new") == [("a", "knows", "new", "f1")]
    assert index.mentions_of(["m2"]) == [("m2", "new", "new")]  # no name yet: its id
    assert index.walk.entity_count == 2


def test_only_the_sources_of_facts_about_people_are_kept() -> None:
    index = _index(
        [("m1", "tim"), ("m1", "paris")],
        [("tim", "Tim", "person"), ("paris", "Paris", "place")],
        [("tim", "go_to", "paris", "f1"), ("paris", "near", "tim", "f2")],
        [("f1", "m1"), ("f2", "m1")],
    )

    assert list(index.facts_by("tim", {"go"})) == [("m1", "tim", "go_to", "paris", "Paris")]
    assert dict(index.sources_of) == {"f1": ["m1"]}


def _view(index: EntityIndex) -> dict[str, object]:
    """Everything a reader of the index can see."""
    walk = index.walk
    return {
        "names": index.names,
        "labels": index.labels,
        "aliases": index.aliases,
        "memories": {m: index.entities_named_by(m) for m in index.memory_ids},
        "entities": {e: index.memories_naming(e) for e in index.entity_ids},
        "facts": {e: index.facts_of(e) for e in index.entity_ids},
        "sources": dict(index.sources_of),
        "arrays": [
            a.tolist()
            for a in (walk.degree, walk.rank, walk.memory_ptr, walk.fact_ptr, walk.facts_of)
        ],
    }


def test_an_index_that_takes_in_a_change_is_the_index_read_after_it() -> None:
    mentions = [("m1", "tim"), ("m1", "dune"), ("m2", "tim")]
    names = [("tim", "Tim", "person"), ("dune", "Dune", "book")]
    facts = [("tim", "read", "dune", "f1")]
    sources = [("f1", "m1")]
    before = _index(mentions, names, facts, sources)
    change = EntityChange(
        entities=[("tim", "Tim", "person"), ("ann", "Ann", "person"), ("paris", "Paris", "place")],
        aliases={"timothy": "tim"},
        mentions=[("m3", "ann"), ("m3", "paris"), ("m3", "tim")],
        facts=[("ann", "go_to", "paris", "f2")],
        sources=[("f2", "m3", "ann"), ("f1", "m3", "tim")],  # f1 was known: a second source
    )

    after = before.taking([change])

    read = _index(
        [*mentions, *change.mentions],
        [*names, ("ann", "Ann", "person"), ("paris", "Paris", "place")],
        [*facts, *change.facts],
        [*sources, ("f2", "m3"), ("f1", "m3")],
        [("timothy", "tim")],
    )
    assert _view(after) == _view(read)
    assert before.memories_naming("tim") == ["m1", "m2"]  # a walk in flight reads it as it was
    assert "ann" not in before.names and before.sources_of["f1"] == ["m1"]
