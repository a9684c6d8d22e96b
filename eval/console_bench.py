"""How long the console's pages take on a big store: the store's owner is started, the console is
served by uvicorn on loopback over a client of that owner (as `graphmem console` does), a client
signs in, and every page is fetched again and again over HTTP. The time is the whole request, as
a browser waits for it: the owner's work, the template and the socket.

`python -m eval console --store DIR` measures an existing store (its data dir); `--memories N`
builds one first from the steward benchmark's real text (eval/steward.py), in a temp folder.
"""

from __future__ import annotations

import base64
import json
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import httpx

from eval.bench import machine_ms
from eval.owner import served
from graphmem.console.app import FEED_PAGE
from graphmem.mcp.http import make_http_server

TOKEN = "console-bench-token"
TARGET_MS = 100  # every page, at 100k memories
PAD_BATCH = 10_000  # synthetic memories imported at once by `pad`


def _timings(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "n": len(ordered),
        "p50_ms": round(1000 * statistics.median(ordered), 1),
        "p95_ms": round(1000 * ordered[min(int(0.95 * len(ordered)), len(ordered) - 1)], 1),
        "max_ms": round(1000 * ordered[-1], 1),
    }


def _pages(remote: Any, rng: random.Random, rounds: int) -> dict[str, list[str]]:
    """Page -> the URLs to fetch: queries from stored text, memories picked at random."""
    ids = [r[0] for r in remote.cypher("MATCH (m:Memory) RETURN m.id LIMIT 20000").rows]
    texts = [
        r[0]
        for r in remote.cypher(
            "MATCH (m:Memory) WHERE m.id IN $ids RETURN m.content",
            {"ids": rng.sample(ids, min(len(ids), rounds))},
        ).rows
    ]
    queries = [" ".join(t.split()[:6]) for t in texts]
    docs = [r[0] for r in remote.cypher("MATCH (d:Document) RETURN d.path LIMIT 200").rows]
    # entities with facts, the busiest first: their pages and pictures are the biggest
    entities = [
        r[0]
        for r in remote.cypher(
            "MATCH (f:Fact)-[:SUBJECT]->(e:Entity) RETURN e.id, count(f) AS n "
            "ORDER BY n DESC LIMIT 200"
        ).rows
    ]
    kinds = [r[0] for r in remote.cypher("MATCH (m:Memory) RETURN DISTINCT m.kind LIMIT 20").rows]

    def search(**args: str) -> list[str]:
        return [f"/search?{urlencode({'q': q, **args})}" for q in queries]

    pages = {
        "search": search(),
        "search_filtered": search(lifecycle="active", layer="surface"),
        "search_compare": search(compare="bm25"),
        "search_docs_and_memories": search(scope="all"),
        "memory": [f"/memory/{quote(i)}" for i in rng.sample(ids, min(len(ids), rounds))],
        "multihop": [f"/multihop?{urlencode({'q': q})}" for q in queries],
        "inbox": ["/inbox"] * rounds,
        "documents": ["/documents"] * rounds,
        "stats": ["/stats"] * rounds,
    }
    if docs:
        pages["document"] = [f"/document?{urlencode({'path': rng.choice(docs)})}"] * rounds
    pages |= {
        "feed": ["/feed"] * rounds,
        "feed_filtered": [f"/feed?{urlencode({'kind': rng.choice(kinds)})}" for _ in range(rounds)],
        "feed_deep": _feed_pages(remote, rounds),
        "inbox_deferred": ["/inbox?show=deferred"] * rounds,
        "audit": ["/audit"] * rounds,
    }
    if entities:
        picked = [rng.choice(entities) for _ in range(rounds)]
        pages["entity"] = [f"/entity/{quote(e)}" for e in picked]
        pages["entity_expanded"] = [
            f"/entity/{quote(e)}?{urlencode({'expand': _neighbours(remote, e)}, doseq=True)}"
            for e in picked
        ]
    return pages


def _feed_pages(remote: Any, rounds: int) -> list[str]:
    """The feed's pages one after another, as a person pages back: the tenth page down."""
    urls, cursor = [], None
    for _ in range(rounds):
        urls.append(f"/feed?{urlencode({'cursor': cursor})}" if cursor else "/feed")
        cursor = remote.feed(limit=FEED_PAGE, cursor=cursor).next_cursor  # None: start again
    return urls


def _neighbours(remote: Any, entity_id: str) -> list[str]:
    """Up to three entities an entity has facts with: what a person expands first."""
    page = remote.entity_page(entity_id)
    others = {f.object_id if f.subject_id == entity_id else f.subject_id for f in page.facts}
    return sorted(o for o in others if o and o != entity_id)[:3]


def run_console_bench(home: Path, embedding: str, *, rounds: int = 30, seed: int = 0) -> dict:
    """Per page: p50, p95 and max milliseconds of `rounds` requests, after a warm-up round."""
    machine_start = machine_ms()
    with served(home, embedding) as remote:
        memories = remote.stats().total
        server = make_http_server(remote, "127.0.0.1", 0, token=TOKEN, log_level="warning")
        pages = _pages(remote, random.Random(seed), rounds)
        results: dict[str, Any] = {}
        with (
            running(server) as base,
            httpx.Client(base_url=f"{base}/console", timeout=120) as client,
        ):
            client.post("/login", data={"token": TOKEN})
            for name, urls in pages.items():
                for url in urls[:3]:
                    _timed(client, url)  # warm: columns read, caches filled
                results[name] = _timings([_timed(client, url) for url in urls])
    worst = max(r["p95_ms"] for r in results.values())
    return {
        "benchmark": "console",
        "machine_ms": {"start": machine_start, "end": machine_ms()},
        "store": str(home),
        "memories": memories,
        "embedding": embedding,
        "rounds": rounds,
        "pages": results,
        "worst_p95_ms": worst,
        "target_ms": TARGET_MS,
        "meets_target": worst <= TARGET_MS,
    }


@contextmanager
def running(server: Any) -> Iterator[str]:
    """The uvicorn server in a thread until the block ends; yields http://127.0.0.1:PORT."""
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.05)
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)


def _timed(client: httpx.Client, url: str) -> float:
    started = time.perf_counter()
    response = client.get(url)
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"{url}: HTTP {response.status_code}: {response.text[:300]}")
    return elapsed


def build_store(
    bench: Path, memories: int, embedding: str, progress: Callable[[str], None]
) -> Path:
    """A store from the steward benchmark's real text, every memory extracted."""
    from eval.embedding import config
    from eval.steward import build, generate
    from graphmem import open_store
    from graphmem.embeddings.factory import make_embedder

    folder = Path(tempfile.mkdtemp(prefix="console-bench-"))
    corpus = generate(bench, memories, rate=0.1, seed=0)
    with open_store(
        folder / ".graphmem", embedder=make_embedder(config(embedding)), extract_on_write=False
    ) as gm:
        build(gm, corpus, progress)
        gm.steward_run("all", dry_run=False)  # an inbox to show
    return folder / ".graphmem"


def pad(home: Path, memories: int, embedding: str, progress: Callable[[str], None]) -> None:
    """Fill the store to `memories` with the speed benchmark's synthetic notes, each bringing
    the vector of a memory already stored (so none is embedded) and none extracted."""
    from eval.bench import synthetic_memories
    from eval.embedding import config
    from graphmem import open_store
    from graphmem.embeddings.factory import make_embedder

    embedder = make_embedder(config(embedding))
    with open_store(home, embedder=embedder, extract_on_write=False) as gm:
        missing = memories - gm.stats().total
        if missing <= 0:
            return
        _, matrix = gm.store.vectors.matrix(embedder.space)
        vectors = [base64.b64encode(row.astype("<f4").tobytes()).decode() for row in matrix[:5000]]
        notes = synthetic_memories(missing, seed=3)
        for first in range(0, missing, PAD_BATCH):
            lines = [
                json.dumps(
                    {**note, "vector": vectors[(first + k) % len(vectors)],
                     "embedding_space": embedder.space.label}
                )
                for k, note in enumerate(notes[first : first + PAD_BATCH])
            ]  # fmt: skip
            gm.import_jsonl(lines)
            progress(f"padded {min(first + PAD_BATCH, missing):,} / {missing:,}")
