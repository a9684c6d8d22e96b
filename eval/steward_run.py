"""`python -m eval steward`: the steward on a messy store, and what stewardship does for recall.

1. A store of `memories` from eval/steward.py is built in a temp folder; the steward runs over
   everything as a dry run (timed, scored by eval/steward_score.py), then for real with the
   store's default policy, whose automatic actions are checked against the truth.
2. With `pollution`: LoCoMo dev R@10 (eval/locomo.py's turns and questions, hybrid recall) on
   each conversation's clean store, on the same store with a `share` of its turns restated
   (eval/paraphrase.py, light and heavy rewordings, the turn's dia_id kept so a copy answers as
   well as its original: what it costs is the room it takes in the top 10), and on that store
   once the steward has merged the duplicates it found, every duplicate kind applying on its own.
3. With `load`: recall latency through the store's owner, idle and while a steward run (every
   scope, a dry run) goes on in it (eval/steward_load.py).
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from eval import embedding as embedding_spec
from eval import locomo
from eval.metrics import evidence_recall, mean
from eval.paraphrase import content_words, paraphrase
from eval.steward import Corpus, Pair, Truth, build, generate
from eval.steward_load import queries_from, run_load
from eval.steward_score import (
    FAMILIES,
    duplicates_by_source,
    matches,
    score,
    wrong_automatic,
)
from eval.steward_texts import jaccard
from graphmem import open_store
from graphmem.embeddings.base import Embedder
from graphmem.embeddings.factory import make_embedder

DUPLICATE_KINDS = list(FAMILIES["duplicates"])
K = 10
Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def _examples(findings: Sequence[Any], corpus: Corpus, limit: int = 8) -> dict[str, Any]:
    """Wrong findings per family, with the start of each target's text and the share of content
    words they have in common (`shared`), for a person to judge; and how many wrong duplicate
    findings pair texts sharing half their words or more (the data's own near-duplicates are
    among them)."""
    text = {item["id"]: item["content"] for item in corpus.items}
    words = {i: frozenset(content_words(t)) for i, t in text.items()}
    injected = corpus.truth.injected()

    def shared(targets: Sequence[str]) -> float | None:
        sets = [words[t] for t in targets if t in words]
        return round(jaccard(sets[0], sets[1]), 2) if len(sets) >= 2 else None

    out: dict[str, Any] = {}
    for family, kinds in FAMILIES.items():
        wrong = [f for f in findings if f.kind in kinds and not matches(f, corpus.truth)]
        if family == "duplicates":
            out["wrong_duplicates_sharing_half_their_words"] = sum(
                (shared(f.targets) or 0) >= 0.5 for f in wrong
            )
        for where, picked in (
            ("on_injected", [f for f in wrong if any(t in injected for t in f.targets)]),
            ("outside", [f for f in wrong if not any(t in injected for t in f.targets)]),
        ):
            out[f"{family}_{where}"] = [
                {
                    "kind": f.kind,
                    "confidence": f.confidence,
                    "shared": shared(f.targets),
                    "targets": [text.get(t, t)[:160] for t in f.targets],
                    "evidence": f.evidence,
                }
                for f in picked[:limit]
            ]
    return out


def readable_conflicts(gm: Any, truth: Truth) -> int:
    """Injected conflicts whose two memories the extractor read as one subject and predicate
    with two objects: what a steward reading facts can find at most."""
    ids = sorted({i for pair in truth.conflicts for i in pair})
    rows = gm.cypher(
        "MATCH (f:Fact)-[:EXTRACTED_FROM]->(m:Memory) WHERE m.id IN $ids "
        "MATCH (f)-[:SUBJECT]->(s:Entity), (f)-[:OBJECT]->(o:Entity) "
        "RETURN m.id, s.id, f.predicate, o.id",
        {"ids": ids},
    ).rows
    facts: dict[str, dict[tuple[str, str], set[str]]] = {}
    for memory_id, subject, predicate, obj in rows:
        facts.setdefault(memory_id, {}).setdefault((subject, predicate), set()).add(obj)
    readable = 0
    for pair in truth.conflicts:
        a, b = (facts.get(i, {}) for i in sorted(pair))
        readable += any(a[key] != b[key] for key in a.keys() & b.keys())
    return readable


def run_steward(
    bench: Path,
    memories: int,
    *,
    rate: float = 0.1,
    seed: int = 0,
    embedding: str = "local",
    pollution: bool = False,
    load: bool = False,
    extract_sources: Sequence[str] | None = None,
    progress: Progress = _quiet,
) -> dict[str, Any]:
    """Build, run the steward, score (see the module's doc); with `pollution`, the recall
    experiment as well."""
    embedder = make_embedder(embedding_spec.config(embedding))
    started = time.perf_counter()
    corpus = generate(bench, memories, rate=rate, seed=seed)
    generated = round(time.perf_counter() - started, 2)
    progress(f"generated {len(corpus.items):,} memories in {generated} s")
    busy: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory(prefix="steward-eval-") as tmp:
        home = Path(tmp) / ".graphmem"
        with open_store(home, embedder=embedder, extract_on_write=False) as gm:
            built = {
                "generate": generated,
                **build(gm, corpus, progress, extract_sources=extract_sources),
            }
            stats = gm.stats()
            readable = readable_conflicts(gm, corpus.truth)
            policy = gm.steward_policy()
            progress("steward: dry run")
            started = time.perf_counter()
            dry = gm.steward_run("all", dry_run=True, listed=None)
            dry_seconds = round(time.perf_counter() - started, 2)
            progress(f"steward: {len(dry.findings):,} findings in {dry_seconds} s; applying")
            started = time.perf_counter()
            applied = gm.steward_run("all", dry_run=False, listed=None)
            apply_seconds = round(time.perf_counter() - started, 2)
        if load:
            progress("recall through the owner, idle and while the steward runs")
            texts = [item["content"] for item in corpus.items]
            busy = run_load(home, embedding, queries_from(texts, 500, seed))
    sources = {item["id"]: item["metadata"]["source"] for item in corpus.items}
    result: dict[str, Any] = {
        "benchmark": "steward",
        "memories": len(corpus.items),
        "rate": rate,
        "seed": seed,
        "embedding": embedding,
        "embedding_space": embedder.space.label,
        "sources": corpus.sources(),
        "injected": corpus.truth.counts(),
        "traps": {
            "hard_negatives": len(corpus.truth.hard_negatives),
            "conflict_negatives": len(corpus.truth.conflict_negatives),
            **{
                k: sum(v == k for v in corpus.truth.fresh.values())
                for k in sorted(set(corpus.truth.fresh.values()))
            },
        },
        "store": {
            "memories": stats.total,
            "bytes": stats.store_bytes,
            "bytes_per_memory": round(stats.store_bytes / max(stats.total, 1)),
        },
        "build_seconds": built,
        "extracted_sources": sorted(extract_sources) if extract_sources else "all",
        "conflicts_the_extractor_reads": readable,
        "policy": policy.model_dump(mode="json"),
        "steward": {
            "dry_run_seconds": dry_seconds,
            "apply_seconds": apply_seconds,
            "found": dict(sorted(dry.found.items())),
            "filed": applied.filed,
            "applied": applied.applied,
            "failed": applied.failed,
        },
        **score(dry.findings, corpus.truth),
        "automatic": wrong_automatic(applied.findings, corpus.truth),
        "duplicates_by_source": duplicates_by_source(dry.findings, corpus.truth, sources),
        "wrong_examples": _examples(dry.findings, corpus),
    }
    result["targets"]["wrong_automatic_actions"] = {
        "target": 0, "value": result["automatic"]["wrong"],
        "met": result["automatic"]["wrong"] == 0,
    }  # fmt: skip
    if busy is not None:
        result["load"] = busy
    if pollution:
        result["pollution"] = run_pollution(bench, embedder, seed=seed, progress=progress)
    return result


# -- stewardship pays: recall on a polluted store, before and after ---------------------------


def pollute(
    turns: Sequence[dict[str, Any]], share: float, rng: random.Random
) -> list[tuple[int, dict[str, Any]]]:
    """Restatements of `share` of the turns: (the turn's index, the copy), a light or a heavy
    rewording, stored up to a day after the turn, with its metadata."""
    chosen = sorted(rng.sample(range(len(turns)), round(share * len(turns))))
    copies = []
    for i in chosen:
        turn = turns[i]
        copies.append((i, {
            **turn,
            "content": paraphrase(turn["content"], rng, heavy=rng.random() < 0.5),
            "created_at": turn["created_at"] + timedelta(hours=24 * rng.random()),
        }))  # fmt: skip
    return copies


def _recall(gm: Any, questions: Sequence[dict[str, Any]]) -> list[float]:
    out = []
    for qa in questions:
        hits = gm.recall(str(qa["question"]), limit=K, recipe="hybrid").hits
        ranked = [h.memory.metadata.get("dia_id", "") for h in hits]
        out.append(evidence_recall(ranked, locomo.normalise_evidence(qa.get("evidence", [])), K))
    return out


def run_pollution(
    bench: Path,
    embedder: Embedder,
    *,
    share: float = 0.3,
    seed: int = 0,
    conversations: int | None = None,
    questions: int | None = None,
    progress: Progress = _quiet,
) -> dict[str, Any]:
    """R@10 over LoCoMo dev's questions of categories 1-4: clean, polluted, after the steward."""
    data = bench / "locomo" / "locomo_dev.json"
    samples = json.loads(data.read_text(encoding="utf-8"))[:conversations]
    rng = random.Random(seed)
    scores: dict[str, list[float]] = {"clean": [], "polluted": [], "after_steward": []}
    # merged: memories folded into another; right when the two were a turn and its copy
    tally = {"duplicates_added": 0, "merged": 0, "merged_right": 0, "merged_wrong": 0}
    steward_seconds = 0.0
    for sample in samples:
        turns = locomo.turns(sample)
        asked = [q for q in sample["qa"] if q.get("category") in locomo.CATEGORIES][:questions]
        copies = pollute(turns, share, rng)
        tally["duplicates_added"] += len(copies)
        with (
            tempfile.TemporaryDirectory(prefix="steward-clean-") as tmp,
            open_store(tmp, embedder=embedder, extract_on_write=False) as gm,
        ):
            gm.remember_many(turns)
            scores["clean"] += _recall(gm, asked)
        with (
            tempfile.TemporaryDirectory(prefix="steward-polluted-") as tmp,
            open_store(tmp, embedder=embedder, extract_on_write=False) as gm,
        ):
            stored = gm.remember_many([*turns, *(copy for _, copy in copies)])
            pairs: set[Pair] = {
                frozenset({stored[i].id, stored[len(turns) + k].id})
                for k, (i, _) in enumerate(copies)
            }
            scores["polluted"] += _recall(gm, asked)
            gm.steward_policy({"auto_apply": DUPLICATE_KINDS})
            started = time.perf_counter()
            run = gm.steward_run("duplicates", dry_run=False, listed=None)
            steward_seconds += time.perf_counter() - started
            merges = [p for f in run.findings if f.status == "applied" for p in _merged(f)]
            tally["merged"] += len(merges)
            tally["merged_right"] += sum(p in pairs for p in merges)
            tally["merged_wrong"] += sum(p not in pairs for p in merges)
            scores["after_steward"] += _recall(gm, asked)
        progress(
            f"{sample['sample_id']}: R@{K} clean {mean(scores['clean'])}, polluted "
            f"{mean(scores['polluted'])}, after {mean(scores['after_steward'])}"
        )
    return {
        "data": str(data),
        "share": share,
        "conversations": len(samples),
        "questions": len(scores["clean"]),
        **tally,
        f"recall@{K}": {name: mean(values) for name, values in scores.items()},
        "steward_seconds": round(steward_seconds, 2),
    }


def _merged(finding: Any) -> list[Pair]:
    """(kept, folded) of each memory a merge folded into the first of its targets."""
    kept, *folded = finding.targets
    return [frozenset({kept, other}) for other in folded]


def results_name(memories: int) -> str:
    """steward_10k.json for 10,000 memories, steward_2500.json for 2,500."""
    size = f"{memories // 1000}k" if memories % 1000 == 0 else str(memories)
    return f"steward_{size}.json"
