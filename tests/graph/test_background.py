"""The background workers (extraction, an import's passages) work through a backlog beside
requests: in small slices with a look at the requests in flight before each, on a thread of
lower priority, and with nothing left undone."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphmem import passage_work
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.foreground import BACKGROUND_NICE
from graphmem.graph import background, indexer
from graphmem.service import GraphMemory, open_store
from graphmem.settings import load_settings
from graphmem.storage.protocols import EXTRACT, PASSAGES


class Events:
    """What the worker did, in order: its looks at the requests and its slices of work, each
    with the niceness of the thread that did it."""

    def __init__(self) -> None:
        self.log: list[tuple[str, int, int]] = []  # (event, items, niceness)

    def add(self, event: str, items: int = 0) -> None:
        nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        self.log.append((event, items, nice))

    def step_aside(self) -> None:
        self.add("pause")

    def slices(self) -> list[int]:
        return [items for event, items, _ in self.log if event == "work"]


def _each_slice_follows_a_pause(events: Events) -> bool:
    log = events.log
    return all(i > 0 and log[i - 1][0] == "pause" for i, e in enumerate(log) if e[0] == "work")


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> Events:
    recorded = Events()
    monkeypatch.setattr(background, "FOREGROUND", recorded)
    monkeypatch.setattr(passage_work, "FOREGROUND", recorded)
    return recorded


def test_extraction_of_a_backlog_looks_at_the_requests_between_small_slices(
    tmp_path: Path, events: Events
) -> None:
    path = tmp_path / "store"
    contents = [f"The checkout-service {i} depends on Redis for carts." for i in range(30)]
    settings = load_settings(path, environ={}, overrides={"extract_on_write": True})
    with GraphMemory(settings, embedder=HashEmbedder(), extract_in_background=False) as oneshot:
        oneshot.remember_many([{"content": c} for c in contents])  # left for later

    with GraphMemory(settings, embedder=HashEmbedder()) as gm:
        extractor = gm._context.extraction.indexer().extractor

        class Recorded:
            name = extractor.name

            def extract(self, texts: Sequence[str]) -> Any:
                events.add("work", len(texts))
                return extractor.extract(texts)

        gm._context.extraction.indexer().extractor = Recorded()  # type: ignore[assignment]
        assert gm.schedule_pending_extraction() == 30
        assert gm.wait_for_extraction(timeout=60)

        assert gm.store.pending.counts()[EXTRACT] == 0
        assert "redis" in {e.name.lower() for e in gm.list_entities(limit=50).entities}
    assert sum(events.slices()) == 30
    assert max(events.slices()) <= indexer.PAUSE_SLICE
    assert _each_slice_follows_a_pause(events)
    assert {nice for _, _, nice in events.log} == {BACKGROUND_NICE}


def test_the_passage_worker_embeds_in_slices_with_a_look_at_the_requests_before_each(
    tmp_path: Path, events: Events
) -> None:
    notes = [
        {"content": f"Service {i} timed out. The pool was too small. We raised it to {i}."}
        for i in range(20)
    ]
    embedder = HashEmbedder()
    embed = embedder.embed

    def recorded(texts: Sequence[str]) -> np.ndarray:
        if threading.current_thread().name.startswith("graphmem-passages"):
            events.add("work", len(texts))
        return embed(texts)

    embedder.embed = recorded  # type: ignore[method-assign]
    with open_store(tmp_path / "store", embedder=embedder) as gm:
        assert gm.import_jsonl([json.dumps(n) for n in notes]).passages_pending == 20
        assert gm.wait_for_passages(timeout=60)

        assert gm.store.pending.items(PASSAGES) == []
        assert len(gm.store.vectors.passage_owners(embedder.space)) == 20
    assert sum(events.slices()) == 60  # three sentences a note
    assert max(events.slices()) <= passage_work.PAUSE_SLICE
    assert _each_slice_follows_a_pause(events)
    assert {nice for _, _, nice in events.log} == {BACKGROUND_NICE}
