"""The walk's admission of memories: what it reaches once its room is gone is found from the
memories already in, and is exactly what offering every memory of every entity would give, but
for the links of memories of earlier rounds (a round starts by linking all of theirs)."""

from __future__ import annotations

import gc
import random

import pyarrow as pa

from graphmem.graph.multihop import Subgraph, _Admission, _reached, trace
from graphmem.heap import settled
from graphmem.storage.entity_index import EntityIndex


def _index(mentions: list[tuple[str, str]]) -> EntityIndex:
    def table(*columns: list[str]) -> pa.Table:
        return pa.table({f"c{i}": pa.array(c, pa.string()) for i, c in enumerate(columns)})

    memories, entities = zip(*mentions, strict=True)
    names = sorted(set(entities))
    return EntityIndex(
        table(list(memories), list(entities)),
        table(names, names, ["concept"] * len(names)),
        table([], [], [], []),
        table([], []),
        table([], []),
        table([], []),
    )


def test_pairs_reached_after_the_room_is_gone_are_those_of_memories_admitted() -> None:
    rng = random.Random(5)
    mentions = sorted({(f"m{rng.randrange(300)}", f"e{rng.randrange(60)}") for _ in range(1500)})
    index = _index(mentions)
    walkable = sorted(index.memories_of, key=lambda e: (len(index.memories_of[e]), e))
    known = {f"m{i}" for i in range(10)}

    every = _Admission(set(known), 40)
    expected = {
        (m, e) for e in walkable for m in index.memories_of[e] if every(m) and m not in known
    }
    admitted = _Admission(set(known), 40)
    got = _reached(index, walkable, admitted)

    assert admitted.full and list(admitted.new) == list(every.new)
    assert set(got) == expected
    assert len(got) == len(set(got))


def test_paths_follow_the_strongest_links_added_during_the_walk() -> None:
    sub = Subgraph()
    sub.link("m:a", "e:x", "mentions", 1.0)
    sub.link("e:x", "m:b", "mentions", 1.0)
    sub.link("m:a", "m:c", "next_in_session", 0.1)
    sub.link("m:c", "m:b", "next_in_session", 0.1)
    sub.link("m:a", "m:c", "supersedes", 1.0)  # the stronger relation replaces the weaker

    assert trace(sub, ["a"], ["b", "c"]) == {"b": ["m:a", "e:x", "m:b"], "c": ["m:a", "m:c"]}
    assert sub.adjacent["m:a"] == ["e:x", "m:c"]


def test_a_settled_index_is_left_out_of_collections() -> None:
    gc.unfreeze()
    index = settled(_index([("m1", "e1"), ("m2", "e1")]))

    assert gc.get_freeze_count() > 0
    assert index.memories_of["e1"] == ["m1", "m2"]
    gc.unfreeze()
