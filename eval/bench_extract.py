"""Extraction throughput: memories per second through an extractor, and what it finds per memory.

The workload is the seeded synthetic engineering notes of `eval.bench`, with every fourth
memory replaced by a LoCoMo-style chat turn built from fixed word lists, so every run measures
the same texts. The extractor is built and given one batch before the clock starts: loading the
model and starting worker processes are one-off costs, not throughput.
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

from graphmem.extractors import Extractor, get_extractor

from eval.bench import synthetic_memories

SPEAKERS = ["Caroline", "Melanie", "Jon", "Gina", "Maria", "Evan", "Audrey", "Nate"]
ACTIVITIES = [
    "went to the LGBTQ support group",
    "painted a sunrise at the lake",
    "signed up for a pottery class",
    "visited the animal shelter with my kids",
    "ran a charity race for the children's hospital",
    "started a book club at the library",
    "adopted a puppy from the rescue center",
    "took the kids camping near Yosemite",
]
FEELINGS = [
    "and it was really powerful",
    "and I felt so proud of myself",
    "because I wanted to give something back",
    "and my friends loved the photos",
    "and it reminded me of my grandmother",
]
WHEN = ["yesterday", "last week", "on Saturday", "last summer", "this morning"]


def chat_turns(n: int, seed: int = 13) -> list[str]:
    rng = random.Random(seed)
    return [
        f"{rng.choice(SPEAKERS)}: I {rng.choice(ACTIVITIES)} {rng.choice(WHEN)} "
        f"{rng.choice(FEELINGS)}. {rng.choice(SPEAKERS)} said I should try it again next month."
        for _ in range(n)
    ]


def workload(n: int, chat_every: int = 4) -> list[str]:
    notes = [m["content"] for m in synthetic_memories(n)]
    turns = iter(chat_turns(n // chat_every + 1))
    return [next(turns) if i % chat_every == chat_every - 1 else t for i, t in enumerate(notes)]


def run_extract_bench(
    n: int, extractor_name: str, *, batch: int = 500, extractor: Extractor | None = None
) -> dict[str, Any]:
    """Extract from `n` memories in batches of `batch`; `extractor` overrides the name's default."""
    texts = workload(n)
    ex = extractor or get_extractor(extractor_name)
    # one batch outside the clock: it loads the model and starts any worker processes
    ex.extract(texts[: min(batch, n)])
    entities = facts = 0
    started = time.perf_counter()
    for start in range(0, n, batch):
        for extraction in ex.extract(texts[start : start + batch]):
            entities += len(extraction.entities)
            facts += len(extraction.facts)
    seconds = time.perf_counter() - started
    return {
        "benchmark": "extract",
        "extractor": ex.name,
        "memories": n,
        "batch": batch,
        "words_per_memory": round(sum(len(t.split()) for t in texts) / max(n, 1), 1),
        "cpus": os.cpu_count(),
        "seconds": round(seconds, 2),
        "memories_per_second": round(n / seconds, 1),
        "entities_per_memory": round(entities / max(n, 1), 2),
        "facts_per_memory": round(facts / max(n, 1), 2),
    }
