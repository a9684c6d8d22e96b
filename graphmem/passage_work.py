"""The passages an import leaves to a background worker (graphmem.passages): which memories
still lack them, filling them batch by batch, and the flag that tells the next start an import's
passages were cut short."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING

from graphmem.errors import GraphmemError
from graphmem.passages import owner, passages_of

if TYPE_CHECKING:
    from graphmem.embeddings.base import Embedder
    from graphmem.jobs import Jobs
    from graphmem.storage.store import KuzuStore

Progress = Callable[[int, int], None]
log = logging.getLogger("graphmem")
# _Meta key, "1" while an import's passages wait for the background worker; a start that finds
# it set (an exit cut the work short) embeds every memory's missing passages
PASSAGES_PENDING = "passages_pending"
IMPORT_BATCH = 2048  # memories to embed per import transaction


class PassageWork:
    if TYPE_CHECKING:
        store: KuzuStore
        _passage_jobs: Jobs | None
        _passages_failed: bool

        @property
        def embedder(self) -> Embedder: ...

    def _missing_passages(self, memory_ids: Iterable[str] | None = None) -> Sequence[str]:
        """Those of the memories (every one, when None) that have a vector in the active space
        but no passages there; a memory of one sentence is among them too."""
        space = self.embedder.space
        have = set(self.store.vector_ids(space))
        wanted = have if memory_ids is None else have.intersection(memory_ids)
        return sorted(wanted - self.store.passage_owners(space))

    def _fill_passages(
        self,
        todo: Sequence[str],
        *,
        batch_size: int = 128,
        on_progress: Progress | None = None,
    ) -> int:
        """Embed the passages of the memories (one transaction per batch); returns how many
        got some. A worker's run stops between batches when the store closes: the rest are
        found again at the next start."""
        space = self.embedder.space
        stopping = self._passage_jobs.stopping if self._passage_jobs is not None else None
        given = 0
        for start in range(0, len(todo), batch_size):
            if stopping is not None and stopping.is_set():
                break
            ids = todo[start : start + batch_size]
            memories = self.store.get_memories(ids)
            found, pieces = passages_of(memories[i] for i in ids if i in memories)
            if pieces:
                vectors = self.embedder.embed(pieces)
                with self.store.transaction():
                    self.store.put_passages(space, found, vectors)
                given += len({owner(i) for i in found})
            if on_progress:
                on_progress(start + len(ids), len(todo))
        return given

    def _passages_later(self, memory_ids: Sequence[str] | None) -> None:
        """The worker's job: the memories' passages, or (None) every memory's, after a start
        that found an import's passages unfinished."""
        try:
            # one transaction for an import's batch: each commit costs a checkpoint
            self._fill_passages(self._missing_passages(memory_ids), batch_size=IMPORT_BATCH)
        except Exception:  # the flag stays set: the next start embeds what is missing
            self._passages_failed = True
            log.exception("background passages failed")

    def _passages_done(self) -> None:
        """Clear the pending flag once no other passage work is queued; a failed or stopped
        run leaves it set."""
        jobs = self._passage_jobs
        if jobs is None or jobs.stopping.is_set() or self._passages_failed or jobs.queued() > 1:
            return
        with contextlib.suppress(GraphmemError):
            self.store.meta_set(PASSAGES_PENDING, "")

    def schedule_pending_passages(self) -> bool:
        """Queue the passages an import left unfinished (the owner does at start, beside
        extraction's); True if there were any."""
        jobs = self._passage_jobs
        if jobs is None or not self.store.meta_get(PASSAGES_PENDING):
            return False
        jobs.submit(partial(self._passages_later, None))
        jobs.submit(self._passages_done)
        return True

    def wait_for_passages(self, timeout: float | None = None) -> bool:
        """Block until the passages an import left to the worker are embedded; False when
        `timeout` ran out first."""
        return self._passage_jobs.wait(timeout) if self._passage_jobs is not None else True
