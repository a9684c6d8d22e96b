"""Multi-hop passage retrieval (2WikiMultihopQA, MuSiQue), scored as the HippoRAG papers score it.

One store per set holds every passage of its corpus as a memory, "title\\ntext", with its title
in metadata; entities and facts are extracted from every passage (the spaCy extractor, no LLM)
before any question is asked. Each question is recalled by every system in turn, and scored by
passage Recall@k: the fraction of its gold titles found among the titles of the top k passages,
averaged over questions. Titles repeat in MuSiQue: a passage of the same title as a gold one
counts as found, and a title listed twice among the gold (two gold passages of that title)
counts twice. Protocol and published rows: ../shared/bench/README.md, "Multi-hop passage
retrieval".

A built store can be kept (`store_dir`): a file beside it records what it holds, and a later run
on the same corpus and embedding space asks its questions without storing anything again.

`walk=True` also reports where the gold passages recall leaves out of its top 5 lie in the walk
`recall_multihop` makes (graphmem.graph.multihop, called as recall_multihop calls it): in the
pool of recall hits it fuses, in the walked subgraph, near the top of its PageRank.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from eval.metrics import mean, percentile, recall_at
from eval.progress import every
from eval.systems import GRAPH
from graphmem import open_store
from graphmem.embeddings.base import Embedder
from graphmem.graph import multihop as walking
from graphmem.graph.ops import POOL
from graphmem.recall.config import get_recipe

KS = (2, 5)
SYSTEMS = ("hybrid", GRAPH, "bm25", "vector")
# set name -> its folder under ../shared/bench/multihop
SETS = {"2wiki": "2wikimultihopqa", "musique": "musique"}
BUILD_FILE = "{name}.build.json"  # beside the store's folder, once it is complete

# Recall@2 / Recall@5 in percent as published, copied from ../shared/bench/README.md, which read
# them from secondary copies that agree with each other (None: not published).
PUBLISHED: dict[str, Any] = {
    "source": (
        "HippoRAG (arXiv 2405.14831) Table 2; GraphRAG and LightRAG from GFM-RAG "
        "(arXiv 2502.01113); NV-Embed-v2 and HippoRAG 2 from HippoRAG 2 (arXiv 2502.14802), "
        "R@5 only; as listed in ../shared/bench/README.md"
    ),
    "unit": "percent",
    "note": (
        "MuSiQue rows are for MuSiQue's 1,000-question subset, not the 200 questions here: "
        "compare MuSiQue by trend only. 2Wiki rows are for the same 1,000 questions and corpus."
    ),
    "rows": {
        name: {
            "musique": {"R@2": m2, "R@5": m5},
            "2wiki": {"R@2": w2, "R@5": w5},
        }
        for name, m2, m5, w2, w5 in (
            ("BM25", 32.3, 41.2, 51.8, 61.9),
            ("Contriever", 34.8, 46.6, 46.6, 57.5),
            ("GTR", 37.4, 49.1, 60.2, 67.9),
            ("ColBERTv2", 37.9, 49.2, 59.2, 68.2),
            ("RAPTOR (LLM)", 35.7, 45.3, 46.3, 53.8),
            ("GraphRAG (MS, LLM)", 35.4, 49.3, 61.6, 77.3),
            ("LightRAG (LLM)", 24.8, 34.7, 45.1, 59.1),
            ("HippoRAG (LLM OpenIE, Contriever)", 41.0, 52.1, 71.5, 89.5),
            ("NV-Embed-v2 (7B embedder; HippoRAG 2)", None, 69.7, None, 76.5),
            ("HippoRAG 2 (LLM, NV-Embed-v2)", None, 74.7, None, 90.4),
        )
    },
}


def load(folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(passages, questions) of a set's folder: corpus.json and questions.json."""
    folder = Path(folder)
    corpus = json.loads((folder / "corpus.json").read_text(encoding="utf-8"))
    questions = json.loads((folder / "questions.json").read_text(encoding="utf-8"))
    return corpus, questions


def memories(corpus: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One memory per passage: its title and text, the title kept in metadata to score by."""
    return [
        {"content": f"{p['title']}\n{p['text']}", "metadata": {"title": p["title"]}} for p in corpus
    ]


def category(question: dict[str, Any]) -> str | None:
    """2Wiki's question type; for MuSiQue the hop count its id starts with ("2hop__..." ->
    "2hop", "3hop1__..." -> "3hop")."""
    if question.get("type"):
        return str(question["type"])
    head = str(question.get("id", "")).split("__", 1)[0]
    return head[:4] if head[:1].isdigit() and head[1:4] == "hop" else None


def title_recall(titles: Sequence[str], gold: Sequence[str], k: int) -> float:
    """The share of the gold titles among the titles of the top k passages: a passage whose
    title is a gold title counts as found, whichever passage of that title it is."""
    return recall_at(titles, list(gold), k)


def titles_of(gm: Any) -> dict[str, str]:
    """Memory id -> the title of its passage, for every memory of the store."""
    titles: dict[str, str] = {}
    cursor = None
    while True:
        page = gm.export_page(cursor, limit=5000)
        titles.update((m.id, m.metadata.get("title", "")) for m in page.memories)
        cursor = page.next_cursor
        if not cursor or not page.memories:
            return titles


REACH = ("missed", "in_pool", "reached", "pagerank_top3", "pagerank_top10", "full_after_one_hop")
# recall_multihop's defaults (GraphAPI.recall_multihop)
SEED_K, MAX_HOPS, DAMPING = 3, 2, 0.85


def walk_reach(
    gm: Any, question: str, gold: Sequence[str], title_of: dict[str, str]
) -> Counter[str]:
    """For the gold titles recall leaves out of its top k: how many are in the recall hits the
    walk is fused with (`in_pool`), in the subgraph the walk gathers (`reached`), and among the
    3 and 10 memories PageRank ranks first that are not seeds. `full_after_one_hop`: the walk
    had gathered as many memories as it may (MAX_MEMORIES) before its second hop."""
    recipe = get_recipe(gm.settings.recall_recipe).model_copy(update={"w_answer": 0.0})
    hits = gm.recall(question, limit=POOL, recipe=recipe).hits
    titles = [title_of.get(h.memory.id, "") for h in hits]
    seeds = {h.memory.id: h.score for h in hits[:SEED_K]}
    found: Counter[str] = Counter()
    if not seeds:
        return found
    sub = walking.gather(gm.store, list(seeds), max_hops=MAX_HOPS)
    ranked = walking.rank(sub, seeds, damping=DAMPING)
    others = sorted((m for m in ranked if m not in seeds), key=lambda m: -ranked[m])
    first = [title_of.get(m) for m in others[:10]]
    reached = {title_of.get(m) for m in sub.memories}
    one_hop = walking.gather(gm.store, list(seeds), max_hops=1)
    found["full_after_one_hop"] += len(one_hop.memories) >= walking.MAX_MEMORIES
    found["walk_memories"] += len(sub.memories)
    for title in gold:
        if title in titles[: max(KS)]:
            continue
        found["missed"] += 1
        found["in_pool"] += title in titles
        found["reached"] += title in reached
        found["pagerank_top3"] += title in first[:3]
        found["pagerank_top10"] += title in first
    return found


def _fingerprint(corpus: Sequence[dict[str, Any]], embedder: Embedder) -> dict[str, Any]:
    return {
        "passages": len(corpus),
        "first_title": corpus[0]["title"] if corpus else None,
        "last_title": corpus[-1]["title"] if corpus else None,
        "embedding_space": embedder.space.label,
    }


@contextmanager
def _folder(store_dir: Path | None, name: str) -> Iterator[tuple[Path, Path | None]]:
    """(the store's folder, the file that records a finished build there, or None for a
    throwaway store)."""
    if store_dir is None:
        with tempfile.TemporaryDirectory(prefix=f"multihop-{name}-") as tmp:
            yield Path(tmp), None
        return
    store_dir.mkdir(parents=True, exist_ok=True)
    yield store_dir / name, store_dir / BUILD_FILE.format(name=name)


def build(
    gm: Any, corpus: Sequence[dict[str, Any]], progress: Callable[[str], None]
) -> dict[str, Any]:
    """Store every passage, extract entities and facts from all of them, and wait until no
    memory waits for extraction. Returns the seconds of each step and what extraction found."""
    started = time.perf_counter()
    items = memories(corpus)
    gm.remember_many(items, on_progress=every(max(len(items) // 20, 1), "stored", progress))
    stored = time.perf_counter() - started
    started = time.perf_counter()
    report = gm.index_triples(on_progress=every(max(len(items) // 20, 1), "extracted", progress))
    gm.wait_for_extraction()
    extracted = time.perf_counter() - started
    backlog = gm.stats().backlog.get("extraction", 0)
    if backlog:
        raise RuntimeError(f"{backlog} passages still wait for extraction")
    return {
        "store_seconds": round(stored, 2),
        "extract_seconds": round(extracted, 2),
        "extractor": report.extractor,
        "entity_mentions": report.entities,
        "facts": report.facts,
        "extraction_errors": report.errors,
    }


def run(
    folder: Path,
    name: str,
    systems: Sequence[str] = SYSTEMS,
    *,
    embedder: Embedder,
    limit_questions: int | None = None,
    store_dir: Path | None = None,
    walk: bool = False,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """One set (`name`, a key of SETS, or any name for a folder in the same layout): build the
    store (or reuse the one `store_dir` holds) and score every system on its questions."""
    corpus, questions = load(folder)
    questions = questions[:limit_questions]
    fingerprint = _fingerprint(corpus, embedder)
    k = max(KS)
    scores: dict[str, dict[int, dict[str, list[float]]]] = {
        s: {n: defaultdict(list) for n in KS} for s in systems
    }
    seconds: dict[str, list[float]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)
    top: dict[str, list[list[str]]] = defaultdict(list)  # system -> each question's top titles
    subgraphs: dict[str, list[int]] = defaultdict(list)
    reach: Counter[str] = Counter()
    with _folder(store_dir, name) as (path, record):
        reused = record is not None and record.is_file()
        if reused:
            assert record is not None
            built = json.loads(record.read_text(encoding="utf-8"))
            if built.get("fingerprint") != fingerprint:
                raise ValueError(
                    f"{path} was built from another corpus or embedding space "
                    f"({built.get('fingerprint')} against {fingerprint}): remove it to rebuild"
                )
        elif path.exists() and any(path.iterdir()):
            raise ValueError(f"{path} holds an unfinished build: remove it to rebuild")
        with open_store(path, embedder=embedder, extract_on_write=False) as gm:
            if reused:
                progress(f"{name}: reusing the store at {path}")
            else:
                progress(f"{name}: storing {len(corpus):,} passages")
                built = {"fingerprint": fingerprint, "ingest": build(gm, corpus, progress)}
                if record is not None:
                    record.write_text(json.dumps(built, indent=2) + "\n", encoding="utf-8")
            title_of = titles_of(gm)
            report = every(max(len(questions) // 10, 1), f"{name}: questions", progress)
            for done, question in enumerate(questions, 1):
                kind = category(question)
                counts["overall"] += 1
                if kind:
                    counts[kind] += 1
                for system in systems:
                    started = time.perf_counter()
                    answer = (
                        gm.recall_multihop(question["question"], limit=k)
                        if system == GRAPH
                        else gm.recall(question["question"], limit=k, recipe=system)
                    )
                    seconds[system].append(time.perf_counter() - started)
                    titles = [title_of[h.memory.id] for h in answer.hits]
                    top[system].append(titles)
                    if system == GRAPH:
                        subgraphs["memories"].append(answer.subgraph.get("memories", 0))
                        subgraphs["entities"].append(answer.subgraph.get("entities", 0))
                    for n in KS:
                        r = title_recall(titles, question["gold_titles"], n)
                        scores[system][n]["overall"].append(r)
                        if kind:
                            scores[system][n][kind].append(r)
                if walk:
                    reach.update(
                        walk_reach(gm, question["question"], question["gold_titles"], title_of)
                    )
                report(done, len(questions))
    kinds = [c for c in counts if c != "overall"]
    per_system = {}
    for system in systems:
        ms = [1000 * s for s in seconds[system]]
        per_system[system] = {
            "recall": {
                str(n): {c: mean(scores[system][n][c]) for c in ("overall", *sorted(kinds))}
                for n in KS
            },
            "recall_ms_mean": round(sum(ms) / max(len(ms), 1), 2),
            "recall_ms_p50": percentile(ms, 50) if ms else 0.0,
            "recall_ms_p95": percentile(ms, 95) if ms else 0.0,
        }
    result: dict[str, Any] = {
        "benchmark": SETS.get(name, name),
        "data": str(folder),
        "n_passages": len(corpus),
        "n_questions": len(questions),
        "per_category_questions": {c: counts[c] for c in sorted(kinds)},
        "embedding_space": embedder.space.label,
        "ingest": {**built["ingest"], "reused_store": reused},
        "systems": per_system,
    }
    if GRAPH in systems and "hybrid" in systems:
        result["graph_vs_hybrid"] = compare(
            top["hybrid"], top[GRAPH], [q["gold_titles"] for q in questions], subgraphs
        )
    if walk:
        result["walk"] = {
            "questions": len(questions),
            "gold_titles": sum(len(q["gold_titles"]) for q in questions),
            **{key: reach[key] for key in REACH},
            "walk_memories_mean": round(reach["walk_memories"] / max(len(questions), 1), 1),
            "note": f"gold titles outside recall's top {max(KS)}: in its top {POOL} "
            "(in_pool), in the walked subgraph (reached), among the first 3 / 10 non-seed "
            "memories of its PageRank",
        }
    if name in SETS:
        result["table"] = table(per_system, name)
    return result


def compare(
    hybrid: Sequence[Sequence[str]],
    graph: Sequence[Sequence[str]],
    gold: Sequence[Sequence[str]],
    subgraphs: dict[str, list[int]],
) -> dict[str, Any]:
    """Where the walk's top 5 differs from recall's: questions whose top-5 titles differ, gold
    titles in one top 5 and not the other, and how big the walked subgraphs were."""
    k = max(KS)
    only_graph = only_hybrid = differ = 0
    for h, g, titles in zip(hybrid, graph, gold, strict=True):
        differ += list(h[:k]) != list(g[:k])
        only_graph += sum(t in g[:k] and t not in h[:k] for t in titles)
        only_hybrid += sum(t in h[:k] and t not in g[:k] for t in titles)
    return {
        "questions_with_another_top5": differ,
        "gold_titles_only_graph_top5": only_graph,
        "gold_titles_only_hybrid_top5": only_hybrid,
        "subgraph_memories_mean": round(sum(subgraphs["memories"]) / max(len(graph), 1), 1),
        "subgraph_entities_mean": round(sum(subgraphs["entities"]) / max(len(graph), 1), 1),
    }


def table(per_system: dict[str, dict[str, Any]], name: str) -> dict[str, dict[str, Any]]:
    """Recall@2 / Recall@5 in percent: graphmem's systems, then the published rows for the set."""
    rows: dict[str, dict[str, Any]] = {
        f"graphmem {system}": {
            f"R@{n}": round(100 * res["recall"][str(n)]["overall"], 1) for n in KS
        }
        for system, res in per_system.items()
    }
    for row, sets in PUBLISHED["rows"].items():
        rows[f"{row} (published)"] = dict(sets[name])
    return rows


def run_sets(
    data: Path,
    names: Sequence[str],
    systems: Sequence[str] = SYSTEMS,
    *,
    embedder: Embedder,
    limit_questions: int | None = None,
    store_dir: Path | None = None,
    walk: bool = False,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Each named set under `data` (../shared/bench/multihop), with the run's settings and the
    published rows."""
    out: dict[str, Any] = {
        "benchmark": "multihop",
        "config": {
            "sets": list(names),
            "systems": list(systems),
            "ks": list(KS),
            "questions": limit_questions,
            "embedding_space": embedder.space.label,
            "memory": "title + newline + text, one memory per passage",
            "extraction": "spaCy extractor (no LLM), every passage, before the questions",
            "recall_multihop": "defaults (max_hops 2, seed_k 3, graph_weight 0.8)",
            "metric": "share of gold titles among the top-k passages' titles, averaged",
            "store_dir": str(store_dir) if store_dir else None,
        },
    }
    for name in names:
        started = time.perf_counter()
        out[name] = run(
            data / SETS[name], name, systems, embedder=embedder,
            limit_questions=limit_questions, store_dir=store_dir, walk=walk, progress=progress,
        )  # fmt: skip
        out[name]["run_seconds"] = round(time.perf_counter() - started, 1)
    out["published"] = PUBLISHED
    return out
