"""Pictures laid out on the server, drawn by the templates as SVG: a memory's neighbourhood, its
line of versions, a multi-hop path and the bars of a hit's explanation. Only coordinates and
labels are made here; the template engine escapes every label.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphmem.graph.models import MemoryGraph, PathStep

WIDTH = 720
LABEL_CHARS = 28


def short(text: str, limit: int = LABEL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Node:
    x: float
    y: float
    label: str
    role: str  # centre | entity | memory
    href: str | None = None
    title: str = ""  # the whole label, shown on hover


@dataclass
class Edge:
    x1: float
    y1: float
    x2: float
    y2: float
    label: str = ""


@dataclass
class Picture:
    width: int
    height: int
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)


def _ellipse(
    count: int, rx: float, ry: float, cx: float, cy: float, turn: float = 0.0
) -> list[tuple[float, float]]:
    """`count` points around an ellipse, the first at the top: wider than tall, as labels are."""
    step = 2 * math.pi / max(count, 1)
    return [
        (cx + rx * math.cos(turn + i * step - math.pi / 2),
         cy + ry * math.sin(turn + i * step - math.pi / 2))
        for i in range(count)
    ]  # fmt: skip


def neighbourhood(
    graph: MemoryGraph, centre_label: str, href: Any, entity_limit: int = 10
) -> Picture:
    """The memory in the middle, the entities it names on an inner ring, its neighbours on an
    outer ring; a neighbour reached through an entity is drawn from that entity."""
    height = 480
    cx, cy = WIDTH / 2, height / 2
    picture = Picture(WIDTH, height)
    centre = Node(cx, cy, short(centre_label), "centre", None, centre_label)
    entities = graph.entities[:entity_limit]
    at: dict[str, Node] = {}
    for entity, (x, y) in zip(entities, _ellipse(len(entities), 150, 100, cx, cy), strict=True):
        node = Node(x, y, short(entity.name, 22), "entity", None, f"{entity.name} ({entity.label})")
        at[entity.name] = node
        picture.edges.append(Edge(cx, cy, x, y, "mentions"))
        picture.nodes.append(node)
    count = len(graph.neighbours)
    ring = _ellipse(count, 255, 205, cx, cy, turn=math.pi / 4)  # off the entities' axes
    for other, (x, y) in zip(graph.neighbours, ring, strict=True):
        source = at.get(other.via or "")
        if source is not None:
            picture.edges.append(Edge(source.x, source.y, x, y, ""))
        else:
            picture.edges.append(Edge(cx, cy, x, y, other.relation.replace("_", " ")))
        picture.nodes.append(Node(x, y, short(other.label), "memory", href(other.id), other.label))
    picture.nodes.append(centre)
    return picture


def versions(entries: Sequence[Any], current: str, href: Any) -> Picture:
    """A timeline's versions, oldest on the left, on one line."""
    count = max(len(entries), 1)
    step = (WIDTH - 200) / max(count - 1, 1)
    picture = Picture(WIDTH, 80)
    xs = [100 + i * step for i in range(count)] if count > 1 else [WIDTH / 2]
    if len(xs) > 1:
        picture.edges.append(Edge(xs[0], 40, xs[-1], 40))
    for x, entry in zip(xs, entries, strict=False):
        memory = entry.memory
        role = "centre" if memory.id == current else "memory"
        label = f"{memory.created_at:%Y-%m-%d} · {memory.lifecycle}"
        picture.nodes.append(
            Node(x, 40, label, role, None if role == "centre" else href(memory.id), memory.content)
        )
    return picture


def path(steps: Sequence[PathStep]) -> Picture:
    """A multi-hop path left to right, wrapping every three: the recall hit it starts from, the
    entities and memories it walks through, the hit it reaches."""
    names = [steps[0].source, *(s.target for s in steps)] if steps else []
    per_row, box_w, gap = 3, 180, 60
    rows = max(1, math.ceil(len(names) / per_row))
    picture = Picture(WIDTH, 70 * rows + 10)
    places = []
    for i, name in enumerate(names):
        row, col = divmod(i, per_row)
        x = 20 + col * (box_w + gap) + box_w / 2
        y = 35 + row * 70
        places.append((x, y))
        role = "centre" if i == 0 else "memory" if i == len(names) - 1 else "entity"
        picture.nodes.append(Node(x, y, short(name, 24), role, None, name))
    for step, (a, b) in zip(steps, itertools.pairwise(places), strict=False):
        arrow = f"← {step.relation}" if step.reverse else f"{step.relation} →"
        picture.edges.append(Edge(a[0], a[1], b[0], b[1], short(arrow.replace("_", " "), 24)))
    return picture


@dataclass
class Bar:
    name: str
    value: float  # the feature's value, 0..1 mostly
    weight: float
    width: float  # pixels: value x weight against the largest contribution of the page


def bars(explain: Mapping[str, Any] | None, scale: float) -> list[Bar]:
    """One bar a feature that counted: its value times its weight, `scale` pixels for the
    largest contribution, so bars compare across the hits of one page."""
    if not explain:
        return []
    features: Mapping[str, float] = explain.get("features") or {}
    weights: Mapping[str, float] = explain.get("weights") or {}
    out = []
    for name, value in features.items():
        weight = float(weights.get(name, 0.0))
        if value and weight:
            out.append(Bar(name, float(value), weight, max(1.0, float(value) * weight * scale)))
    return sorted(out, key=lambda b: -b.width)


def largest_contribution(explains: Sequence[Mapping[str, Any] | None]) -> float:
    best = 0.0
    for explain in explains:
        if explain:
            weights = explain.get("weights") or {}
            for name, value in (explain.get("features") or {}).items():
                best = max(best, float(value or 0) * float(weights.get(name, 0.0)))
    return best or 1.0
