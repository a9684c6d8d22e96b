"""The in-process entity index keeps mentions and facts only as numbered arrays: what the answer
hop, the console and the walk read of it must still come back in the store's order, with
nothing lost when the six reads disagree."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from graphmem.storage.entity_index import EntityIndex


def _table(*columns: list[str]) -> pa.Table:
    return pa.table({f"c{i}": pa.array(c, pa.string()) for i, c in enumerate(columns)})


def _index(
    mentions: list[tuple[str, str]],
    names: list[tuple[str, str, str]],
    facts: Sequence[tuple[str, str, str, str]] = (),
    sources: Sequence[tuple[str, str]] = (),
) -> EntityIndex:
    def columns(rows: Sequence[tuple[str, ...]], width: int) -> list[list[str]]:
        return [[row[i] for row in rows] for i in range(width)]

    return EntityIndex(
        _table(*columns(mentions, 2)),
        _table(*columns(names, 3)),
        _table(*columns(facts, 4)),
        _table([], []),
        _table(*columns(sources, 2)),
        _table([], []),
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
