"""Multi-hop recall: from the seeds of hybrid recall, walk entities, facts, supersession and
session order, then rank every memory reached by personalised PageRank over that subgraph.

The walk is bounded (hops, a cap on memories, hub entities not expanded) so that its cost grows
with the neighbourhood, not the store. Each hit keeps the path that reached it from a seed.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from graphmem.graph.models import PathNode, PathStep
from graphmem.indexes.entity_index import EntityIndex, grouped, rows_of
from graphmem.models import Memory
from graphmem.storage.protocols import Store

MAX_MEMORIES = 700  # memories the walk may gather (LoCoMo dev R@10 the same as with 1,500)
# the memories a round admitted that the next round starts from, the first admitted (through
# the rarest entities) first: a second round from all of them cost a question on MuSiQue as much
# as recall (p95 of the walk 27 ms against 12) and ranked what it added no better (R@5 69.3
# against 68.9; 2WikiMultihopQA 78.4 both)
MAX_FRONTIER = 100
HUB_MENTIONS = (
    60  # an entity named by more memories than this is not expanded (it links everything)
)
# a seed restarts PageRank in proportion to (its recall score / the best) ** this: recall's first
# scores lie close together, and the walk should start mostly from its first hit
SEED_SHARPNESS = 8
PROTECTED = 2  # recall's first hits, which the walk does not push down


class Edge(NamedTuple):
    weight: float
    relation: str
    source: str  # the node the relation reads from


class Subgraph:
    """What a walk reached. Nodes are "m:<memory id>" and "e:<entity id>". Mentions, most of
    its edges, are kept as arrays in the numbering of the store's entity index (thousands per
    question: an object apiece cost more than the rest of the walk); the few other links
    (facts, versions, session order, the answer hop's) by node pair. Between two nodes the
    strongest relation is the one kept."""

    def __init__(self, index: EntityIndex | None = None) -> None:
        self.index = index
        self.walk = index.walk if index is not None else None
        self.memories: set[str] = set()
        self.names: dict[str, str] = {}  # entity node -> name, for paths, besides the index's
        self.links: dict[tuple[str, str], Edge] = {}  # (a, b) with a < b
        self._numbered: dict[tuple[str, str], tuple[int, int]] = {}  # a link's, sorted
        self.seeds: list[str] = []  # memory nodes
        self._mentions: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = []
        self._facts: list[npt.NDArray[np.int64]] = []  # the index's fact rows
        count = self.walk.entity_count if self.walk is not None else 0
        self._entities = np.zeros(count, dtype=bool)
        self._numbers: dict[str, int] = {}  # each node numbered so far
        self._others: list[str] = []  # nodes outside the index's numbering, numbered after it
        self._graph: Graph | None = None

    def link(self, a: str, b: str, relation: str, weight: float, forward: bool = True) -> None:
        """Undirected for the walk; `forward` records which way the relation reads."""
        key = (a, b) if a < b else (b, a)
        known = self.links.get(key)
        if known is None:
            x, y = self.number(a), self.number(b)
            self._numbered[key] = (x, y) if x < y else (y, x)
        if known is None or known.weight < weight:
            self.links[key] = Edge(weight, relation, a if forward else b)
            self._graph = None

    def mention(self, memories: npt.NDArray[np.int64], entities: npt.NDArray[np.int64]) -> None:
        """Memory-entity edges, numbered as the index numbers them (repeats are fine)."""
        if len(memories):
            self._mentions.append((memories, entities))
            self._graph = None

    def fact(self, rows: npt.NDArray[np.int64]) -> None:
        """Facts between entities, as rows of the index's facts (repeats are fine)."""
        if len(rows):
            self._facts.append(rows)
            self._graph = None

    def reach(self, entities: npt.NDArray[np.int64]) -> None:
        self._entities[entities] = True

    @property
    def entity_count(self) -> int:
        return int(self._entities.sum()) + sum(n[:2] == "e:" for n in self._others)

    @property
    def graph(self) -> Graph:
        """The edges as one numbered graph, made again after a change."""
        if self._graph is None:
            self._graph = Graph(self)
        return self._graph

    def edge(self, a: str, b: str) -> Edge:
        return self.graph.edge(a, b)

    def number(self, node: str) -> int:
        """A node's number: a memory or entity of the index as the index numbers it (entities
        after memories), any other after those."""
        found = self.known_number(node)
        if found is None:
            self._others.append(node)
            found = self._numbers[node] = self._beyond + len(self._others) - 1
        return found

    def known_number(self, node: str) -> int | None:
        """The node's number if it has one yet (any node of the index has)."""
        found = self._numbers.get(node)
        walk, index = self.walk, self.index
        if found is None and walk is not None and index is not None:
            if node[:2] == "m:" and (at := index.memory_at.get(node[2:])) is not None:
                found = self._numbers[node] = at
            elif node[:2] == "e:" and (at := index.entity_at.get(node[2:])) is not None:
                found = self._numbers[node] = walk.memory_count + at
        return found

    @property
    def _beyond(self) -> int:
        """The first number after the index's."""
        return self.walk.memory_count + self.walk.entity_count if self.walk is not None else 0

    def node(self, number: int) -> str:
        walk, index = self.walk, self.index
        if walk is not None and index is not None:
            if number < walk.memory_count:
                return "m:" + index.memory_ids[number]
            if number < self._beyond:
                return "e:" + index.entity_ids[number - walk.memory_count]
        return self._others[number - self._beyond]

    def name(self, node: str) -> str:
        if node in self.names:
            return self.names[node]
        names = self.index.names if self.index is not None else {}
        return names.get(node[2:], node[2:])


class Graph:
    """A subgraph's edges numbered 0..n-1 by node, each once, for PageRank and paths."""

    def __init__(self, sub: Subgraph) -> None:
        walk = sub.walk
        first: list[npt.NDArray[np.int64]] = []
        second: list[npt.NDArray[np.int64]] = []
        weights: list[npt.NDArray[np.float64]] = []
        if walk is not None and sub._mentions:
            memories = np.concatenate([m for m, _ in sub._mentions])
            entities = np.concatenate([e for _, e in sub._mentions])
            first.append(memories)
            second.append(entities + walk.memory_count)  # always the greater number
            weights.append(walk.weight[entities])
        facts = np.concatenate(sub._facts) if sub._facts else np.zeros(0, dtype=np.int64)
        if walk is not None:
            subjects = walk.fact_subject[facts] + walk.memory_count
            objects = walk.fact_object[facts] + walk.memory_count
            first.append(np.minimum(subjects, objects))
            second.append(np.maximum(subjects, objects))
            weights.append(np.ones(len(facts)))
        links = list(sub.links.items())
        pairs = np.array([sub._numbered[key] for key, _ in links], dtype=np.int64).reshape(-1, 2)
        seeds = np.array([sub.number(node) for node in sub.seeds], dtype=np.int64)
        first.append(pairs[:, 0])
        second.append(pairs[:, 1])
        weights.append(np.array([edge.weight for _, edge in links], dtype=np.float64))
        a, b, weight = np.concatenate(first), np.concatenate(second), np.concatenate(weights)
        # one edge a pair, the strongest (the first of equals: mentions, facts, then links)
        size = int(max(a.max(initial=0), b.max(initial=0), seeds.max(initial=0))) + 1
        key = a * size + b
        order = np.lexsort((-weight, key))
        kept = order[np.r_[True, key[order][1:] != key[order][:-1]]] if len(key) else order
        self.a, self.b, self.weight = a[kept], b[kept], weight[kept]
        self._keys = key[kept]  # sorted: `kept` follows `key`'s order
        self._size = size
        # where each kept edge came from: -1 for a mention, -2 - row for a fact, else its
        # place in `links`
        mentions = len(a) - len(links) - len(facts)
        origin = np.concatenate([np.full(mentions, -1), -2 - facts, np.arange(len(links))])
        self._origin = origin[kept]
        self._links = links
        self.numbers, inverse = np.unique(
            np.concatenate([self.a, self.b, seeds]), return_inverse=True
        )
        count = len(self.a)
        self.ca, self.cb = inverse[:count], inverse[count : 2 * count]
        self._sub = sub

    def __len__(self) -> int:
        return len(self.a)

    def edge(self, x: str, y: str) -> Edge:
        a, b = sorted((self._sub.number(x), self._sub.number(y)))
        at = int(np.searchsorted(self._keys, a * self._size + b))
        if at == len(self._keys) or self._keys[at] != a * self._size + b:
            raise KeyError((x, y))
        origin = int(self._origin[at])
        if origin >= 0:
            return self._links[origin][1]
        walk, index = self._sub.walk, self._sub.index
        if origin <= -2 and walk is not None and index is not None:
            row = -2 - origin
            subject = "e:" + index.entity_ids[walk.fact_subject[row]]
            return Edge(1.0, walk.predicates[walk.fact_predicate[row]], subject)
        memory = x if x[:2] == "m:" else y
        return Edge(float(self.weight[at]), "mentions", memory)

    def memory_scores(self, scores: npt.NDArray[np.float64]) -> dict[str, float]:
        """Memory id -> its score, of scores by position."""
        sub, numbers = self._sub, self.numbers
        out: dict[str, float] = {}
        if sub.walk is not None and sub.index is not None:
            inside = numbers < sub.walk.memory_count
            ids = sub.index.memory_ids
            for n, score in zip(numbers[inside].tolist(), scores[inside].tolist(), strict=True):
                out[ids[n]] = score
        beyond = numbers >= sub._beyond
        for n, score in zip(numbers[beyond].tolist(), scores[beyond].tolist(), strict=True):
            node = sub.node(n)
            if node[:2] == "m:":
                out[node[2:]] = score
        return out

    def node(self, at: int) -> str:
        return self._sub.node(int(self.numbers[at]))

    def find(self, node: str) -> int | None:
        """The node's position, if an edge or a seed puts it in the graph."""
        number = self._sub.known_number(node)
        if number is None:
            return None
        at = int(np.searchsorted(self.numbers, number))
        return at if at < len(self.numbers) and self.numbers[at] == number else None

    def both_ways(
        self,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """(from, to, weight) of every edge in each direction, by position."""
        return (
            np.concatenate([self.ca, self.cb]),
            np.concatenate([self.cb, self.ca]),
            np.tile(self.weight, 2),
        )

    def adjacency(self) -> tuple[list[int], list[int], list[float]]:
        """Row pointers, neighbours and step costs (1 / weight) of every position, as lists:
        a path search reads them one at a time."""
        src, dst, weight = self.both_ways()
        ptr, order = grouped(src, np.arange(len(src)), len(self.numbers))
        return ptr.tolist(), dst[order].tolist(), (1.0 / weight[order]).tolist()


def memory_node(memory_id: str) -> str:
    return "m:" + memory_id


def entity_node(entity_id: str) -> str:
    return "e:" + entity_id


def label(memory: Memory) -> str:
    text = memory.title or memory.content
    return text if len(text) <= 60 else text[:57] + "..."


def gather(store: Store, seeds: Sequence[str], *, max_hops: int) -> Subgraph:
    """Breadth-first from the seeds: one memory-to-memory hop per round, over the store's
    in-process entity index (indexes/entity_index.py), a round's mentions and facts at once.
    A round goes on from the first `MAX_FRONTIER` memories the one before admitted."""
    index = store.entities.index(while_extracting=True)
    walk = index.walk
    sub = Subgraph(index)
    sub.memories.update(seeds)
    sub.seeds = [memory_node(seed) for seed in seeds]
    known = np.zeros(walk.memory_count, dtype=bool)  # the memories in, by number
    known[[i for m in seeds if (i := index.memory_at.get(m)) is not None]] = True
    expanded = np.zeros(walk.entity_count, dtype=bool)
    frontier = list(dict.fromkeys(seeds))
    for _ in range(max_hops):
        if not frontier or len(sub.memories) >= MAX_MEMORIES:
            break
        numbered = np.array(
            [i for m in frontier if (i := index.memory_at.get(m)) is not None], dtype=np.int64
        )
        memories, entities = rows_of(walk.memory_ptr, walk.entities_of, numbered)
        sub.mention(memories, entities)
        named = np.unique(entities)
        fresh = named[~expanded[named]]
        # facts join entities: the walk may cross from one named thing to another
        facts = np.unique(rows_of(walk.fact_ptr, walk.facts_of, fresh)[1])
        sub.fact(facts)
        reached = np.union1d(
            fresh, np.concatenate([walk.fact_subject[facts], walk.fact_object[facts]])
        )
        expanded[fresh] = True
        sub.reach(reached)
        # the rarest names first: the room left goes to what a specific name reaches
        walkable = reached[walk.degree[reached] <= HUB_MENTIONS]
        walkable = walkable[np.lexsort((walk.rank[walkable], walk.degree[walkable]))]
        admitted = _Admission(sub.memories, MAX_MEMORIES - len(sub.memories))
        for newer, older in index.supersession_links(frontier):
            if admitted(newer) and admitted(older):
                sub.link(memory_node(newer), memory_node(older), "supersedes", 1.0)
        for before, after in _session_pairs(store, frontier):
            if admitted(before) and admitted(after):
                sub.link(memory_node(before), memory_node(after), "next_in_session", 0.5)
        _admit_reached(sub, walkable, admitted, known)
        sub.memories.update(admitted.new)
        known[[i for m in admitted.new if (i := index.memory_at.get(m)) is not None]] = True
        frontier = list(admitted.new)[:MAX_FRONTIER]
    return sub


def _admit_reached(
    sub: Subgraph,
    walkable: npt.NDArray[np.int64],
    admitted: _Admission,
    known: npt.NDArray[np.bool_],
) -> None:
    """Admit the memories that name the walkable entities, in the order the entities are
    offered, while there is room, and link each memory admitted this round to the walkable
    entities it names. A memory of an earlier round needs no link: it was in a frontier, and
    a round starts by linking every entity its frontier names."""
    assert sub.walk is not None and sub.index is not None
    entities, memories = rows_of(sub.walk.entity_ptr, sub.walk.memories_of, walkable)
    new = np.zeros(len(known), dtype=bool)
    new[[i for m in admitted.new if (i := sub.index.memory_at.get(m)) is not None]] = True
    room = admitted.room - len(admitted.new)
    if room > 0:
        waiting = memories[~known[memories] & ~new[memories]]
        unique, first = np.unique(waiting, return_index=True)
        chosen = unique[np.argsort(first, kind="stable")][:room]
        for i in chosen.tolist():
            admitted(sub.index.memory_ids[i])
        new[chosen] = True
    linked = new[memories]
    sub.mention(memories[linked], entities[linked])


class _Admission:
    """The memories a round may add: up to `room` new ones, first come first in (the walk
    offers them through its most specific links first); those already in always are."""

    def __init__(self, known: set[str], room: int) -> None:
        self.known = known
        self.room = room
        self.new: dict[str, None] = {}  # in the order admitted

    def __call__(self, memory_id: str) -> bool:
        if memory_id in self.known or memory_id in self.new:
            return True
        if len(self.new) >= self.room:
            return False
        self.new[memory_id] = None
        return True


def _session_pairs(store: Store, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
    sessions = sorted(set(store.memories.session_ids(memory_ids).values()))
    if not sessions:
        return []
    wanted = set(memory_ids)
    pairs: dict[tuple[str, str], None] = {}  # two neighbours in the frontier share a pair
    for members in store.memories.session_order(sessions).values():
        for i, memory_id in enumerate(members):
            if memory_id not in wanted:
                continue
            for j in (i - 1, i):
                if 0 <= j < len(members) - 1:
                    pairs[(members[j], members[j + 1])] = None
    return list(pairs)


def rank(sub: Subgraph, seeds: Mapping[str, float], *, damping: float) -> dict[str, float]:
    """Personalised PageRank from the seeds, memories only. A seed restarts in proportion to
    (its recall score / the best) ** `SEED_SHARPNESS`: recall's first scores lie close
    together, and in proportion to the scores themselves the walk spread from its fifth hit
    (most often a passage that only shares words with the question) almost as much as from its
    first (most often the one the question names). Passage R@5 of `recall_multihop`, against
    restarts in proportion to the scores: 2WikiMultihopQA 76.5 -> 78.4, MuSiQue 67.0 -> 69.3
    (docs/recall.md#multi-hop-passage-retrieval-2wikimultihopqa-musique)."""
    graph = sub.graph
    if not len(graph):
        return dict(seeds)
    restart = np.zeros(len(graph.numbers))
    best = max((max(score, 1e-9) for score in seeds.values()), default=1.0)
    for memory_id, score in seeds.items():
        at = graph.find(memory_node(memory_id))
        if at is not None:
            restart[at] += max(max(score, 1e-9) / best, 1e-6) ** SEED_SHARPNESS
    return graph.memory_scores(personalised_pagerank(graph, restart, damping=damping))


def trace(sub: Subgraph, seeds: Sequence[str], memory_ids: Sequence[str]) -> dict[str, list[str]]:
    """The cheapest path (strong edges are cheap: a step costs 1 / weight) from a seed to each
    memory, as graph nodes. Dijkstra from all seeds at once, stopped once every memory asked
    for is reached: the top hits lie close to the seeds, so most of the subgraph is never read."""
    graph = sub.graph
    sources = [at for m in dict.fromkeys(seeds) if (at := graph.find(memory_node(m))) is not None]
    wanted = {at for m in memory_ids if (at := graph.find(memory_node(m))) is not None}
    if not sources:
        return {}
    ptr, neighbours, steps = graph.adjacency()
    # lists by position, not dicts and sets: the search reads them thousands of times
    count = len(graph.numbers)
    cost = [math.inf] * count
    previous = [-1] * count
    settled = [False] * count
    asked = [False] * count
    for at in wanted:
        asked[at] = True
    for at in sources:
        cost[at] = 0.0
    queue = [(0.0, at) for at in sources]
    heapq.heapify(queue)
    left = len(wanted)
    while queue and left:
        so_far, node = heapq.heappop(queue)
        if settled[node]:
            continue
        settled[node] = True
        left -= asked[node]
        for i in range(ptr[node], ptr[node + 1]):
            other = neighbours[i]
            if settled[other]:
                continue
            reach = so_far + steps[i]
            if reach < cost[other]:
                cost[other] = reach
                previous[other] = node
                heapq.heappush(queue, (reach, other))
    paths: dict[str, list[str]] = {}
    for memory_id in memory_ids:
        at = graph.find(memory_node(memory_id))
        if at is None or not settled[at]:
            continue
        path = [at]
        while previous[path[-1]] >= 0:
            path.append(previous[path[-1]])
        paths[memory_id] = [graph.node(n) for n in reversed(path)]
    return paths


def personalised_pagerank(
    graph: Graph, restart: npt.NDArray[np.float64], *, damping: float, rounds: int = 50
) -> npt.NDArray[np.float64]:
    """Power iteration over the weighted, undirected graph in numpy (a graph of a few thousand
    nodes needs no sparse-matrix library). `restart`: each node's share of the restarts, any
    scale."""
    count = len(graph.numbers)
    src, dst, weight = graph.both_ways()
    out = np.bincount(src, weights=weight, minlength=count)
    share = weight / out[src]  # each node spreads its score over its edges by weight
    restart = restart / restart.sum()
    score = restart.copy()
    for _ in range(rounds):
        spread = np.bincount(dst, weights=score[src] * share, minlength=count)
        new = (1 - damping) * restart + damping * spread
        if np.abs(new - score).sum() < 1e-9:
            score = new
            break
        score = new
    return score


def fuse(
    recalled: Mapping[str, float],
    walked: Mapping[str, float],
    seeds: Collection[str],
    weight: float,
    clues: Mapping[str, float],
    clue_weight: float,
) -> dict[str, float]:
    """Recall score (scaled to the best hit) plus `weight` x the walk's bonus plus
    `clue_weight` x the strength of the answer hop's clue in the memory. `recalled` is in
    recall's order.

    The walk's bonus is PageRank scaled to the best memory the walk reached that was not a
    seed, for the memories that are not seeds. A seed's PageRank is mostly its own restart: it
    says how much recall liked the seed, not how close the walk found it, so a seed gets none
    and a passage the walk reaches can take the place of a weak seed. Recall's first
    `PROTECTED` hits get the full bonus instead: the walk adds to them and does not push them
    down (passage R@2 stays recall's).

    Before, every seed had the full bonus (capped at 1, at weight 0.02): nothing reached could
    pass a seed, and the walk changed the top 5 of 2WikiMultihopQA little (R@5 67.6 -> 67.9).
    With the bonus for what the walk reached, at weight 0.8 and from 3 seeds: R@5 2Wiki 78.4 and
    MuSiQue 69.3 against recall's 67.6 and 61.4, R@2 level
    (docs/recall.md#multi-hop-passage-retrieval-2wikimultihopqa-musique). A question about
    someone who speaks in the store's conversations gets a share of the weight
    (`speaker_share`)."""
    top = max(recalled.values(), default=1.0) or 1.0
    reached = max((s for m, s in walked.items() if m not in seeds), default=0.0) or 1.0
    protected = set(itertools.islice(recalled, PROTECTED))

    def bonus(memory_id: str) -> float:
        if memory_id in protected:
            return 1.0
        if memory_id in seeds:
            return 0.0
        return min(walked.get(memory_id, 0.0) / reached, 1.0)

    return {
        m: recalled.get(m, 0.0) / top + weight * bonus(m) + clue_weight * clues.get(m, 0.0)
        for m in set(recalled) | set(walked) | set(clues)
    }


def _namer(sub: Subgraph, memories: Mapping[str, Memory]) -> Callable[[str], str]:
    def name(node: str) -> str:
        if node.startswith("m:") and node[2:] in memories:
            return label(memories[node[2:]])
        return sub.name(node)

    return name


def render(sub: Subgraph, nodes: Sequence[str], memories: Mapping[str, Memory]) -> list[PathStep]:
    """The path as steps between readable labels: memory titles and entity names."""
    name = _namer(sub, memories)
    steps = []
    for a, b in itertools.pairwise(nodes):
        edge = sub.edge(a, b)
        steps.append(
            PathStep(
                source=name(a), relation=edge.relation, target=name(b), reverse=edge.source != a
            )
        )
    return steps


def path_nodes(
    sub: Subgraph, nodes: Sequence[str], memories: Mapping[str, Memory]
) -> list[PathNode]:
    """The path's nodes, each a memory or an entity by id, with the labels `render` gives."""
    name = _namer(sub, memories)
    return [
        PathNode(kind="memory" if node[:2] == "m:" else "entity", id=node[2:], label=name(node))
        for node in nodes
    ]


def path_text(steps: Sequence[PathStep]) -> str:
    if not steps:
        return ""
    hops = (
        f"<-{s.relation}- {s.target}" if s.reverse else f"-{s.relation}-> {s.target}" for s in steps
    )
    return " ".join([steps[0].source, *hops])
