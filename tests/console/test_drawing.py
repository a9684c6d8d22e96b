"""The pictures' layouts: every node a link, no two boxes or labels on top of each other, a
label cut to its box, a path that wraps without an edge across a row, and bars on one scale."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from types import SimpleNamespace

from graphmem.console import drawing
from graphmem.console.drawing import CHAR_W, EDGE_CHAR_W, PAD, Edge, Node, Picture
from graphmem.graph.models import MemoryEntity, MemoryGraph, Neighbour, PathNode, PathStep

LONG = "The billing-service migration to Postgres 16 locked the orders table for 40 minutes"
WIDE = "請求サービスの移行で注文テーブルが四十分ロックされた"


def link(kind: str) -> drawing.Link:
    return lambda i: f"/console/{kind}/{i}"


def graph(entities: int, reached: int, direct: int) -> MemoryGraph:
    names = [f"entity number {n} with a rather long name" for n in range(entities)]
    return MemoryGraph(
        memory_id="m0",
        entities=[
            MemoryEntity(id=f"e{n}", name=name, label="concept", mentioned_as=name)
            for n, name in enumerate(names)
        ],
        neighbours=[
            *(
                Neighbour(
                    id=f"r{n}",
                    label=f"{LONG} ({n})",
                    kind="note",
                    lifecycle="active",
                    relation="mentions",
                    via=names[n % entities],
                )
                for n in range(reached)
            ),
            *(
                Neighbour(
                    id=f"d{n}",
                    label=WIDE,
                    kind="decision",
                    lifecycle="superseded",
                    relation="superseded_by",
                )
                for n in range(direct)
            ),
        ],
    )


def boxes_overlap(a: Node, b: Node) -> bool:
    return a.x < b.right and b.x < a.right and a.y < b.bottom and b.y < a.bottom


def label_width(text: str, char_w: float) -> float:
    return sum(drawing._cells(c) for c in text) * char_w


def edge_label_box(e: Edge) -> tuple[float, float, float, float]:
    width = label_width(e.label, EDGE_CHAR_W)
    left = {"start": e.lx, "middle": e.lx - width / 2, "end": e.lx - width}[e.anchor]
    return left, e.ly - 9, left + width, e.ly + 2


def check_layout(picture: Picture) -> None:
    for a, b in itertools.combinations(picture.nodes, 2):
        assert not boxes_overlap(a, b), (a.label, b.label)
    for node in picture.nodes:
        assert node.href, node.label  # every node is a link
        assert label_width(node.label, CHAR_W) <= node.w - 2 * PAD + CHAR_W / 2, node.label
        assert node.x >= 0 and node.right <= picture.width and node.bottom <= picture.height
    labelled = [edge_label_box(e) for e in picture.edges if e.label]
    for (l1, t1, r1, b1), (l2, t2, r2, b2) in itertools.combinations(labelled, 2):
        assert not (l1 < r2 and l2 < r1 and t1 < b2 and t2 < b1)
    for left, top, right, bottom in labelled:
        for node in picture.nodes:
            assert not (left < node.right and node.x < right and top < node.bottom
                        and node.y < bottom), node.label  # fmt: skip


def test_a_full_neighbourhood_links_every_node_and_overlaps_nothing() -> None:
    picture = drawing.neighbourhood(
        graph(entities=10, reached=12, direct=4), LONG, "/console/memory/m0",
        link("memory"), link("entity"),
    )  # fmt: skip
    assert len(picture.nodes) == 1 + 10 + 12 + 4
    check_layout(picture)
    entity_links = {n.href for n in picture.nodes if n.role == "entity"}
    assert entity_links == {f"/console/entity/e{n}" for n in range(10)}
    assert all(n.label.endswith("…") for n in picture.nodes if n.title == LONG)


def test_a_neighbour_is_drawn_beside_the_entity_it_was_reached_through() -> None:
    picture = drawing.neighbourhood(
        graph(entities=3, reached=3, direct=0), "centre", "/c", link("memory"), link("entity")
    )
    at = {n.href: n for n in picture.nodes}
    for n in range(3):
        entity, memory = at[f"/console/entity/e{n}"], at[f"/console/memory/r{n}"]
        assert any((e.x1, e.y1, e.x2, e.y2) == (entity.right, entity.cy, memory.x, memory.cy)
                   for e in picture.edges)  # fmt: skip


def test_a_long_path_wraps_like_a_snake_so_no_edge_crosses_a_row() -> None:
    nodes = [PathNode(kind="memory" if n % 2 == 0 else "entity", id=f"n{n}", label=f"{LONG} {n}")
             for n in range(8)]  # fmt: skip
    steps = [PathStep(source=a.label, relation="mitigated_by", target=b.label, reverse=n % 3 == 0)
             for n, (a, b) in enumerate(itertools.pairwise(nodes))]  # fmt: skip
    picture = drawing.path(steps, nodes, link("memory"), link("entity"))
    check_layout(picture)
    assert [n.href for n in picture.nodes] == [
        f"/console/{'memory' if n % 2 == 0 else 'entity'}/n{n}" for n in range(8)
    ]
    for edge, (a, b) in zip(picture.edges, itertools.pairwise(picture.nodes), strict=True):
        assert edge.x1 == edge.x2 or edge.y1 == edge.y2  # across within a row, or straight down
        if a.y != b.y:
            assert a.cx == b.cx and b.y > a.y  # the next row starts under the row's last node
        for other in picture.nodes:
            if other not in (a, b):  # an edge touches only its own two nodes
                assert not (min(edge.x1, edge.x2) < other.right and other.x < max(edge.x1, edge.x2)
                            and min(edge.y1, edge.y2) <= other.bottom
                            and other.y <= max(edge.y1, edge.y2)), other.label  # fmt: skip
    arrows = [e.label for e in picture.edges]
    assert arrows[1] == "mitigated by →"  # the first row runs right, the relation with it
    assert arrows[0] == "← mitigated by"  # reversed: it reads from the later node
    assert arrows[2] == "↓ mitigated by"  # down to the second row
    assert arrows[4] == "← mitigated by"  # the second row runs left, the relation with it
    assert arrows[3] == "mitigated by →"  # ... but this one reads from the later node


def test_versions_link_each_version_and_wrap_when_many() -> None:
    entries = [
        SimpleNamespace(memory=SimpleNamespace(
            id=f"v{n}", content=LONG, lifecycle="superseded" if n < 6 else "active",
            created_at=datetime(2025, 1 + n, 1, tzinfo=UTC)))
        for n in range(7)
    ]  # fmt: skip
    picture = drawing.versions(entries, "v6", link("memory"))
    check_layout(picture)
    assert [n.role for n in picture.nodes][-1] == "centre"
    assert len({n.y for n in picture.nodes}) == 3


def test_bars_are_on_the_scale_given_and_carry_their_numbers() -> None:
    explain = {"features": {"cosine": 1.0, "bm25": 0.5, "terms": 0.0},
               "weights": {"cosine": 1.0, "bm25": 0.5, "terms": 0.4}}  # fmt: skip
    bars = drawing.bars(explain, scale=100)
    assert [(b.name, b.width, b.contribution) for b in bars] == [
        ("cosine", 100.0, 1.0), ("bm25", 25.0, 0.25),
    ]  # fmt: skip


def fact(subject: str, predicate: str, obj: str) -> SimpleNamespace:
    return SimpleNamespace(subject_id=subject, subject=f"{subject} {LONG}", predicate=predicate,
                           object_id=obj, object=f"{obj} {WIDE}")  # fmt: skip


def test_an_entity_s_neighbours_are_columns_by_distance_and_full_columns_say_so() -> None:
    facts = [fact("c", "uses", f"n{i}") for i in range(20)]
    facts += [fact("n0", "depends_on", f"m{i}") for i in range(3)] + [fact("n1", "uses", "n0")]
    picture, left_out = drawing.entity_graph(("c", "centre"), facts, ["n0"], link("entity"))
    check_layout(picture)
    columns = sorted({n.x for n in picture.nodes})
    assert len(columns) == 3  # the centre, its neighbours, what the expanded n0 names
    assert len([n for n in picture.nodes if n.x == columns[1]]) == 14
    assert set(left_out) == {f"n{i}" for i in range(14, 20)}
    labelled = [e.label for e in picture.edges if e.label]
    assert labelled.count("uses") == 14 and labelled.count("depends on") == 3

    alone, nothing = drawing.entity_graph(("c", "centre"), [], [], link("entity"))
    assert [n.role for n in alone.nodes] == ["centre"] and nothing == []
