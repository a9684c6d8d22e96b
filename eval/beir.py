"""Document retrieval on any folder in BEIR layout (Cranfield ships that way): nDCG@10, recall@100.

`corpus.jsonl` {_id, title, text}, `queries.jsonl` {_id, text}, `qrels/<split>.tsv` with a header
and rows query-id, corpus-id, score. One store holds the corpus (title -> memory title, text ->
content); every query with a relevant judgment is recalled against it. nDCG uses the qrels
scores as graded gains with the log2 discount, as BEIR's pytrec_eval does; scores <= 0 are
judged not relevant.

A slice (`limit_queries`, `distractors`) indexes only the documents relevant to the chosen
queries plus a seeded random sample of the others, for a CI run that cannot afford embedding
the whole corpus; the result says so, and its numbers are not comparable to a full run.
"""

from __future__ import annotations

import csv
import json
import random
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from eval.metrics import mean, ndcg, recall_at
from eval.systems import GRAPH, needs_entities
from graphmem import open_store
from graphmem.embeddings.base import Embedder
from graphmem.models import Hit

NDCG_K = 10
RECALL_K = 100
Rows = list[dict[str, Any]]
Qrels = dict[str, dict[str, float]]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def load_qrels(path: Path) -> dict[str, dict[str, float]]:
    """query id -> {doc id: score}; the header row is skipped wherever it says query-id."""
    qrels: dict[str, dict[str, float]] = defaultdict(dict)
    with path.open(encoding="utf-8", newline="") as rows:
        for row in csv.reader(rows, delimiter="\t"):
            if len(row) < 3 or row[0] == "query-id":
                continue
            qrels[row[0]][row[1]] = float(row[2])
    return dict(qrels)


def load(folder: Path, split: str = "test") -> tuple[Rows, Rows, Qrels]:
    """(corpus, queries, qrels) of a BEIR folder, ids as strings, file order kept."""
    folder = Path(folder)
    corpus = [
        {"_id": str(d["_id"]), "title": d.get("title") or "", "text": d.get("text") or ""}
        for d in _jsonl(folder / "corpus.jsonl")
    ]
    queries = [{"_id": str(q["_id"]), "text": q["text"]} for q in _jsonl(folder / "queries.jsonl")]
    return corpus, queries, load_qrels(folder / "qrels" / f"{split}.tsv")


def memories(corpus: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """One memory per document, and how many documents were left out for having no text."""
    out = []
    for doc in corpus:
        title, text = doc["title"].strip(), doc["text"].strip()
        if not (title or text):
            continue
        out.append(
            {
                "content": text or title,
                "title": title[:500] or None,
                "metadata": {"doc": doc["_id"]},
            }
        )
    return out, len(corpus) - len(out)


def slice_corpus(
    corpus: Sequence[dict[str, Any]],
    relevant: set[str],
    distractors: int,
    seed: int,
) -> list[dict[str, Any]]:
    """The relevant documents plus a seeded sample of `distractors` others, in corpus order."""
    others = [d["_id"] for d in corpus if d["_id"] not in relevant]
    keep = relevant | set(random.Random(seed).sample(others, min(distractors, len(others))))
    return [d for d in corpus if d["_id"] in keep]


def run(
    folder: Path,
    systems: Sequence[str],
    *,
    embedder: Embedder,
    split: str = "test",
    limit_queries: int | None = None,
    distractors: int | None = None,
    seed: int = 0,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, dict[str, Any]]:
    """`distractors=None` indexes the whole corpus; a number indexes the relevant documents of
    the chosen queries and that many others."""
    corpus, queries, qrels = load(folder, split)
    judged = [q for q in queries if any(s > 0 for s in qrels.get(q["_id"], {}).values())]
    chosen = judged[:limit_queries]
    total = len(corpus)
    if distractors is not None:
        relevant = {d for q in chosen for d, s in qrels[q["_id"]].items() if s > 0}
        corpus = slice_corpus(corpus, relevant, distractors, seed)
    docs, empty = memories(corpus)
    scores: dict[str, dict[str, list[float]]] = {s: defaultdict(list) for s in systems}
    timing: dict[str, Any] = {"store_s": 0.0, "extract_s": 0.0, "recall_s": defaultdict(float)}
    with (
        tempfile.TemporaryDirectory(prefix="beir-") as tmp,
        open_store(tmp, embedder=embedder, extract_on_write=False) as gm,
    ):
        started = time.perf_counter()
        gm.remember_many(docs, on_progress=lambda done, of: progress(f"stored {done}/{of}"))
        timing["store_s"] = time.perf_counter() - started
        if needs_entities(systems):
            started = time.perf_counter()
            gm.index_triples()
            timing["extract_s"] = time.perf_counter() - started
        for query in chosen:
            gains = qrels[query["_id"]]
            relevant_ids = {d for d, s in gains.items() if s > 0}
            for system in systems:
                started = time.perf_counter()
                hits: Sequence[Hit] = (
                    gm.recall_multihop(query["text"], limit=RECALL_K).hits
                    if system == GRAPH
                    else gm.recall(query["text"], limit=RECALL_K, recipe=system).hits
                )
                timing["recall_s"][system] += time.perf_counter() - started
                ranked = list(dict.fromkeys(h.memory.metadata.get("doc", "") for h in hits))
                scores[system][f"ndcg@{NDCG_K}"].append(ndcg(ranked, gains, NDCG_K))
                scores[system][f"recall@{RECALL_K}"].append(
                    recall_at(ranked, relevant_ids, RECALL_K)
                )
    n = len(chosen)
    results = {}
    for system in systems:
        results[system] = {
            "benchmark": f"beir:{Path(folder).name}",
            "system": system,
            "data": str(folder),
            "split": split,
            "n_queries": n,
            "queries_without_relevant_judgments": len(queries) - len(judged),
            "metrics": {name: mean(values) for name, values in scores[system].items()},
            "corpus": {
                "docs_in_corpus": total,
                "docs_indexed": len(docs),
                "docs_without_text": empty,
                "sliced": distractors is not None,
                **({"distractors": distractors, "seed": seed} if distractors is not None else {}),
            },
            "embedding_space": embedder.space.label,
            "store_seconds": round(timing["store_s"], 2),
            "extract_seconds": round(timing["extract_s"], 2) if system == GRAPH else None,
            "recall_ms_mean": round(1000 * timing["recall_s"][system] / max(n, 1), 2),
        }
    return results
