"""Multi-hop recall: from the seeds of hybrid recall, walk entities, facts, supersession and
session order, then rank every memory reached by personalised PageRank over that subgraph.

The walk is bounded (hops, a cap on memories, hub entities not expanded) so that its cost grows
with the neighbourhood, not the store. Each hit keeps the path that reached it from a seed.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from graphmem.graph.models import PathStep
from graphmem.models import Memory
from graphmem.recall.query import asked_labels, asks_for_many, parse_names, verb_lemmas
from graphmem.storage.entity_index import EntityIndex
from graphmem.storage.store import KuzuStore

MAX_MEMORIES = 700  # memories the walk may gather (LoCoMo dev R@10 the same as with 1,500)
CLUE_ROWS = 1500  # rows the answer hop reads at most, for plain recall as for the walk
MAX_KIND_MEMORIES = 40  # the answer hop's limit on memories naming a thing of the asked kind
VERB_FACT_SHARE = 1 / 3  # a fact with the question's verb, against a thing of the asked kind
SINGLE_ANSWER_SHARE = 1 / 3  # the clues of a question after one thing, against one after several
HUB_MENTIONS = (
    60  # an entity named by more memories than this is not expanded (it links everything)
)


class Edge(NamedTuple):  # a tuple: thousands are made per question
    weight: float
    relation: str
    source: str  # the node the relation reads from


@dataclass
class Subgraph:
    """Nodes are "m:<memory id>" and "e:<entity id>". Edges are kept in a dict as the walk adds
    them (thousands per question: a networkx edge apiece cost more than the walk's queries)."""

    edges: dict[tuple[str, str], Edge] = field(default_factory=dict)  # (a, b) with a < b
    nodes: dict[str, None] = field(default_factory=dict)  # in the order first linked
    memories: set[str] = field(default_factory=set)
    entities: set[str] = field(default_factory=set)
    names: dict[str, str] = field(default_factory=dict)  # entity node -> name, for paths
    entity_names: Mapping[str, str] = field(default_factory=dict)  # entity id -> name, else
    # node -> the nodes an edge joins it to, kept as edges are added: the paths read only the
    # neighbours of the few nodes they settle, and building this after the walk cost a pass
    # over every edge
    adjacent: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def link(self, a: str, b: str, relation: str, weight: float, forward: bool = True) -> None:
        """Undirected for the walk; `forward` records which way the relation reads. The
        strongest relation between two nodes is the one kept."""
        key = (a, b) if a < b else (b, a)
        known = self.edges.get(key)
        if known is not None and known.weight >= weight:
            return
        if known is None:
            self.adjacent[a].append(b)
            self.adjacent[b].append(a)
        self.edges[key] = Edge(weight, relation, a if forward else b)
        self.nodes.update(dict.fromkeys((a, b)))

    def mentions(self, pairs: Iterable[tuple[str, str]], weights: Mapping[str, float]) -> None:
        """Memory-entity edges in bulk, `weights` by entity: the same pair always weighs the
        same, and nothing else joins a memory to an entity, so the first edge stands."""
        edges, nodes, adjacent = self.edges, self.nodes, self.adjacent
        for memory_id, entity_id in pairs:
            key = ("e:" + entity_id, "m:" + memory_id)  # "e:" sorts before "m:"
            if key not in edges:
                edges[key] = Edge(weights[entity_id], "mentions", key[1])
                nodes[key[0]] = nodes[key[1]] = None
                adjacent[key[0]].append(key[1])
                adjacent[key[1]].append(key[0])

    def edge(self, a: str, b: str) -> Edge:
        return self.edges[(a, b) if a < b else (b, a)]


def _m(memory_id: str) -> str:
    return "m:" + memory_id


def _e(entity_id: str) -> str:
    return "e:" + entity_id


def label(memory: Memory) -> str:
    text = memory.title or memory.content
    return text if len(text) <= 60 else text[:57] + "..."


def gather(store: KuzuStore, seeds: Sequence[str], *, max_hops: int) -> Subgraph:
    """Breadth-first from the seeds: one memory-to-memory hop per round, over the store's
    in-process entity index (storage/entity_index.py)."""
    index = store.entity_index()
    sub = Subgraph(entity_names=index.names)
    sub.memories.update(seeds)
    sub.nodes.update(dict.fromkeys(_m(seed) for seed in seeds))
    frontier = list(seeds)
    expanded: set[str] = set()
    memories_of = index.memories_of

    def degree(entity: str) -> int:
        return len(memories_of.get(entity, ()))

    for _ in range(max_hops):
        if not frontier or len(sub.memories) >= MAX_MEMORIES:
            break
        pairs = [(m, e) for m in frontier for e in index.entities_of.get(m, ())]
        named = dict.fromkeys(e for _, e in pairs)
        sub.mentions(pairs, index.weights)
        fresh = [e for e in named if e not in expanded]
        # facts join entities: the walk may cross from one named thing to another
        linked: set[str] = set()
        for subject, predicate, obj, _ in index.facts_between(fresh):
            sub.link(_e(subject), _e(obj), predicate, 1.0)
            linked.update((subject, obj))
        # the rarest names first: the room left goes to what a specific name reaches
        walkable = sorted(
            (e for e in set(fresh) | linked if degree(e) <= HUB_MENTIONS),
            key=lambda e: (degree(e), e),
        )
        expanded.update(fresh)
        sub.entities.update(fresh, linked)
        admitted = _Admission(sub.memories, MAX_MEMORIES - len(sub.memories))
        for newer, older in index.supersession_links(frontier):
            if admitted(newer) and admitted(older):
                sub.link(_m(newer), _m(older), "supersedes", 1.0)
        for before, after in _session_pairs(store, frontier):
            if admitted(before) and admitted(after):
                sub.link(_m(before), _m(after), "next_in_session", 0.5)
        sub.mentions(_reached(index, walkable, admitted), index.weights)
        frontier = list(admitted.new)
        sub.memories.update(frontier)
    return sub


def _reached(
    index: EntityIndex, walkable: Sequence[str], admitted: _Admission
) -> list[tuple[str, str]]:
    """(memory, entity) for each memory this round admits and each walkable entity it names,
    the entities offered in order. A memory of an earlier round is left out: it was in a
    frontier, and every entity a frontier memory names is linked at the start of a round.
    Once the room is gone only memories already in can be reached, and those are found from
    their own entities: a few thousand lookups, where going through every memory that names
    any of thousands of entities took 100 ms at 100k memories."""
    pairs: list[tuple[str, str]] = []
    known = admitted.known
    for i, entity in enumerate(walkable):
        if admitted.full:
            rest = set(walkable[i:])
            pairs += [
                (memory, e)
                for memory in admitted.new
                for e in index.entities_of.get(memory, ())
                if e in rest
            ]
            break
        pairs += [
            (m, entity) for m in index.memories_of.get(entity, ()) if m not in known and admitted(m)
        ]
    return pairs


class _Admission:
    """The memories a round may add: up to `room` new ones, first come first in (the walk
    offers them through its most specific links first); those already in always are."""

    def __init__(self, known: set[str], room: int) -> None:
        self.known = known
        self.room = room
        self.new: dict[str, None] = {}  # in the order admitted

    @property
    def full(self) -> bool:
        return len(self.new) >= self.room

    def __call__(self, memory_id: str) -> bool:
        if memory_id in self.known or memory_id in self.new:
            return True
        if len(self.new) >= self.room:
            return False
        self.new[memory_id] = None
        return True


def _session_pairs(store: KuzuStore, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
    sessions = sorted(set(store.session_ids(memory_ids).values()))
    if not sessions:
        return []
    wanted = set(memory_ids)
    pairs = []
    for members in store.session_order(sessions).values():
        for i, memory_id in enumerate(members):
            if memory_id in wanted:
                pairs += [
                    (members[j], members[j + 1]) for j in (i - 1, i) if 0 <= j < len(members) - 1
                ]
    return pairs


def rank(sub: Subgraph, seeds: Mapping[str, float], *, damping: float) -> dict[str, float]:
    """Personalised PageRank from the seeds (weighted by their recall score), memories only."""
    if not sub.edges:
        return dict(seeds)
    total = sum(max(s, 1e-9) for s in seeds.values())
    personal = {_m(m): max(s, 1e-9) / total for m, s in seeds.items() if _m(m) in sub.nodes}
    scores = personalised_pagerank(sub, personal, damping=damping)
    return {node[2:]: score for node, score in scores.items() if node.startswith("m:")}


def trace(sub: Subgraph, seeds: Sequence[str], memory_ids: Sequence[str]) -> dict[str, list[str]]:
    """The cheapest path (strong edges are cheap: a step costs 1 / weight) from a seed to each
    memory, as graph nodes. Dijkstra from all seeds at once, stopped once every memory asked
    for is reached: the top hits lie close to the seeds, so most of the subgraph is never read."""
    sources = [_m(m) for m in dict.fromkeys(seeds) if _m(m) in sub.nodes]
    wanted = {_m(m) for m in memory_ids if _m(m) in sub.nodes}
    if not sources:
        return {}
    edges, adjacent = sub.edges, sub.adjacent
    cost = dict.fromkeys(sources, 0.0)
    previous: dict[str, str] = {}
    queue = [(0.0, node) for node in sources]
    heapq.heapify(queue)
    settled: set[str] = set()
    while queue and not wanted <= settled:
        so_far, node = heapq.heappop(queue)
        if node in settled:
            continue
        settled.add(node)
        for other in adjacent.get(node, ()):
            if other in settled:
                continue
            step = 1.0 / edges[(node, other) if node < other else (other, node)].weight
            if so_far + step < cost.get(other, math.inf):
                cost[other] = so_far + step
                previous[other] = node
                heapq.heappush(queue, (so_far + step, other))
    paths: dict[str, list[str]] = {}
    for memory_id in memory_ids:
        node = _m(memory_id)
        if node not in settled:
            continue
        path = [node]
        while path[-1] in previous:
            path.append(previous[path[-1]])
        paths[memory_id] = path[::-1]
    return paths


def answer_hop(
    store: KuzuStore, query: str, sub: Subgraph, gathered: Collection[str] = ()
) -> dict[str, float]:
    """Memories that hold a clue to a question about people, with its strength:

    - a thing of the kind the question asks for, named beside a person it names ("Which cities
      has John visited?": John's memories that name a place), strength 1. If more than
      `MAX_KIND_MEMORIES` memories do, the kind is too common to reach new memories by, but it
      still tells apart those recall `gathered`: only they keep the clue;
    - a fact whose subject is such a person and whose verb is one of the question's
      ("john -visit-> chicago"), `VERB_FACT_SHARE`, added to the first.

    Both count `SINGLE_ANSWER_SHARE` as much for a question after one thing ("Which book did
    Tim read in May?"): recall has most often ranked its answer already, and a clue would push
    it down.

    A list question's answers are spread over memories that share neither words nor much
    meaning with it; the entity labels and the fact verbs are what they share. Each clue is
    linked into the subgraph, so the hit's path shows it. Measured on LoCoMo dev:
    docs/recall.md#multi-hop-recall."""
    names = parse_names(query)
    people = sorted(set(store.entity_index().resolve(names).values())) if names else []
    if not people:
        return {}
    clues: dict[str, float] = {}
    share = 1.0 if asks_for_many(query) else SINGLE_ANSWER_SHARE
    labels = asked_labels(query)
    # the people who speak in the conversations are named in turn after turn ("Thanks,
    # Caroline!"): not the person a question asks for
    things = (
        store.things_mentioned_with(
            people, labels, limit=CLUE_ROWS, besides=sorted(store.speakers())
        )
        if labels
        else []
    )
    if len({memory_id for memory_id, *_ in things}) > MAX_KIND_MEMORIES:
        within = set(gathered)
        things = [row for row in things if row[0] in within]
    for memory_id, person, thing, name in things:
        sub.names[_e(thing)] = name
        sub.link(_m(memory_id), _e(person), "mentions", 1.0)
        sub.link(_m(memory_id), _e(thing), "mentions", 1.0)
        clues[memory_id] = share
    facts = store.facts_of_people(people, verb_lemmas(query, set(names)), limit=CLUE_ROWS)
    for memory_id, person, predicate, obj, name in facts:
        sub.names[_e(obj)] = name
        sub.link(_e(person), _e(obj), predicate, 1.0)
        sub.link(_m(memory_id), _e(obj), "mentions", 1.0)
    for memory_id in {memory_id for memory_id, *_ in facts}:
        clues[memory_id] = clues.get(memory_id, 0.0) + share * VERB_FACT_SHARE
    return clues


def answer_clues(store: KuzuStore, query: str, gathered: Collection[str]) -> dict[str, float]:
    """The answer hop on its own, for plain recall: its clues without the walk's subgraph.
    Only a question that names someone who speaks in the store's conversations can have any,
    so any other query costs no store query."""
    names = parse_names(query)
    if not names or not set(names) & store.speakers():
        return {}
    return answer_hop(store, query, Subgraph(), gathered)


def personalised_pagerank(
    sub: Subgraph, personal: Mapping[str, float], *, damping: float, rounds: int = 50
) -> dict[str, float]:
    """Power iteration over the weighted, undirected subgraph in numpy (networkx's own
    pagerank needs scipy, a heavy dependency for a graph of a few thousand nodes)."""
    nodes = list(sub.nodes)
    index = {node: i for i, node in enumerate(nodes)}
    count = len(sub.edges)
    first = np.fromiter((index[a] for a, _ in sub.edges), np.int64, count)
    second = np.fromiter((index[b] for _, b in sub.edges), np.int64, count)
    src = np.concatenate([first, second])
    dst = np.concatenate([second, first])
    weight = np.tile(np.array([e.weight for e in sub.edges.values()], dtype=np.float64), 2)
    out = np.bincount(src, weights=weight, minlength=len(nodes))
    share = weight / out[src]  # each node spreads its score over its edges by weight
    restart = np.zeros(len(nodes))
    for node, value in personal.items():
        restart[index[node]] = value
    restart /= restart.sum()
    score = restart.copy()
    for _ in range(rounds):
        spread = np.bincount(dst, weights=score[src] * share, minlength=len(nodes))
        new = (1 - damping) * restart + damping * spread
        if np.abs(new - score).sum() < 1e-9:
            score = new
            break
        score = new
    return {node: float(score[i]) for i, node in enumerate(nodes)}


def fuse(
    recalled: Mapping[str, float],
    walked: Mapping[str, float],
    seeds: set[str],
    weight: float,
    clues: Mapping[str, float],
    clue_weight: float,
) -> dict[str, float]:
    """Recall score (scaled to the best hit) plus `weight` x PageRank (scaled to the best
    memory the walk reached that was not a seed; seeds themselves are capped at 1), plus
    `clue_weight` x the strength of the answer hop's clue in the memory.

    Tuned on LoCoMo dev (docs/recall.md#multi-hop-recall): ranking by PageRank alone lost to
    hybrid recall; this sum gained in every category but one."""
    top = max(recalled.values(), default=1.0) or 1.0
    reached = max((s for m, s in walked.items() if m not in seeds), default=0.0) or 1.0
    return {
        m: recalled.get(m, 0.0) / top
        + weight * min(walked.get(m, 0.0) / reached, 1.0)
        + clue_weight * clues.get(m, 0.0)
        for m in set(recalled) | set(walked) | set(clues)
    }


def render(sub: Subgraph, nodes: Sequence[str], memories: Mapping[str, Memory]) -> list[PathStep]:
    """The path as steps between readable labels: memory titles and entity names."""

    def name(node: str) -> str:
        if node.startswith("m:") and node[2:] in memories:
            return label(memories[node[2:]])
        return sub.names.get(node) or sub.entity_names.get(node[2:], node[2:])

    steps = []
    for a, b in itertools.pairwise(nodes):
        edge = sub.edge(a, b)
        steps.append(
            PathStep(
                source=name(a), relation=edge.relation, target=name(b), reverse=edge.source != a
            )
        )
    return steps


def path_text(steps: Sequence[PathStep]) -> str:
    if not steps:
        return ""
    hops = (
        f"<-{s.relation}- {s.target}" if s.reverse else f"-{s.relation}-> {s.target}" for s in steps
    )
    return " ".join([steps[0].source, *hops])
