"""PassageWork, the service of GraphMemory that embeds the passages an import leaves to a
background worker (graphmem.passages): each such memory waits as a `passages` row of the Pending
table (graphmem.storage.protocols.pending), written with the memory and deleted in the transaction that
writes its passages, so a start after any exit reads exactly which are left."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from functools import partial

import numpy as np
from numpy.typing import NDArray

from graphmem.embeddings.parallel import single_threaded_blas
from graphmem.foreground import FOREGROUND, lower_priority
from graphmem.jobs import EXCLUSIVE_WAIT, Jobs
from graphmem.passages import owner, passages, passages_of
from graphmem.service_context import Service, ServiceContext
from graphmem.storage.protocols import PASSAGES

Progress = Callable[[int, int], None]
log = logging.getLogger("graphmem")
# _Meta key of stores from before the Pending table: "1" while an import's passages waited for
# the worker. The owner's first start finds those passages the old way, once, and records them.
PASSAGES_PENDING = "passages_pending"
IMPORT_BATCH = 2048  # memories to embed per import transaction
# memories per transaction of the passage worker: their passages are written through Kùzu's log
# (a COPY's rows can be lost in a crash while the deletion of their Pending rows comes back)
WORKER_BATCH = 256
PAUSE_SLICE = 32  # passages the worker embeds between two pauses for requests


class PassageWork(Service):
    def __init__(self, context: ServiceContext, *, background: bool) -> None:
        """`background`: an import leaves its passages to a worker thread (`jobs`), else it
        embeds them before it returns."""
        super().__init__(context)
        self.jobs = Jobs("graphmem-passages", initializer=lower_priority) if background else None

    def stop(self) -> None:
        if self.jobs is not None:
            self.jobs.stop()

    def missing_passages(self, memory_ids: Iterable[str] | None = None) -> Sequence[str]:
        """Those of the memories (every one, when None) that have a vector in the active space
        but no passages there; a memory of one sentence is among them too."""
        space = self.embedder.space
        have = set(self.store.vectors.ids(space))
        wanted = have if memory_ids is None else have.intersection(memory_ids)
        return sorted(wanted - self.store.vectors.passage_owners(space))

    def fill_passages(
        self,
        todo: Sequence[str],
        *,
        batch_size: int = 128,
        pending_only: bool = False,
        on_progress: Progress | None = None,
        pause: Callable[[], None] | None = None,
    ) -> int:
        """Embed the passages of the memories (one transaction per batch); returns how many
        got some. With `pending_only`, only those still waiting in the Pending table, checked
        again inside the transaction: an update or an earlier job may have given them theirs
        meanwhile. A worker's run stops between batches when the store closes: the rest wait
        for the next start. With `pause` (the worker), it embeds `PAUSE_SLICE` passages at a
        time and calls `pause` between them."""
        space = self.embedder.space
        stopping = self.jobs.stopping if self.jobs is not None else None
        given = 0
        for start in range(0, len(todo), batch_size):
            if stopping is not None and stopping.is_set():
                break
            batch = todo[start : start + batch_size]
            ids = self.store.pending.among(PASSAGES, batch) if pending_only else batch
            memories = self.store.memories.get_many(ids)
            found, pieces = passages_of(memories[i] for i in ids if i in memories)
            if pieces or (pending_only and ids):  # those with none are done too
                vectors = self._embed_pieces(pieces, pause) if pieces else None
                with self.store.transaction():
                    done = [i for i in ids if i in memories]
                    if pending_only:  # still waiting, and read; absent ones only if still so
                        live = set(self.store.pending.among(PASSAGES, ids))
                        done = [i for i in done if i in live]
                        self.store.memories.finish_absent(
                            PASSAGES, [i for i in live if i not in memories]
                        )
                    if vectors is not None:
                        chosen = set(done)
                        keep = [k for k, p in enumerate(found) if owner(p) in chosen]
                        found = [found[k] for k in keep]
                        self.store.vectors.put_passages(space, found, vectors[keep], bulk=False)
                    self.store.pending.finish(PASSAGES, done)
                given += len({owner(i) for i in found})
            if on_progress:
                on_progress(start + len(batch), len(todo))
        return given

    def _embed_pieces(
        self, pieces: list[str], pause: Callable[[], None] | None
    ) -> NDArray[np.float32]:
        if pause is None:
            return self.embedder.embed(pieces)
        parts = []
        for start in range(0, len(pieces), PAUSE_SLICE):
            pause()
            parts.append(self.embedder.embed(pieces[start : start + PAUSE_SLICE]))
        return np.concatenate(parts)

    def passages_later(self, memory_ids: Sequence[str] | None) -> None:
        """The worker's job: the passages of the memories, or (None) of every memory waiting
        for them, as the owner asks at start. It steps aside for requests
        (graphmem/foreground.py), on one core."""
        try:
            # one process fills passages at a time: two nodes of a server store never embed
            # one memory's at once (a batch is read as pending under the lease)
            with (
                single_threaded_blas(),
                self.store.background(),
                self.store.exclusive("passages", wait=EXCLUSIVE_WAIT) as mine,
            ):
                if not mine:
                    return
                if memory_ids is None:
                    self._adopt_flagged_passages()
                    memory_ids = self.store.pending.items(PASSAGES)
                self.fill_passages(
                    memory_ids,
                    batch_size=WORKER_BATCH,
                    pending_only=True,
                    pause=FOREGROUND.step_aside,
                )
        except Exception:  # the rows stay: the next start embeds what is left
            log.exception("background passages failed")

    def _adopt_flagged_passages(self) -> int:
        """A store from before the Pending table flagged an import's unfinished passages: find
        them the old way (every memory without passages, its content split into sentences),
        once, and record them as pending; returns how many."""
        if not self.store.meta_get(PASSAGES_PENDING):
            return 0
        waiting = self.flagged_passages()
        with self.store.transaction():
            self.store.pending.put(PASSAGES, waiting)
            self.store.meta_set(PASSAGES_PENDING, "")
        return len(waiting)

    def flagged_passages(self, batch_size: int = IMPORT_BATCH) -> list[str]:
        """The old way to find passages left to embed: memories with a vector but no passages
        in the active space whose content has several sentences. It reads every such memory,
        most of which have one sentence: minutes at a million memories."""
        todo = self.missing_passages()
        waiting: list[str] = []
        for start in range(0, len(todo), batch_size):
            memories = self.store.memories.get_many(todo[start : start + batch_size])
            waiting += [i for i, m in memories.items() if passages(m.content)]
        return sorted(waiting)

    def schedule_pending_passages(self) -> bool:
        """Queue the passages still waiting (the owner does at start, beside extraction's);
        True if there were any."""
        jobs = self.jobs
        if jobs is None:
            return False
        if not self.store.pending.items(PASSAGES, limit=1) and not self.store.meta_get(
            PASSAGES_PENDING
        ):
            return False
        jobs.submit(partial(self.passages_later, None))
        return True

    def wait_for_passages(self, timeout: float | None = None) -> bool:
        """Block until the passages an import left to the worker are embedded; False when
        `timeout` ran out first."""
        return self.jobs.wait(timeout) if self.jobs is not None else True
