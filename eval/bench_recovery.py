"""What a start reads to find the work a crash left, at N memories: the Pending table
(graphmem.storage.protocols.pending) against the scans it replaced, each timed in a new process on the
closed store, after the store has opened, with no saved search structures (as after a kill).

The store holds N memories (a third of them notes of three sentences, which get passages) with
the given embedder; 1% of them are left waiting for extraction and 1% of the notes for their
passages, as an owner killed in the middle of an import leaves them. The old scans: every
memory's `extracted_by` (minus archived ones), then every memory with a vector but no passages,
read and split into sentences (`PassageWork.flagged_passages`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from eval.embedding import environ
from graphmem.passage_work import PASSAGES_PENDING
from graphmem.passages import passage_ids, passages
from graphmem.settings import load_settings
from graphmem.storage.protocols import CHUNK_EXTRACT, EXTRACT, PASSAGES, WORKS

BACKLOG = 0.01  # of the memories waiting for extraction, and of the notes for passages
CHUNK = 50_000  # lines per import call
OLD_EXTRACTION_SCAN = (
    "MATCH (m:Memory) WHERE m.lifecycle <> 'archived' AND m.extracted_by IS NULL RETURN m.id"
)


def _content(i: int) -> str:
    if i % 3 == 0:
        return (
            f"Service {i % 15} timed out after release {i % 97}. The pool was too small. "
            f"We raised it to {i % 50} (TICKET-{i})."
        )
    return f"orders returned 502 after deploy {i % 13} (TICKET-{i})"


def build(home: Path, n: int, embedding: str) -> dict[str, int]:
    """A store of `n` memories with the backlog described in the module doc."""
    from eval import embedding as embedding_spec
    from graphmem.embeddings.factory import make_embedder
    from graphmem.service import GraphMemory

    ids = [f"01HKS6590000000000{i:08d}" for i in range(n)]
    settings = load_settings(home, environ={}, overrides={"extract_on_write": False})
    embedder = make_embedder(embedding_spec.config(embedding))
    with GraphMemory(settings, embedder=embedder, extract_in_background=False) as gm:
        for start in range(0, n, CHUNK):
            lines = [
                json.dumps({"id": ids[i], "content": _content(i)})
                for i in range(start, min(start + CHUNK, n))
            ]
            gm.import_jsonl(lines)
            print(f"imported {min(start + CHUNK, n)} / {n}", file=sys.stderr)
        cut = ids[n - int(n * BACKLOG)]  # those before it were extracted
        gm.cypher(
            "MATCH (m:Memory) WHERE m.id < $cut SET m.extracted_by = 'bench'", {"cut": cut},
            write=True,
        )  # fmt: skip
        gm.cypher(
            "MATCH (p:Pending) WHERE p.work = 'extract' AND p.item < $cut DELETE p", {"cut": cut},
            write=True,
        )  # fmt: skip
        notes = [i for i in range(n) if passages(_content(i))]
        waiting = [ids[i] for i in notes[len(notes) - int(len(notes) * BACKLOG) :]]
        table = f"Psg_{gm.embedder.space.name}"
        gone = [p for i in waiting for p in passage_ids(i, len(passages(_content(ids.index(i)))))]
        gm.cypher(
            f"UNWIND $ids AS i MATCH (p:{table} {{id: i}}) DELETE p", {"ids": gone}, write=True
        )
        gm.store.pending.put(PASSAGES, waiting)
        gm.store.meta_set(PASSAGES_PENDING, "1")  # what the old way needed to look at all
        return {"extraction": n - ids.index(cut), "passages": len(waiting)}


def read_once(home: str, which: str, embedding: str) -> dict[str, Any]:
    """Open the store, then time what a start reads to find its work ("new" or "old")."""
    from eval import embedding as embedding_spec
    from graphmem.embeddings.factory import make_embedder
    from graphmem.service import GraphMemory

    settings = load_settings(home, environ={}, overrides={"extract_on_write": False})
    embedder = make_embedder(embedding_spec.config(embedding))
    started = time.perf_counter()
    with GraphMemory(settings, embedder=embedder, extract_in_background=False) as gm:
        opened = time.perf_counter() - started
        gm.store.conn.read("MATCH (m:_Meta) RETURN count(*)")  # a pooled connection, made once
        reads: dict[str, Callable[[], int]] = (
            {work: partial(_count, gm.store.pending.items, work) for work in WORKS}
            if which == "new"
            else {
                EXTRACT: lambda: len(gm.store.conn.read(OLD_EXTRACTION_SCAN)),
                PASSAGES: lambda: len(gm.flagged_passages()),
                CHUNK_EXTRACT: lambda: len(
                    gm.store.conn.read("MATCH (c:Chunk) WHERE c.extracted_by IS NULL RETURN c.id")
                ),
            }
        )
        found, seconds = {}, {}
        for work, read in reads.items():
            started = time.perf_counter()
            found[work] = read()
            seconds[work] = round(time.perf_counter() - started, 4)
    return {
        "open_s": round(opened, 3),
        "read_s": round(sum(seconds.values()), 4),
        "read_s_by_work": seconds,
        "found": found,
    }


def _count(read: Callable[[str], list[str]], work: str) -> int:
    return len(read(work))


def _timed(home: Path, which: str, embedding: str) -> dict[str, Any]:
    shutil.rmtree(home / "search-cache", ignore_errors=True)  # as after a kill
    code = (
        "import json; from eval.bench_recovery import read_once; "
        f"print(json.dumps(read_once({str(home)!r}, {which!r}, {embedding!r})))"
    )
    env = {**os.environ, **environ(embedding)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=3600
    )
    if done.returncode != 0:
        raise RuntimeError(f"{which} read failed: {done.stderr[-800:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run_bench_recovery(n: int, embedding: str, *, runs: int = 3) -> dict[str, Any]:
    """Build the store in a temp dir, then time each read `runs` times (the median counts)."""
    with tempfile.TemporaryDirectory(prefix="graphmem-bench-recovery-") as tmp:
        home = Path(tmp) / "store"
        started = time.perf_counter()
        backlog = build(home, n, embedding)
        built = time.perf_counter() - started
        results = {
            which: [_timed(home, which, embedding) for _ in range(runs)] for which in ("new", "old")
        }
    new, old = (sorted(r, key=lambda x: x["read_s"])[runs // 2] for r in results.values())
    return {
        "benchmark": "recovery",
        "memories": n,
        "embedding": embedding,
        "backlog": backlog,
        "build_s": round(built, 1),
        "pending_table_read_s": new["read_s"],
        "old_scan_read_s": old["read_s"],
        "speedup": round(old["read_s"] / max(new["read_s"], 1e-6), 1),
        "pending_table_read_s_by_work": new["read_s_by_work"],
        "old_scan_read_s_by_work": old["read_s_by_work"],
        "open_s": new["open_s"],
        "found_new": new["found"],
        "found_old": old["found"],
        "runs": results,
    }
