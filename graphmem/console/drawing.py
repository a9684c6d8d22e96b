"""Pictures laid out on the server, drawn by the templates as SVG: a memory's neighbourhood, its
line of versions, a multi-hop path and the bars of a hit's explanation. Only coordinates and
labels are made here; the template engine escapes every label.

Nodes are boxes in columns or rows, never scattered on a ring, so no two can meet; labels are set
in a monospace font (the stylesheet's), so their width is known here and each is cut to its box.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphmem.graph.models import MemoryGraph, Neighbour, PathNode, PathStep

Link = Callable[[str], str]
"""An id to the URL of its page."""

WIDTH = 720
MARGIN = 10
LABEL_CHARS = 28
CHAR_W = 6.7  # one cell of an 11 px monospace label, a little over (DejaVu Sans Mono: 6.62)
EDGE_CHAR_W = 6.1  # one cell of a 10 px edge label
PAD = 6  # between a box's edge and its label
BOX_H = 24
ROW = BOX_H + 8  # a column's pitch
SNAKE_ROW_GAP = 32  # room between a path's rows for the label of the edge going down


def short(text: str, limit: int = LABEL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cells(char: str) -> int:
    """Monospace cells a character takes: two for wide (CJK) ones."""
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def fit(text: str, width: float, char_w: float = CHAR_W) -> str:
    """`text` on one line, cut with an ellipsis to `width` pixels of `char_w` cells."""
    flat = " ".join(text.split())
    room = int(width // char_w)
    if sum(_cells(c) for c in flat) <= room:
        return flat
    out, used = [], 1  # the ellipsis' cell
    for char in flat:
        used += _cells(char)
        if used > room:
            break
        out.append(char)
    return "".join(out).rstrip() + "…"


@dataclass
class Node:
    """A box at (x, y), its top left corner, with a label that fits it."""

    x: float
    y: float
    w: float
    label: str
    role: str  # centre | entity | memory
    href: str | None = None
    title: str = ""  # the whole label, shown on hover
    h: float = BOX_H

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2


def box(x: float, y: float, w: float, text: str, role: str, href: str | None) -> Node:
    return Node(x, y, w, fit(text, w - 2 * PAD), role, href, " ".join(text.split()))


@dataclass
class Edge:
    x1: float
    y1: float
    x2: float
    y2: float
    label: str = ""
    lx: float = 0.0  # where the label's baseline starts, ends or is centred (anchor)
    ly: float = 0.0
    anchor: str = "middle"  # start | middle | end


@dataclass
class Picture:
    width: int
    height: int
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)


def neighbourhood(
    graph: MemoryGraph,
    centre_label: str,
    centre_href: str,
    memory_link: Link,
    entity_link: Link,
    entity_limit: int = 12,
    neighbour_limit: int = 30,
) -> Picture:
    """Three columns: the memory; the entities it names and the memories linked to it directly
    (the relation on the edge); and beside each entity the memories reached through it."""
    centre_w, gap1, middle_w, gap2 = 170, 90, 190, 60
    middle_x = MARGIN + centre_w + gap1
    outer_x = middle_x + middle_w + gap2
    outer_w = WIDTH - MARGIN - outer_x
    entities = graph.entities[:entity_limit]
    names = {e.name for e in entities}
    reached: dict[str, list[Neighbour]] = {}
    direct: list[Neighbour] = []
    for other in graph.neighbours[:neighbour_limit]:
        if other.via in names:
            reached.setdefault(other.via or "", []).append(other)
        else:
            direct.append(other)
    nodes: list[Node] = []
    edges: list[tuple[Node, Node, str]] = []  # from, to, label; the centre's filled in last
    centre = Node(0, 0, centre_w, fit(centre_label, centre_w - 2 * PAD), "centre", centre_href,
                  " ".join(centre_label.split()))  # fmt: skip
    y = float(MARGIN)
    for entity in entities:
        group = reached.get(entity.name, [])
        rows = max(1, len(group))
        title = f"{entity.name} ({entity.label})"
        node = box(middle_x, y + (rows - 1) * ROW / 2, middle_w, entity.name, "entity",
                   entity_link(entity.id))  # fmt: skip
        node.title = title
        nodes.append(node)
        edges.append((centre, node, ""))
        for i, other in enumerate(group):
            far = box(outer_x, y + i * ROW, outer_w, other.label, "memory", memory_link(other.id))
            nodes.append(far)
            edges.append((node, far, ""))
        y += rows * ROW
    for other in direct:
        node = box(middle_x, y, middle_w, other.label, "memory", memory_link(other.id))
        nodes.append(node)
        edges.append((centre, node, other.relation.replace("_", " ")))
        y += ROW
    height = max(y - ROW + BOX_H, BOX_H) + 2 * MARGIN
    centre.x, centre.y = MARGIN, (height - BOX_H) / 2
    picture = Picture(WIDTH, int(height + 0.5), [*nodes, centre])
    for source, target, label in edges:
        edge = Edge(source.right, source.cy, target.x, target.cy)
        if label:
            edge.label = fit(label, gap1 - 10, EDGE_CHAR_W)
            edge.lx, edge.ly, edge.anchor = target.x - 6, target.cy - 3, "end"
        picture.edges.append(edge)
    return picture


def _snake(count: int, per_row: int, gap: float) -> tuple[list[tuple[float, float]], float, int]:
    """Places for `count` boxes in rows of `per_row`, the first row left to right, the next right
    to left under it and so on, so each row starts under the last box of the row above and no
    edge crosses a row: the places, the boxes' width and the picture's height."""
    w = (WIDTH - 2 * MARGIN - (per_row - 1) * gap) / per_row
    places: list[tuple[float, float]] = []
    for i in range(count):
        row, col = divmod(i, per_row)
        if row % 2:
            col = per_row - 1 - col
        places.append((MARGIN + col * (w + gap), MARGIN + row * (BOX_H + SNAKE_ROW_GAP)))
    rows = max(1, -(-count // per_row))
    return places, w, int(2 * MARGIN + rows * BOX_H + (rows - 1) * SNAKE_ROW_GAP)


def _join(a: Node, b: Node, relation: str = "", reverse: bool = False) -> Edge:
    """The edge from one box of a snake to the next, its relation arrowed the way it reads."""
    if a.y == b.y:
        rightwards = b.x > a.x
        edge = Edge(a.right, a.cy, b.x, b.cy) if rightwards else Edge(a.x, a.cy, b.right, b.cy)
        if relation:
            points_right = rightwards != reverse
            edge.label = f"{relation} →" if points_right else f"← {relation}"
            edge.lx, edge.ly = (edge.x1 + edge.x2) / 2, a.cy - 4
            edge.label = fit(edge.label, abs(edge.x2 - edge.x1) - 8, EDGE_CHAR_W)
        return edge
    edge = Edge(a.cx, a.bottom, b.cx, b.y)
    if relation:
        edge.label = fit(f"{'↑' if reverse else '↓'} {relation}", 200, EDGE_CHAR_W)
        left = a.cx < WIDTH / 2
        edge.lx, edge.anchor = (a.cx + 6, "start") if left else (a.cx - 6, "end")
        edge.ly = (a.bottom + b.y) / 2 + 4
    return edge


def versions(entries: Sequence[Any], current: str, link: Link, per_row: int = 3) -> Picture:
    """A timeline's versions, oldest first, each a link, in rows that wrap like a snake."""
    places, w, height = _snake(len(entries), per_row, 80)
    picture = Picture(WIDTH, height)
    for (x, y), entry in zip(places, entries, strict=True):
        memory = entry.memory
        label = f"{memory.created_at:%Y-%m-%d} · {memory.lifecycle}"
        node = box(x, y, w, label, "centre" if memory.id == current else "memory", link(memory.id))
        node.title = " ".join(memory.content.split())
        picture.nodes.append(node)
    picture.edges = [_join(a, b) for a, b in zip(picture.nodes, picture.nodes[1:], strict=False)]
    return picture


def path(
    steps: Sequence[PathStep],
    nodes: Sequence[PathNode],
    memory_link: Link,
    entity_link: Link,
    per_row: int = 3,
) -> Picture:
    """A multi-hop walk from the recall hit it starts at, through entities and memories, to the
    hit it reaches: each node a link, rows wrapping like a snake, each relation arrowed."""
    if len(nodes) != len(steps) + 1:  # a hit from before paths carried their nodes
        labels = [steps[0].source, *(s.target for s in steps)] if steps else []
        places, w, height = _snake(len(labels), per_row, 100)
        drawn = [
            box(x, y, w, label, "memory", None)
            for (x, y), label in zip(places, labels, strict=True)
        ]
    else:
        places, w, height = _snake(len(nodes), per_row, 100)
        drawn = [
            box(x, y, w, n.label, "centre" if i == 0 else n.kind,
                (memory_link if n.kind == "memory" else entity_link)(n.id))
            for i, ((x, y), n) in enumerate(zip(places, nodes, strict=True))
        ]  # fmt: skip
    edges = [
        _join(a, b, step.relation.replace("_", " "), step.reverse)
        for step, a, b in zip(steps, drawn, drawn[1:], strict=False)
    ]
    return Picture(WIDTH, height, drawn, edges)


@dataclass
class Bar:
    name: str
    value: float  # the feature's value, 0..1 mostly
    weight: float
    contribution: float  # value x weight: what it added to the score, printed beside the bar
    width: float  # pixels: the contribution on the page's scale


def bars(explain: Mapping[str, Any] | None, scale: float) -> list[Bar]:
    """One bar a feature that counted: its value times its weight, `scale` pixels a unit, so
    bars compare across the hits (and the recipes) of one page."""
    if not explain:
        return []
    features: Mapping[str, float] = explain.get("features") or {}
    weights: Mapping[str, float] = explain.get("weights") or {}
    out = []
    for name, value in features.items():
        weight = float(weights.get(name, 0.0))
        if value and weight:
            part = float(value) * weight
            out.append(Bar(name, float(value), weight, part, max(1.0, part * scale)))
    return sorted(out, key=lambda b: -b.width)


def largest_contribution(explains: Sequence[Mapping[str, Any] | None]) -> float:
    best = 0.0
    for explain in explains:
        if explain:
            weights = explain.get("weights") or {}
            for name, value in (explain.get("features") or {}).items():
                best = max(best, float(value or 0) * float(weights.get(name, 0.0)))
    return best or 1.0


def entity_graph(
    centre: tuple[str, str],
    facts: Sequence[Any],
    expanded: Sequence[str],
    node_link: Callable[[str], str],
    per_column: int = 14,
) -> tuple[Picture, list[str]]:
    """An entity and its neighbours through facts, in columns by distance: the entity, what its
    facts name, then what the facts of each expanded neighbour name, and so on. Each node's
    edge from the node that reached it carries the predicate; other facts between shown nodes
    are lines. Returns the picture and the ids left out (a full column, or past the fourth)."""
    centre_id, centre_name = centre
    adjacent: dict[str, list[tuple[str, str]]] = {}
    names = {centre_id: centre_name}
    for f in facts:
        names.setdefault(f.subject_id, f.subject)
        names.setdefault(f.object_id, f.object)
        adjacent.setdefault(f.subject_id, []).append((f.object_id, f.predicate))
        adjacent.setdefault(f.object_id, []).append((f.subject_id, f.predicate))
    columns: list[list[tuple[str, str, str]]] = [[(centre_id, "", "")]]  # id, parent, predicate
    placed, left_out = {centre_id}, []
    frontier = [centre_id]
    while frontier and len(columns) < 4:
        column: list[tuple[str, str, str]] = []
        for parent in frontier:
            for other, predicate in adjacent.get(parent, []):
                if other in placed:
                    continue
                placed.add(other)
                if len(column) < per_column:
                    column.append((other, parent, predicate))
                else:
                    left_out.append(other)
        if not column:
            break
        columns.append(column)
        frontier = [node for node, _, _ in column if node in expanded]
    left_out += sorted(
        {n for n in names if n not in placed and any(p in placed for p, _ in adjacent[n])}
    )
    box_w, gap = 150.0, 0.0
    if len(columns) > 1:
        gap = (WIDTH - 2 * MARGIN - box_w * len(columns)) / (len(columns) - 1)
    tallest = max(len(c) for c in columns)
    height = (tallest - 1) * ROW + BOX_H + 2 * MARGIN
    nodes: dict[str, Node] = {}
    for depth, column in enumerate(columns):
        x = MARGIN + depth * (box_w + gap)
        top = MARGIN + (tallest - len(column)) * ROW / 2
        for row, (node_id, _, _) in enumerate(column):
            role = "centre" if depth == 0 else "entity"
            nodes[node_id] = box(
                x, top + row * ROW, box_w, names[node_id], role, node_link(node_id)
            )
            nodes[node_id].title = names[node_id]
    picture = Picture(WIDTH, int(height + 0.5), list(nodes.values()))
    drawn: set[frozenset[str]] = set()
    for column in columns[1:]:
        for node_id, parent, predicate in column:
            a, b = nodes[parent], nodes[node_id]
            edge = Edge(a.right, a.cy, b.x, b.cy)
            edge.label = fit(predicate.replace("_", " "), gap - 12, EDGE_CHAR_W)
            edge.lx, edge.ly, edge.anchor = nodes[node_id].x - 6, nodes[node_id].cy - 3, "end"
            picture.edges.append(edge)
            drawn.add(frozenset((parent, node_id)))
    for f in facts:  # other facts between nodes of two columns: lines without a label
        pair = frozenset((f.subject_id, f.object_id))
        if len(pair) == 2 and pair <= nodes.keys() and pair not in drawn:
            a, b = sorted((nodes[n] for n in pair), key=lambda n: n.x)
            if a.x < b.x:
                drawn.add(pair)
                picture.edges.append(Edge(a.right, a.cy, b.x, b.cy))
    return picture, left_out
