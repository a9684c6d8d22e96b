"""The transaction surface of a store: one writer, transactions, after-commit hooks, a write
generation, and the change events the write path emits for the search state."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol, TypeVar

from graphmem.indexes.changes import Change

T = TypeVar("T")


class Transactions(Protocol):
    """Every method is safe to call from several threads. Writes are serialised behind one
    writer; reads run beside it and never see a transaction that has not committed, except the
    reads of the thread that holds it."""

    @property
    def reads_own_writes(self) -> bool:
        """Whether a transaction's reads see its own writes: yes on the embedded engines; no on
        a server store, whose transaction is one query sent at its end (there, a read after a
        buffered write raises StorageError)."""
        ...

    @property
    def write_generation(self) -> int:
        """Bumped by every commit, so a cache of reads knows it is stale."""
        ...

    def transaction(self, *, read_only: bool = False) -> AbstractContextManager[None]:
        """Begin a transaction; commit when the block ends, roll back when it raises. Nested
        use joins the outer one (so a repository method that writes in a transaction of its
        own joins the caller's). After the commit the after-commit hooks run and the write
        generation moves; after a rollback the search state drops what it took in."""
        ...

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run `callback` once this thread's transaction commits; at once outside of one. A
        rollback drops it."""
        ...

    def emit(self, change: Change) -> None:
        """Say what a write changed, in the transaction that writes it (graphmem.indexes.
        changes): the search state takes it in now or at commit. Every change but an entity
        change or a new vector set also moves the content stamp the search cache is saved for,
        with the transaction. An `EntityChange` counts only inside `described_entity_writes`."""
        ...

    def described_entity_writes(self) -> AbstractContextManager[None]:
        """A transaction whose writes to the entity graph are the `EntityChange`s emitted in
        it; emitting none says they are not described, and the entity index that meets the
        commit reads the graph again."""
        ...

    def until_write(self, name: str, compute: Callable[[], T], *also: Hashable) -> T:
        """`compute()`, kept under `name` until the next write (or until `also` changes): for
        answers every query asks for that only a write can change."""
        ...

    def background(self) -> AbstractContextManager[None]:
        """The reads and transactions of this thread meanwhile use one core, leaving the
        others to the recalls an agent waits for."""
        ...

    def writer_paused(self) -> AbstractContextManager[None]:
        """Hold the writer: no write starts or commits meanwhile; reads go on."""
        ...

    def exclusive(self, work: str, *, wait: float = 0.0) -> AbstractContextManager[bool]:
        """Whether this process is the one doing `work` for the whole store until the block
        ends (background work that must not run twice at once: extraction, the steward).
        Always on an embedded store, which one process serves; on a server store, the node
        that takes the work's lease (waiting up to `wait` s for another node to let it go)."""
        ...

    def checkpoint(self) -> None:
        """Write everything committed into the database file (not inside a transaction)."""
        ...


def transaction_reading_its_writes(store: Transactions) -> AbstractContextManager[None]:
    """One transaction for a flow that reads between its writes (a session's close stores, then
    reads what it stored): all or nothing where the engine's transactions read their own
    writes; elsewhere each step commits on its own, in order."""
    return store.transaction() if store.reads_own_writes else nullcontext()
