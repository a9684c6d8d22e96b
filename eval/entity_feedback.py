"""Entity resolution that learns from people: precision and recall of the labelled mentions as a
simulated user decides the steward's suggestions, and with a glossary instead of decisions.

Each store of `eval.entities` is built again with its texts as memories (`t0`, `t1`, ...),
resolved in the same order and batches, so with no feedback it scores what `eval entities`
scores. Then `steward_run(scope="entities")` files its suggestions, and a simulated user takes
them best first, one inbox across every store: a suggestion it can judge from the labels (a
merge whose two entities each hold a labelled mention, a split whose texts and the rest each
hold one) is accepted when the labels agree (one thing) and dismissed when they do not; each is
one decision. Suggestions it cannot judge are counted apart, as the unlabelled ones a person
would read past. After each decision the mentions are placed again from the store's links: a
label's mention is the entity its text links under that name.

The glossary run writes, per store, a `graphmem.aliases.yaml` of the `GLOSSARY` labelled
entities with the most mentions (their most frequent spelling as the name, the others as
aliases), applies it before indexing, and scores with no decisions.
"""

from __future__ import annotations

import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from graphmem.extractors import Extraction, normalise

from eval.entities import BATCH, Label, PairCounts, Replay, StoreTexts, located_as, score_counts
from graphmem import open_store
from graphmem.embeddings.base import Embedder
from graphmem.graph.indexer import TripleIndexer
from graphmem.graph.resolution import ResolutionRules
from graphmem.models import Memory
from graphmem.service import GraphMemory
from graphmem.steward.models import Finding

GLOSSARY = 20  # entities a team would write down first: the most mentioned
DECISIONS = 30  # the curve's length the target is judged at
KINDS = ("same_entity", "wrong_merge")


def build(
    path: Path,
    store: StoreTexts,
    extractions: Sequence[Extraction],
    embedder: Embedder,
    rules: ResolutionRules,
    glossary: Mapping[str, list[str]] | None = None,
) -> GraphMemory:
    """A store of the texts as memories, extracted as `eval.entities` extracts them."""
    gm = open_store(path, embedder=embedder)
    at = datetime(2026, 1, 1, tzinfo=UTC)
    memories = [
        Memory(id=f"t{i}", content=text, created_at=at, updated_at=at)
        for i, text in enumerate(store.texts)
    ]
    rows = np.random.default_rng(0).standard_normal((len(memories), embedder.space.dim))
    vectors = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    gm.store.memories.insert(memories, vectors, embedder.space)
    if glossary:
        file = path / "graphmem.aliases.yaml"
        file.write_text(yaml.safe_dump(dict(glossary), allow_unicode=True), encoding="utf-8")
        gm.apply_glossary(file)
    by_text = dict(zip(store.texts, extractions, strict=True))
    indexer = TripleIndexer(gm.store, Replay("replay", by_text), embedder.embed, rules)
    for start in range(0, len(store.texts), BATCH):
        part = store.texts[start : start + BATCH]
        indexer.index([(f"t{start + i}", text) for i, text in enumerate(part)])
    return gm


@dataclass
class Located:
    label: Label
    texts: list[str]  # the memories of its source
    norm: str | None
    whole: bool  # the extractor found the mention as a name, not only a shorter one inside it


def locate_all(
    labels: Sequence[Label], store: StoreTexts, extractions: Sequence[Extraction]
) -> list[Located]:
    out = []
    for label in labels:
        indices = store.by_source.get(label.source, [])
        found = [e for i in indices for e in extractions[i].entities]
        out.append(Located(label, [f"t{i}" for i in indices], *located_as(label.mention, found)))
    return out


def placement(gm: GraphMemory, located: Sequence[Located]) -> dict[int, str | None]:
    """Each labelled mention's entity now: the one its text links under that name, else the
    one the name resolves to, if its text links it."""
    said: dict[tuple[str, str], str] = {}
    linked: dict[str, set[str]] = defaultdict(set)
    for source, entity, words in gm.store.steward.entity_mentions():
        said[(source, normalise(words))] = entity
        linked[source].add(entity)
    resolved = gm.store.entities.resolve_norms([x.norm for x in located if x.norm])
    out: dict[int, str | None] = {}
    for n, x in enumerate(located):
        entity = None
        if x.norm:
            entity = next((said[(t, x.norm)] for t in x.texts if (t, x.norm) in said), None)
            if entity is None and any(resolved.get(x.norm) in linked[t] for t in x.texts):
                entity = resolved[x.norm]
        out[n] = entity
    return out


def counts_of(
    located: Sequence[Located], placed: Mapping[int, str | None], whole: bool = False
) -> PairCounts:
    """The pair counts; `whole`: only of the mentions the extractor found as names (a wrong
    merge of "data.gov.uk applications", found only as data.gov.uk, is the extractor's, and
    no correction of entities can undo it)."""
    return score_counts(
        [(x.label, placed[n]) for n, x in enumerate(located) if x.whole or not whole]
    )


def merge_gains(located: Sequence[Located], placed: Mapping[int, str | None]) -> list[int]:
    """The labelled pairs each merge would gain that joins two parts of one labelled entity,
    the largest parts first: how far off resolution is, whatever suggests the merges."""
    parts: dict[str, Counter[object]] = defaultdict(Counter)
    for n, x in enumerate(located):
        parts[x.label.entity][placed[n] if placed[n] is not None else ("alone", n)] += 1
    gains = []
    for sizes in parts.values():
        ordered = sorted(sizes.values(), reverse=True)
        joined = ordered[0]
        for size in ordered[1:]:
            gains.append(joined * size)
            joined += size
    return gains


def fewest_merges(gains: Sequence[int], counts: PairCounts, recall: float) -> int:
    """The fewest merges that bring `counts` to `recall`."""
    missing = recall * counts.gold_pairs - counts.true_pairs
    needed = 0
    for gain in sorted(gains, reverse=True):
        if missing <= 0:
            break
        missing -= gain
        needed += 1
    return needed


def judge(
    finding: Any, located: Sequence[Located], placed: Mapping[int, str | None]
) -> bool | None:
    """Accept (the labels say one thing), dismiss (two things), or None: no labelled mention on
    one side, nothing to judge by."""
    if finding.kind == "same_entity":
        keep, other = finding.targets[:2]
        a = {x.label.entity for n, x in enumerate(located) if placed[n] == keep}
        b = {x.label.entity for n, x in enumerate(located) if placed[n] == other}
    else:
        entity, moving = finding.targets[0], set(finding.evidence["texts"])
        name = normalise(finding.evidence["name"])
        on = [(n, x) for n, x in enumerate(located) if placed[n] == entity]
        a = {x.label.entity for n, x in on if x.norm == name and moving & set(x.texts)}
        b = {x.label.entity for n, x in on if not (x.norm == name and moving & set(x.texts))}
        if a and b:
            return not (a & b)
    if not a or not b:
        return None
    return bool(a & b)


@dataclass
class Step:
    confidence: float
    store: str
    kind: str
    accepted: bool
    summary: str
    counts: Scored  # the store's counts after it


@dataclass
class Scored:
    """A store's pair counts, of every labelled mention and of those found as names."""

    every: PairCounts
    names: PairCounts

    @classmethod
    def of(cls, located: Sequence[Located], placed: Mapping[int, str | None]) -> Scored:
        return cls(counts_of(located, placed), counts_of(located, placed, whole=True))

    @classmethod
    def total(cls, parts: Iterable[Scored]) -> Scored:
        out = cls(PairCounts(), PairCounts())
        for part in parts:
            out.every.add(part.every)
            out.names.add(part.names)
        return out

    def short(self) -> dict[str, Any]:
        every, names = self.every.scores(), self.names.scores()
        return {
            **{k: every[k] for k in ("precision", "recall", "f1", "predicted_pairs", "true_pairs")},
            "of_names_found": {k: names[k] for k in ("precision", "recall", "f1")},
        }


def simulate(
    name: str, gm: GraphMemory, located: Sequence[Located]
) -> tuple[Scored, list[int], list[Step], Counter[str]]:
    """The store's counts before any decision, the gains of the merges it lacks, its
    decisions in order, and what it filed."""
    gm.steward_policy({"entity_suggestions": 100_000})  # every one: the user reads them all
    run = gm.steward_run("entities", dry_run=False, listed=0)
    filed: Counter[str] = Counter(run.found)
    placed = placement(gm, located)
    start = Scored.of(located, placed)
    gains = merge_gains(located, placed)
    steps: list[Step] = []
    inbox = [  # the whole inbox: steward_inbox pages a thousand at a time
        Finding.model_validate(row)
        for kind in KINDS
        for row in gm.store.steward.findings(
            status="pending", kind=kind, limit=1_000_000, sort="confidence"
        )
    ]
    inbox.sort(key=lambda f: (-f.confidence, f.id))
    for finding in inbox:
        verdict = judge(finding, located, placed)
        if verdict is None:
            filed["unjudged"] += 1
            continue
        try:
            gm.steward_inbox_resolve(finding.id, "apply" if verdict else "dismiss")
        except Exception:  # an entity an earlier decision merged away: nothing left to decide
            filed["gone"] += 1
            continue
        placed = placement(gm, located)
        step = Step(finding.confidence, name, finding.kind, verdict, finding.summary,
                    Scored.of(located, placed))  # fmt: skip
        steps.append(step)
    return start, gains, steps, filed


def glossary_of(labels: Sequence[Label], top: int = GLOSSARY) -> dict[str, dict[str, list[str]]]:
    """store -> {name: aliases} for the `top` labelled entities with the most mentions."""
    mentions: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for label in labels:
        mentions[(label.store, label.entity)][label.mention] += 1
    ranked = sorted(mentions.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))[:top]
    out: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for (store, _), spellings in ranked:
        name, *aliases = [s for s, _ in spellings.most_common()]
        taken = {normalise(n) for entry in out[store].items() for n in (entry[0], *entry[1])}
        aliases = [a for a in aliases if normalise(a) not in taken | {normalise(name)}]
        if normalise(name) not in taken:
            out[store][name] = list(dict.fromkeys(aliases))
    return {store: entries for store, entries in out.items() if entries}


def feedback(
    labels: Sequence[Label],
    stores: Mapping[str, StoreTexts],
    extractions: Mapping[str, Sequence[Extraction]],
    embedder: Embedder,
    rules: ResolutionRules,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    by_store: dict[str, list[Label]] = defaultdict(list)
    for label in labels:
        by_store[label.store].append(label)
    before: dict[str, Scored] = {}
    steps: list[Step] = []
    gains: list[int] = []
    filed: Counter[str] = Counter()
    with_glossary: list[Scored] = []
    glossaries = glossary_of(labels)
    with tempfile.TemporaryDirectory(prefix="graphmem-feedback-") as tmp:
        for n, (name, group) in enumerate(sorted(by_store.items())):
            progress(f"suggestions in {name}")
            located = locate_all(group, stores[name], extractions[name])
            gm = build(Path(tmp) / f"s{n}", stores[name], extractions[name], embedder, rules)
            try:
                before[name], store_gains, store_steps, store_filed = simulate(name, gm, located)
            finally:
                gm.close()
            steps += store_steps
            gains += store_gains
            filed += store_filed
            if name not in glossaries:  # none of its entities is among the most mentioned
                with_glossary.append(before[name])
                continue
            gm = build(
                Path(tmp) / f"g{n}", stores[name], extractions[name], embedder, rules,
                glossaries[name],
            )  # fmt: skip
            try:
                with_glossary.append(Scored.of(located, placement(gm, located)))
            finally:
                gm.close()
    steps.sort(key=lambda s: -s.confidence)
    now = dict(before)
    curve = [{"decisions": 0, **Scored.total(now.values()).short()}]
    for i, step in enumerate(steps, 1):
        now[step.store] = step.counts
        curve.append({"decisions": i, "accepted": step.accepted, "store": step.store,
                      "confidence": step.confidence, "suggestion": step.summary,
                      **Scored.total(now.values()).short()})  # fmt: skip
    start = Scored.total(before.values())
    return {
        "filed": dict(filed),
        "fewest_merges_to_recall_0.9": fewest_merges(gains, start.every, 0.9),
        "curve": curve,
        f"after_{DECISIONS}_decisions": curve[min(DECISIONS, len(curve) - 1)],
        "glossary": {
            "entities": sum(len(g) for g in glossaries.values()),
            **Scored.total(with_glossary).short(),
        },
    }
