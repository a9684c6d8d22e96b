"""Speed benchmark of document indexing and search on a synthetic tree of N Markdown files.

Each file is a runbook of a service built from fixed word lists with a seeded RNG (a title, a
few sections of a few paragraphs, a code block, a table), so every run measures the same
workload. Measured: the first index run (files/s, chunks/s), a run with nothing changed, a run
after one file changed, search latency over the chunks, store size and peak RSS.
"""

from __future__ import annotations

import random
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from eval.bench import EVENTS, SERVICES
from eval.metrics import percentile
from graphmem import open_store
from graphmem.embeddings.base import Embedder

ACTIONS = ["restart", "scale out", "drain", "roll back", "rotate the keys of", "page the owner of"]
SECTIONS = ["Meaning", "Impact", "Diagnosis", "Mitigation", "Verification", "Escalation"]
WORDS = [
    "the",
    "pod",
    "queue",
    "latency",
    "alert",
    "dashboard",
    "replica",
    "node",
    "volume",
    "certificate",
    "deploy",
    "pipeline",
    "cache",
    "lock",
    "retry",
    "timeout",
    "connection",
    "pool",
    "memory",
    "disk",
    "quota",
    "error",
    "rate",
    "threshold",
]


def _paragraph(rng: random.Random, service: str) -> str:
    event = rng.choice(EVENTS)
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(25, 60)))
    return f"When {service} {event}, {rng.choice(ACTIONS)} {service}: {words}."


def synthetic_doc(i: int, rng: random.Random) -> str:
    service = f"{rng.choice(SERVICES)}-{i % 97}"
    parts = [f"---\ntitle: {service} {rng.choice(EVENTS)}\n---\n"]
    for section in rng.sample(SECTIONS, rng.randint(3, 5)):
        parts.append(f"## {section}\n")
        parts += [_paragraph(rng, service) + "\n" for _ in range(rng.randint(1, 3))]
        if section == "Diagnosis":
            parts.append(
                f"```sh\nkubectl -n {service} get pods\nkubectl logs deploy/{service}\n```\n"
            )
        if section == "Escalation":
            parts.append("| team | channel |\n|---|---|\n| platform | #platform-oncall |\n")
    return "\n".join(parts)


def write_tree(root: Path, files: int, seed: int = 11) -> None:
    rng = random.Random(seed)
    for i in range(files):
        folder = root / "docs" / f"team-{i % 50:02}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"runbook-{i:05}.md").write_text(synthetic_doc(i, rng), encoding="utf-8")


def run_bench_docs(embedder: Embedder, files: int, queries: int = 200) -> dict[str, Any]:
    rng = random.Random(3)
    with tempfile.TemporaryDirectory(prefix="docs-bench-") as tmp:
        project = Path(tmp)
        write_tree(project, files)
        with open_store(project / ".graphmem", embedder=embedder, extract_on_write=False) as gm:
            started = time.perf_counter()
            first = gm.index_documents()
            index_s = time.perf_counter() - started
            started = time.perf_counter()
            again = gm.index_documents()
            unchanged_ms = 1000 * (time.perf_counter() - started)
            changed = project / "docs" / "team-07" / "runbook-00007.md"
            changed.write_text(changed.read_text() + "\n## Notes\n\nRotate the certificate.\n")
            started = time.perf_counter()
            one = gm.index_documents([changed])
            one_file_ms = 1000 * (time.perf_counter() - started)
            gm.search_docs("warm up")
            timings = []
            for _ in range(queries):
                service = rng.choice(SERVICES)
                question = f"what should I check when {service} {rng.choice(EVENTS)}?"
                started = time.perf_counter()
                gm.search_docs(question, limit=10)
                timings.append(1000 * (time.perf_counter() - started))
            store_bytes = sum(p.stat().st_size for p in gm.path.rglob("*") if p.is_file())
        peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "files": files,
        "chunks": first.chunks,
        "sections": first.sections,
        "embedding_space": embedder.space.label,
        "index_seconds": round(index_s, 2),
        "files_per_s": round(files / index_s, 1),
        "chunks_per_s": round(first.chunks / index_s, 1),
        "unchanged_run_ms": round(unchanged_ms, 1),
        "unchanged_files": again.unchanged,
        "one_changed_file_ms": round(one_file_ms, 1),
        "one_changed_embedded": one.embedded,
        "search_ms": {"p50": percentile(timings, 50), "p95": percentile(timings, 95)},
        "store_bytes": store_bytes,
        "peak_rss_mb": round(peak_rss_mb, 1),
    }
