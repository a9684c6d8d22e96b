"""The walk works on a round's mentions at once, as arrays. What it gathers must be what the
plain walk gathers, one memory and one entity at a time: the same memories, admitted in the
same order while there is room, and the same edges, at the same weights."""

from __future__ import annotations

import gc
import math
import random
from collections.abc import Sequence

import pyarrow as pa
import pytest

from graphmem.graph import multihop
from graphmem.graph.multihop import Subgraph, gather, rank, trace
from graphmem.heap import settled
from graphmem.indexes.entity_index import EntityIndex


def _table(*columns: list[str]) -> pa.Table:
    return pa.table({f"c{i}": pa.array(c, pa.string()) for i, c in enumerate(columns)})


def _index(
    mentions: list[tuple[str, str]], facts: Sequence[tuple[str, str, str]] = ()
) -> EntityIndex:
    memories, entities = (list(c) for c in zip(*mentions, strict=True))
    names = sorted(set(entities))
    return EntityIndex(
        _table(memories, entities),
        _table(names, names, ["concept"] * len(names)),
        _table(*(list(c) for c in zip(*facts, strict=True)), [f"f{i}" for i in range(len(facts))])
        if facts
        else _table([], [], [], []),
        _table([], []),
        _table([], []),
        _table([], []),
    )


class _Entities:
    def __init__(self, index: EntityIndex) -> None:
        self.built = index

    def index(self, *, while_extracting: bool = False) -> EntityIndex:
        return self.built


class _Memories:
    def session_ids(self, ids: Sequence[str]) -> dict[str, str]:
        return {}

    def session_order(self, sessions: Sequence[str]) -> dict[str, list[str]]:
        return {}


class _Store:
    """What the walk reads of a store: its entity index and (here, no) sessions."""

    def __init__(self, index: EntityIndex) -> None:
        self.entities = _Entities(index)
        self.memories = _Memories()


def _plain_walk(
    index: EntityIndex, seeds: list[str], hops: int, room: int
) -> tuple[list[str], dict[tuple[str, str], float]]:
    """The walk written out: memories in the order admitted, edges with their weights."""
    memories = list(seeds)
    edges: dict[tuple[str, str], float] = {}
    expanded: set[str] = set()
    frontier = list(seeds)

    def degree(entity: str) -> int:
        return len(index.memories_naming(entity))

    def mention(memory: str, entity: str) -> None:
        edges.setdefault(("e:" + entity, "m:" + memory), 1 / math.log(2 + degree(entity)))

    for _ in range(hops):
        if not frontier or len(memories) >= room:
            break
        named = []
        for memory in frontier:
            for entity in index.entities_named_by(memory):
                mention(memory, entity)
                named.append(entity)
        fresh = [e for e in dict.fromkeys(named) if e not in expanded]
        linked = set()
        for subject, _, obj, _ in index.facts_between(fresh):
            edges[tuple(sorted(("e:" + subject, "e:" + obj)))] = 1.0  # type: ignore[index]
            linked |= {subject, obj}
        expanded.update(fresh)
        walkable = sorted(
            (e for e in set(fresh) | linked if degree(e) <= multihop.HUB_MENTIONS),
            key=lambda e: (degree(e), e),
        )
        new: list[str] = []
        for entity in walkable:
            for memory in index.memories_naming(entity):
                if memory not in memories and memory not in new and len(memories + new) < room:
                    new.append(memory)
                if memory in new:
                    mention(memory, entity)
        memories += new
        frontier = new[: multihop.MAX_FRONTIER]
    return memories, edges


@pytest.mark.parametrize("room", [40, 120, 700])
def test_the_walk_gathers_what_the_plain_walk_gathers(
    room: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(room)
    mentions = sorted({(f"m{rng.randrange(400)}", f"e{rng.randrange(90)}") for _ in range(1600)})
    facts = [(f"e{rng.randrange(90)}", "uses", f"e{rng.randrange(90)}") for _ in range(30)]
    index = _index(mentions, facts)
    monkeypatch.setattr(multihop, "MAX_MEMORIES", room)
    seeds = ["m1", "m2", "m3", "nowhere"]  # a seed may name nothing

    sub = gather(_Store(index), seeds, max_hops=2)  # type: ignore[arg-type]

    memories, edges = _plain_walk(index, seeds, 2, room)
    assert sub.memories == set(memories)
    graph = sub.graph
    got = {
        tuple(sorted((graph.node(int(a)), graph.node(int(b))))): w
        for a, b, w in zip(graph.ca, graph.cb, graph.weight.tolist(), strict=True)
    }
    assert got == pytest.approx(edges)
    assert sub.entity_count == len({e for pair in edges for e in pair if e[:2] == "e:"})


def test_rank_favours_memories_close_to_the_seeds() -> None:
    index = _index([("m1", "e1"), ("m2", "e1"), ("m2", "e2"), ("m3", "e2"), ("m4", "e3")])
    sub = gather(_Store(index), ["m1"], max_hops=2)  # type: ignore[arg-type]

    scores = rank(sub, {"m1": 1.0}, damping=0.85)

    assert set(scores) == {"m1", "m2", "m3"}  # m4 shares nothing with them
    assert scores["m1"] > scores["m2"] > scores["m3"] > 0
    assert trace(sub, ["m1"], ["m3"]) == {"m3": ["m:m1", "e:e1", "m:m2", "e:e2", "m:m3"]}


def test_rank_restarts_mostly_from_recalls_first_hit() -> None:
    index = _index([("m1", "e1"), ("a", "e1"), ("m2", "e2"), ("b", "e2")])
    sub = gather(_Store(index), ["m1", "m2"], max_hops=1)  # type: ignore[arg-type]

    scores = rank(sub, {"m1": 1.0, "m2": 0.9}, damping=0.85)

    # 0.9 ** SEED_SHARPNESS: the second seed restarts less than half as often as the first
    assert scores["a"] > 2 * scores["b"]


def test_fuse_lets_what_the_walk_reached_pass_a_weak_seed_but_not_recalls_first_hits() -> None:
    recalled = {"r1": 1.0, "r2": 0.95, "r3": 0.7, "r4": 0.6}
    seeds = {"r1", "r2", "r3"}
    walked = {"r1": 0.5, "r2": 0.3, "r3": 0.2, "far": 0.05, "near": 0.1}

    scores = multihop.fuse(recalled, walked, seeds, 0.8, {}, 0.3)

    order = sorted(scores, key=lambda m: -scores[m])
    assert order[:2] == ["r1", "r2"]  # protected: the walk adds to them
    assert order.index("near") < order.index("r3")  # a seed's PageRank is its own restart
    assert scores["near"] == pytest.approx(0.8)  # the best memory reached gets the full bonus
    assert scores["far"] == pytest.approx(0.4)
    assert scores["r4"] == pytest.approx(0.6)  # recalled, not reached


def test_paths_follow_the_strongest_links() -> None:
    sub = Subgraph()
    sub.link("m:a", "e:x", "mentions", 1.0)
    sub.link("e:x", "m:b", "mentions", 1.0)
    sub.link("m:a", "m:c", "next_in_session", 0.1)
    sub.link("m:c", "m:b", "next_in_session", 0.1)
    sub.link("m:a", "m:c", "supersedes", 1.0)  # the stronger relation replaces the weaker

    assert trace(sub, ["a"], ["b", "c"]) == {"b": ["m:a", "e:x", "m:b"], "c": ["m:a", "m:c"]}
    assert sub.edge("m:c", "m:a").relation == "supersedes"


def test_a_link_stronger_than_a_mention_replaces_it_on_the_path() -> None:
    index = _index([("m1", "e1"), ("m2", "e1")])
    sub = gather(_Store(index), ["m1"], max_hops=1)  # type: ignore[arg-type]
    mention = sub.edge("e:e1", "m:m2")
    assert mention == sub.edge("m:m2", "e:e1")
    assert (mention.relation, mention.source) == ("mentions", "m:m2")

    sub.link("m:m2", "e:e1", "answers", 1.0)

    assert mention.weight < 1.0
    assert sub.edge("m:m2", "e:e1").relation == "answers"
    assert len(sub.graph) == 2


def test_a_settled_index_is_left_out_of_collections() -> None:
    gc.unfreeze()
    index = settled(_index([("m1", "e1"), ("m2", "e1")]))

    assert gc.get_freeze_count() > 0
    assert index.memories_naming("e1") == ["m1", "m2"]
    gc.unfreeze()
