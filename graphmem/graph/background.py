"""Extraction on write: one worker thread per store that extracts entities and facts from
memories after they are written, never on the write's own path.

A memory waits as an `extract` row of the Pending table (graphmem.storage.protocols.pending), written with
the memory and deleted in the transaction that writes its entities (which also sets
`extracted_by`), so work cut short by any exit is read back exactly at the next owner start.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from functools import partial
from typing import TYPE_CHECKING, Any

from graphmem.foreground import FOREGROUND, lower_priority
from graphmem.jobs import EXCLUSIVE_WAIT, Jobs

if TYPE_CHECKING:
    from graphmem.extractors import Extractor
    from graphmem.graph.indexer import EmbedNames, TripleIndexer
    from graphmem.settings import Settings
    from graphmem.storage.protocols import Store

log = logging.getLogger("graphmem.graph")
BATCH = 64  # memories per background job

_EXTRACTORS: dict[tuple[Any, ...], Extractor] = {}
_EXTRACTORS_LOCK = threading.Lock()


def shared_extractor(settings: Settings) -> Extractor:
    """One extractor per configuration and process, however many stores use it: loading
    spaCy costs about a second and a hundred megabytes."""
    from graphmem.extractors import get_extractor

    secret = settings.extractor_api_key
    options = (
        settings.extractor,
        settings.extractor_model,
        settings.extractor_url,
        secret.get_secret_value() if secret else None,
        settings.extractor_timeout,
    )
    with _EXTRACTORS_LOCK:
        if options not in _EXTRACTORS:
            name, model, url, key, timeout = options
            _EXTRACTORS[options] = get_extractor(
                name, model=model, url=url, api_key=key, timeout=timeout
            )
        return _EXTRACTORS[options]


class Extraction:
    """The store's triple indexer, built on first use, and its background worker."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        embed_names: EmbedNames,
        *,
        background: bool,
    ) -> None:
        self.store = store
        self.settings = settings
        self.embed_names = embed_names
        self.background = background and settings.extract_on_write
        self._lock = threading.Lock()
        self._indexer: TripleIndexer | None = None
        self._jobs = Jobs("graphmem-extract", initializer=lower_priority)
        # run before each batch is resolved: GraphMemory applies the glossary when it changed
        self.before_batch: Callable[[], object] | None = None

    def indexer(self) -> TripleIndexer:
        with self._lock:
            if self._indexer is None:
                from graphmem.graph.indexer import TripleIndexer

                extractor = shared_extractor(self.settings)
                self._indexer = TripleIndexer(
                    self.store, extractor, self.embed_names, before_batch=self._before_batch
                )
            return self._indexer

    def _before_batch(self) -> None:
        if self.before_batch is not None:
            self.before_batch()

    def schedule(self, memory_ids: Sequence[str]) -> None:
        """Queue extraction once the memories are committed: a job that ran inside the writer's
        open transaction would not see them, and they would wait for the next start."""
        if self.background and memory_ids:
            job = partial(self._run, list(memory_ids))
            self.store.after_commit(lambda: self._jobs.submit(job))

    def schedule_pending(self) -> int:
        """Queue every memory still waiting for extraction, and the document chunks; returns
        how many memories (a read of the Pending table, however big the store)."""
        if not self.background:
            return 0
        ids = self.store.entities.pending_extraction_ids()
        for start in range(0, len(ids), BATCH):
            self.schedule(ids[start : start + BATCH])
        self.schedule_chunks()
        return len(ids)

    def schedule_chunks(self) -> None:
        """Queue the extraction of every document chunk still pending (after an index run)."""
        if self.background:
            self._jobs.submit(self._run_chunks)

    def _run_chunks(self) -> None:
        try:
            with self.store.background(), self._exclusive() as mine:
                while mine and (items := self.store.documents.pending_chunks(BATCH)):
                    self.indexer().index(items, chunks=True, pause=FOREGROUND.step_aside)
        except Exception:  # the chunks stay pending; the next run retries them
            log.exception("background extraction from document chunks failed")

    def _run(self, memory_ids: list[str]) -> None:
        """One batch, stepping aside for requests (graphmem/foreground.py): an owner that
        starts on a store of unextracted memories works through them while agents use it."""
        try:
            with self.store.background(), self._exclusive() as mine:
                items = self.store.entities.texts_for_extraction(memory_ids) if mine else []
                if items:
                    self.indexer().index(items, pause=FOREGROUND.step_aside)
        except Exception:  # the memories stay pending; the next start or a backfill retries
            log.exception("background extraction failed for %d memories", len(memory_ids))

    def _exclusive(self) -> AbstractContextManager[bool]:
        """One process extracts at a time, so that two nodes of a server store never extract
        one memory at once: a batch read as pending under the lease is done once."""
        return self.store.exclusive("extract", wait=EXCLUSIVE_WAIT)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until queued work is done; False when `timeout` ran out first."""
        return self._jobs.wait(timeout)

    def stop(self) -> None:
        """Let the running batch finish (it holds a transaction); queued ones stay pending."""
        self._jobs.stop()
