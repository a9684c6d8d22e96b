"""Entity resolution, measured: do the names the extractor finds land on one entity per thing?

`eval/data/entity_resolution.jsonl` labels mentions with the thing they refer to (its first line
says how they were drawn and judged). The texts stay in the bench folder: every document under
`docs/` is one store (cut into chunks as `graphmem docs index` cuts them), each LoCoMo
conversation is a store of its turns ("speaker: text"), the notes are one store, and each
multi-hop corpus (`multihop/2wikimultihopqa/corpus.json`, `multihop/musique/corpus.json`) is one
store of the passages its labels name, in corpus order, each as "title.\\ntext". Each store's
texts are extracted once by the real extractor, then resolved in order, in batches, into a fresh
temp store with the rules under test. A labelled mention is found among the names extracted from
its source text (same spelling, else same normalised name, else the longest extracted name inside
it, preferring one that ends it: its head), and scored in pairs with the other mentions of its
store:

- true positive: a pair put in one entity that the labels say is one thing;
- precision = TP / pairs put in one entity; recall = TP / pairs labelled one thing.

A mention the extractor no longer finds counts as an entity of its own. The headline is docs and
LoCoMo together; the notes, written for this set, are reported apart. A label file of multi-hop
passages only (`eval/data/entity_resolution_wiki.jsonl`, a second set to check tuning on) has its
corpora as its headline. With `cross`, every setting of a small grid of rules is scored, the best
(F1) on one corpus is measured on the other.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from graphmem.extractors import ExtractedEntity, Extraction, Extractor, get_extractor, normalise

from graphmem import open_store
from graphmem.documents.chunks import chunk_section
from graphmem.documents.indexer import CHUNK_CHARS
from graphmem.documents.parse import parse_document
from graphmem.embeddings.base import Embedder
from graphmem.graph.indexer import TripleIndexer
from graphmem.graph.resolution import DEFAULT_RULES, ResolutionRules

KINDS = ("docs", "locomo", "notes", "2wiki", "musique")
HEADLINE = ("docs", "locomo")  # the notes are written for this set: reported, not averaged in
MULTIHOP = {  # a source's corpus path (under the bench folder) -> its store
    "multihop/2wikimultihopqa/corpus.json": "2wiki",
    "multihop/musique/corpus.json": "musique",
}
BATCH = 256  # texts per indexing batch, as `graphmem index-triples` does
EXAMPLES = 8  # wrong pairs shown per corpus and kind of mistake


@dataclass(frozen=True)
class Label:
    source: str
    mention: str
    entity: str

    @property
    def store(self) -> str:
        """Where the mention lives: "docs", "notes", "locomo:<conversation>", "2wiki" or
        "musique"."""
        if self.source.startswith("notes#"):
            return "notes"
        corpus = self.source.split("#", 1)[0]
        if corpus in MULTIHOP:
            return MULTIHOP[corpus]
        if self.source.startswith("locomo/"):
            return "locomo:" + self.source.split("#", 1)[1].split("/", 1)[0]
        return "docs"

    @property
    def kind(self) -> str:
        return self.store.split(":", 1)[0]


def load_labels(path: Path) -> tuple[dict[str, Any], list[Label]]:
    """The header (its first line) and the labelled mentions."""
    lines = [
        json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line
    ]
    return lines[0], [Label(row["source"], row["mention"], row["entity"]) for row in lines[1:]]


# -- the texts of each store ----------------------------------------------------------------


def doc_chunks(bench: Path) -> dict[str, list[str]]:
    """Every markdown document under bench/docs, path (relative to bench) -> chunk texts."""
    out: dict[str, list[str]] = {}
    for path in sorted((bench / "docs").rglob("*.md")):
        rel = path.relative_to(bench).as_posix()
        parsed = parse_document(rel, path.read_text(encoding="utf-8"))
        out[rel] = [
            piece.text
            for section in parsed.sections
            for piece in chunk_section(section, max_chars=CHUNK_CHARS)
        ]
    return out


def locomo_turns(bench: Path, conversations: Iterable[str]) -> dict[str, dict[str, str]]:
    """conversation -> {turn id: "speaker: text"}, in the order of the conversation."""
    wanted = set(conversations)
    data = json.loads((bench / "locomo" / "locomo_dev.json").read_text(encoding="utf-8"))
    out: dict[str, dict[str, str]] = {}
    for sample in data:
        if sample["sample_id"] not in wanted:
            continue
        conv = sample["conversation"]
        turns: dict[str, str] = {}
        n = 1
        while f"session_{n}_date_time" in conv:
            for turn in conv.get(f"session_{n}", []):
                turns[turn["dia_id"]] = f"{turn['speaker']}: {turn['text']}"
            n += 1
        out[sample["sample_id"]] = turns
    return out


def passages(bench: Path, corpus: str, indices: Iterable[int]) -> dict[int, str]:
    """Passages of a multi-hop corpus by index, in corpus order, each as its title ended as a
    sentence ("title.\\ntext": with a bare line break the tagger runs a title's name into the
    text's first words)."""
    rows = json.loads((bench / corpus).read_text(encoding="utf-8"))
    out = {}
    for i in sorted(set(indices)):
        title = rows[i]["title"].strip()
        out[i] = f"{title}{'' if title.endswith(('.', '!', '?')) else '.'}\n{rows[i]['text']}"
    return out


@dataclass
class StoreTexts:
    """One store's texts in indexing order, and which of them each source names."""

    texts: list[str]
    by_source: dict[str, list[int]]


def store_texts(
    labels: Sequence[Label], bench: Path | None, notes: Path | None
) -> dict[str, StoreTexts]:
    stores: dict[str, StoreTexts] = {}
    kinds = {label.kind for label in labels}
    if "docs" in kinds:
        assert bench is not None, "the docs labels need the bench folder"
        texts: list[str] = []
        by_source: dict[str, list[int]] = {}
        for rel, chunks in doc_chunks(bench).items():
            by_source[rel] = list(range(len(texts), len(texts) + len(chunks)))
            texts.extend(chunks)
        stores["docs"] = StoreTexts(texts, by_source)
    if "locomo" in kinds:
        assert bench is not None, "the LoCoMo labels need the bench folder"
        convs = sorted({label.store.split(":", 1)[1] for label in labels if label.kind == "locomo"})
        for conv, turns in locomo_turns(bench, convs).items():
            sources = {f"locomo/locomo_dev.json#{conv}/{tid}": [i] for i, tid in enumerate(turns)}
            stores[f"locomo:{conv}"] = StoreTexts(list(turns.values()), sources)
    if "notes" in kinds:
        assert notes is not None, "the notes labels need the notes file"
        rows = json.loads(Path(notes).read_text(encoding="utf-8"))["notes"]
        stores["notes"] = StoreTexts(
            [row["text"] for row in rows], {f"notes#{row['id']}": [i] for i, row in enumerate(rows)}
        )
    for corpus, name in MULTIHOP.items():
        if name in kinds:
            assert bench is not None, f"the {name} labels need the bench folder"
            wanted = [int(label.source.split("#", 1)[1]) for label in labels if label.kind == name]
            texts = passages(bench, corpus, wanted)
            stores[name] = StoreTexts(
                list(texts.values()), {f"{corpus}#{i}": [n] for n, i in enumerate(texts)}
            )
    return stores


# -- extraction once, resolution per setting -------------------------------------------------


class Replay:
    """An extractor that hands back extractions made earlier: the grid re-resolves, never re-parses."""

    def __init__(self, name: str, by_text: Mapping[str, Extraction]) -> None:
        self.name = name
        self.by_text = by_text

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        return [self.by_text[text] for text in texts]


def extract_all(
    extractor: Extractor, stores: Mapping[str, StoreTexts], progress: Callable[[str], None]
) -> dict[str, list[Extraction]]:
    out: dict[str, list[Extraction]] = {}
    for name, store in stores.items():
        progress(f"extracting {len(store.texts)} texts of {name}")
        out[name] = extractor.extract(store.texts)
    return out


def locate(mention: str, found: Sequence[ExtractedEntity]) -> str | None:
    """The norm of the extracted name that is this mention (see the module doc), or None."""
    return located_as(mention, found)[0]


def located_as(mention: str, found: Sequence[ExtractedEntity]) -> tuple[str | None, bool]:
    """`locate`'s norm, and whether the extractor found the mention as a name of its own (not
    only a shorter name inside it)."""
    wanted = mention.casefold()
    for entity in found:
        if entity.name.casefold() == wanted:
            return entity.norm, True
    norm = normalise(mention)
    for entity in found:
        if entity.norm == norm:
            return entity.norm, True
    inside = [e for e in found if e.name.casefold() in wanted]
    if not inside:
        return None, False
    best = max(inside, key=lambda e: (wanted.endswith(e.name.casefold()), len(e.name)))
    return best.norm, False


def resolve_store(
    texts: Sequence[str],
    extractions: Sequence[Extraction],
    embedder: Embedder,
    rules: ResolutionRules,
    tmp: Path,
) -> Callable[[Sequence[str]], dict[str, str]]:
    """Index the extractions into a fresh store; returns norm -> entity id lookups on it."""
    by_text = dict(zip(texts, extractions, strict=True))
    replay = Replay(extractions[0].extractor if extractions else "none", by_text)
    gm = open_store(tmp, embedder=embedder)
    try:
        indexer = TripleIndexer(gm.store, replay, embedder.embed, rules)
        for start in range(0, len(texts), BATCH):
            part = texts[start : start + BATCH]
            indexer.index([(f"t{start + i}", text) for i, text in enumerate(part)], chunks=True)
        resolved = gm.store.entities.resolve_norms(
            [e.norm for x in extractions for e in x.entities]
        )  # read before the store closes
    finally:
        gm.close()
    return lambda norms: {n: resolved[n] for n in norms if n in resolved}


@dataclass
class Placed:
    label: Label
    norm: str | None
    entity: str | None  # None: not found, an entity of its own


def place(
    labels: Sequence[Label],
    stores: Mapping[str, StoreTexts],
    extractions: Mapping[str, Sequence[Extraction]],
    embedder: Embedder,
    rules: ResolutionRules,
) -> list[Placed]:
    placed: list[Placed] = []
    by_store: dict[str, list[Label]] = defaultdict(list)
    for label in labels:
        by_store[label.store].append(label)
    with tempfile.TemporaryDirectory(prefix="graphmem-entities-") as tmp:
        for n, (name, group) in enumerate(sorted(by_store.items())):
            store = stores[name]
            lookup = resolve_store(
                store.texts, extractions[name], embedder, rules, Path(tmp) / f"s{n}"
            )
            norms = []
            for label in group:
                found = [
                    e
                    for i in store.by_source.get(label.source, [])
                    for e in extractions[name][i].entities
                ]
                norms.append(locate(label.mention, found))
            ids = lookup([n for n in norms if n])
            placed += [
                Placed(label, norm, ids.get(norm) if norm else None)
                for label, norm in zip(group, norms, strict=True)
            ]
    return placed


# -- scoring ------------------------------------------------------------------------------------


@dataclass
class PairCounts:
    mentions: int = 0
    found: int = 0
    gold_pairs: int = 0
    predicted_pairs: int = 0
    true_pairs: int = 0

    def add(self, other: PairCounts) -> None:
        for key, value in asdict(other).items():
            setattr(self, key, getattr(self, key) + value)

    def scores(self) -> dict[str, Any]:
        p = self.true_pairs / self.predicted_pairs if self.predicted_pairs else 1.0
        r = self.true_pairs / self.gold_pairs if self.gold_pairs else 1.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        return {**asdict(self), "precision": round(p, 4), "recall": round(r, 4), "f1": round(f1, 4)}


def score_counts(placed: Sequence[tuple[Label, str | None]]) -> PairCounts:
    """The pair counts of one store's mentions placed on entities (None: one of its own)."""
    c = PairCounts(mentions=len(placed), found=sum(e is not None for _, e in placed))
    for (a, ea), (b, eb) in itertools.combinations(placed, 2):
        gold, got = a.entity == b.entity, ea is not None and ea == eb
        c.gold_pairs += gold
        c.predicted_pairs += got
        c.true_pairs += gold and got
    return c


def score(
    placed: Sequence[Placed],
) -> tuple[dict[str, PairCounts], dict[str, list[dict[str, Any]]]]:
    """Pair counts per kind of store, and the wrong pairs (false merges, misses) per kind."""
    counts: dict[str, PairCounts] = defaultdict(PairCounts)
    wrong: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_store: dict[str, list[Placed]] = defaultdict(list)
    for p in placed:
        by_store[p.label.store].append(p)
    for store, group in by_store.items():
        kind = store.split(":", 1)[0]
        c = counts[kind]
        c.mentions += len(group)
        c.found += sum(p.entity is not None for p in group)
        for a, b in itertools.combinations(group, 2):
            gold = a.label.entity == b.label.entity
            got = a.entity is not None and a.entity == b.entity
            c.gold_pairs += gold
            c.predicted_pairs += got
            c.true_pairs += gold and got
            if gold != got:
                wrong[kind].append({
                    "store": store, "what": "false merge" if got else "missed",
                    "mentions": f"{a.label.mention} | {b.label.mention}",
                    "labels": f"{a.label.entity} | {b.label.entity}",
                    "entities": f"{a.entity} | {b.entity}",
                })  # fmt: skip
    return counts, wrong


def summary(placed: Sequence[Placed]) -> dict[str, Any]:
    counts, wrong = score(placed)
    headline = PairCounts()
    kinds = [k for k in HEADLINE if k in counts] or [k for k in counts if k in MULTIHOP.values()]
    for kind in kinds:
        headline.add(counts.get(kind, PairCounts()))
    out: dict[str, Any] = {"overall": headline.scores()}
    for kind in KINDS:
        if kind in counts:
            mistakes = wrong.get(kind, [])
            out[kind] = {
                **counts[kind].scores(),
                "false_merges": [m for m in mistakes if m["what"] == "false merge"][:EXAMPLES],
                "missed": [m for m in mistakes if m["what"] == "missed"][:EXAMPLES],
                "not_found": [
                    p.label.mention for p in placed if p.label.kind == kind and p.entity is None
                ],
            }
    return out


# -- leave one corpus out ---------------------------------------------------------------------


def grid(base: ResolutionRules) -> list[ResolutionRules]:
    """The settings compared: every combination of a few values of each knob."""
    return [
        replace(base, same_meaning=cosine, code_names_apart=apart, kind_nouns=kinds,
                nickname_letters=letters)
        for cosine in (0.7, 0.8, 0.9)
        for apart in (True, False)
        for kinds in (True, False)
        for letters in (0, 3)
    ]  # fmt: skip


def cross(
    labels: Sequence[Label],
    stores: Mapping[str, StoreTexts],
    extractions: Mapping[str, Sequence[Extraction]],
    embedder: Embedder,
    base: ResolutionRules,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """Tune on one corpus, measure on the other: the setting with the best F1 on docs scored on
    LoCoMo, and the other way round. Among settings of equal F1 (a corpus blind to a knob: no
    snake_case names in a chat, no nicknames in docs) the one nearest the defaults wins."""
    scored = [label for label in labels if label.kind in HEADLINE]
    table = []
    for rules in grid(base):
        progress(f"grid: {rules}")
        counts, _ = score(place(scored, stores, extractions, embedder, rules))
        table.append({"rules": asdict(rules), **{k: counts[k].scores() for k in HEADLINE}})
    out: dict[str, Any] = {"grid": table}
    defaults = asdict(base)
    for tuned, measured in (("docs", "locomo"), ("locomo", "docs")):
        best = max(
            table,
            key=lambda row: (
                row[tuned]["f1"],
                -sum(row["rules"][k] != v for k, v in defaults.items()),
            ),
        )
        out[f"tuned_on_{tuned}"] = {
            "rules": best["rules"],
            tuned: _short(best[tuned]),
            f"measured_on_{measured}": _short(best[measured]),
        }
    return out


def _short(scores: Mapping[str, Any]) -> dict[str, Any]:
    return {k: scores[k] for k in ("precision", "recall", "f1")}


# -- the run ------------------------------------------------------------------------------------


def run_entities(
    labels_path: Path,
    *,
    bench: Path | None,
    notes: Path | None,
    embedder: Embedder,
    kinds: Sequence[str] = KINDS,
    rules: ResolutionRules = DEFAULT_RULES,
    extractor: Extractor | None = None,
    with_cross: bool = False,
    with_feedback: bool = False,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    _, labels = load_labels(labels_path)
    labels = [label for label in labels if label.kind in kinds]
    stores = store_texts(labels, bench, notes)
    ex = extractor or get_extractor("spacy")
    extractions = extract_all(ex, stores, progress)
    placed = place(labels, stores, extractions, embedder, rules)
    result: dict[str, Any] = {
        "benchmark": "entity_resolution",
        "labels": str(labels_path),
        "extractor": ex.name,
        "embedding": getattr(embedder, "space", None) and str(embedder.space),
        "rules": asdict(rules),
        "mentions": len(labels),
        "entities": len({(label.store, label.entity) for label in labels}),
        **summary(placed),
    }
    if with_cross:
        result["leave_one_corpus_out"] = cross(
            labels, stores, extractions, embedder, rules, progress
        )
    if with_feedback:
        from eval.entity_feedback import feedback

        headline = [x for x in labels if x.kind in HEADLINE] or labels
        result["feedback"] = feedback(headline, stores, extractions, embedder, rules, progress)
    return result
