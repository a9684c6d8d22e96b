"""LoCoMo turn-level evidence recall (LoCoMo's own retrieval metric, no LLM needed).

One temp store per conversation; every turn is a memory "speaker: text" dated by its session, with
its dia_id in metadata; each question of categories 1-4 is recalled against its conversation only.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from eval.falkordb_graphs import StoreUrls, embedded
from eval.metrics import evidence_recall, mean
from eval.systems import GRAPH, needs_entities
from graphmem import open_store
from graphmem.embeddings.base import Embedder
from graphmem.models import Hit

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10, 25)
_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")


def parse_session_date(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")


def normalise_evidence(raw: Sequence[str]) -> list[str]:
    ids: list[str] = []
    for item in raw:
        for part in re.split(r"[;,\s]+", str(item)):
            match = _EVIDENCE.search(part)
            if match:
                ids.append(f"D{int(match[1])}:{int(match[2])}")
    return ids


def turns(sample: dict[str, Any], *, captions: bool = True) -> list[dict[str, Any]]:
    """Memories for one conversation, in order."""
    conv = sample["conversation"]
    out = []
    n = 1
    while f"session_{n}_date_time" in conv:
        when = parse_session_date(conv[f"session_{n}_date_time"])
        for turn in conv.get(f"session_{n}", []):
            text = f"{turn['speaker']}: {turn['text']}"
            if captions and turn.get("blip_caption"):
                text += f" [shares an image: {turn['blip_caption']}]"
            dia_id = "D{}:{}".format(*_EVIDENCE.search(turn["dia_id"]).groups())  # type: ignore[union-attr]
            out.append(
                {
                    "content": text,
                    "created_at": when,
                    "session_id": f"{sample['sample_id']}-s{n}",
                    "metadata": {"dia_id": dia_id, "session": n, "speaker": turn["speaker"]},
                }
            )
        n += 1
    return out


def _percentiles(seconds: Sequence[float]) -> dict[str, float]:
    """p50 and p95 of the per-question times, in ms (the systems were asked in turn, question
    by question, so they ran under the same conditions)."""
    ordered = sorted(seconds) or [0.0]
    at = lambda q: round(1000 * ordered[min(int(q * len(ordered)), len(ordered) - 1)], 2)  # noqa: E731
    return {"recall_ms_p50": at(0.5), "recall_ms_p95": at(0.95)}


def run(
    data: Path,
    systems: Sequence[str],
    *,
    embedder: Embedder,
    limit_conversations: int | None = None,
    limit_questions: int | None = None,
    captions: bool = True,
    progress: Callable[[str], None] = lambda _: None,
    store: StoreUrls = embedded,
) -> dict[str, dict[str, Any]]:
    """`store`: where each conversation's store lives (eval.falkordb_graphs)."""
    samples = json.loads(Path(data).read_text(encoding="utf-8"))[:limit_conversations]
    scores: dict[str, dict[int, dict[str, list[float]]]] = {
        s: {k: defaultdict(list) for k in KS} for s in systems
    }
    counts: dict[str, int] = defaultdict(int)
    timing: dict[str, Any] = {"store_s": 0.0, "extract_s": 0.0, "recall_s": defaultdict(list)}
    for sample in samples:
        with (
            tempfile.TemporaryDirectory(prefix="locomo-") as tmp,
            open_store(tmp, embedder=embedder, extract_on_write=False, **store()) as gm,
        ):
            started = time.perf_counter()
            gm.remember_many(turns(sample, captions=captions))
            timing["store_s"] += time.perf_counter() - started
            if needs_entities(systems):
                started = time.perf_counter()
                gm.index_triples()
                timing["extract_s"] += time.perf_counter() - started
            questions = [q for q in sample["qa"] if q.get("category") in CATEGORIES]
            for qa in questions[:limit_questions]:
                category = CATEGORIES[qa["category"]]
                evidence = normalise_evidence(qa.get("evidence", []))
                counts[category] += 1
                for system in systems:
                    started = time.perf_counter()
                    question = str(qa["question"])
                    hits: Sequence[Hit] = (
                        gm.recall_multihop(question, limit=max(KS)).hits
                        if system == GRAPH
                        else gm.recall(question, limit=max(KS), recipe=system).hits
                    )
                    timing["recall_s"][system].append(time.perf_counter() - started)
                    ranked = [h.memory.metadata.get("dia_id", "") for h in hits]
                    for k in KS:
                        r = evidence_recall(ranked, evidence, k)
                        scores[system][k][category].append(r)
                        scores[system][k]["overall"].append(r)
        progress(f"{sample['sample_id']}: {sum(counts.values())} questions so far")
    n = sum(counts.values())
    results = {}
    for system in systems:
        results[system] = {
            "benchmark": "locomo",
            "system": system,
            "data": str(data),
            "n_questions": n,
            "per_category_questions": dict(counts),
            "recall": {
                str(k): {
                    name: mean(scores[system][k][name])
                    for name in ("overall", *CATEGORIES.values())
                }
                for k in KS
            },
            "embedding_space": embedder.space.label,
            "store_seconds": round(timing["store_s"], 2),
            "extract_seconds": round(timing["extract_s"], 2) if system == GRAPH else None,
            "recall_ms_mean": round(1000 * sum(timing["recall_s"][system]) / max(n, 1), 2),
            **_percentiles(timing["recall_s"][system]),
            "captions": captions,
        }
    return results
