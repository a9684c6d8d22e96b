"""Which commits changed the entity graph, and what the writers said they changed, so that the
in-process entity index (indexes/entity_index.py) knows when it is stale and can take a change
in instead of reading the whole graph again.

Every write to the graph says so (`changing`, called by the store's writers of mentions, facts
and where they came from, entities and their aliases, versions, and memories deleted with their
edges; a test holds each writer to it). Inside `describing`, the writer also says what it
changes (`describe` an `EntityChange`, the change event of the entity graph); a change outside
it, or a describing block that says nothing, makes the commit's change unknown. A caller's own
query that writes is an unknown change. `begun` runs ahead of `generation` while such a commit
runs: what it changes is visible to readers before the generation says so, and a read of the
graph taken meanwhile cannot tell which changes it holds.

It knows no engine: the store's connection keeps one, under its writer's lock.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

KEPT = 64  # commits whose changes are kept


class EntityLog:
    """Kept by one connection, under its writer's lock."""

    def __init__(self) -> None:
        self.generation = 0  # commits that changed the entity graph
        self.begun = 0  # such commits begun
        self.changes: dict[int, tuple[Any, ...] | None] = {}  # generation -> what changed
        self._changed = False  # in this transaction
        self._described: list[Any] | None = []  # this transaction's changes, None: unknown
        self._said: list[Any] | None = None  # what the open describing block said

    def changing(self) -> None:
        """The next statements change the entity graph."""
        self._changed = True
        if self._said is None:
            self._described = None

    def statement(self, *, commits: bool) -> None:
        """A statement is about to run; `commits`: outside a transaction (or the COMMIT)."""
        if commits and self._changed:
            self.begun += 1

    def unknown_commit(self) -> None:
        """A commit that may change anything (a caller's Cypher) is about to run."""
        self._changed, self._described = True, None
        self.begun += 1

    def committed(self) -> None:
        if self._changed:
            self._changed = False
            described = self._described
            self.changes[self.generation + 1] = tuple(described) if described is not None else None
            self.changes.pop(self.generation + 1 - KEPT, None)
            self.generation += 1
        while self.generation < self.begun:  # a commit that failed: what it did is unknown
            self.generation += 1
            self.changes[self.generation] = None
        self._described = []

    def this_transaction(self) -> tuple[bool, tuple[Any, ...] | None]:
        """Whether the open transaction changes the entity graph, and what it said it changes
        (None: unknown): what a server store's commit tells the other nodes."""
        described = self._described
        return self._changed, tuple(described) if described is not None else None

    def committed_elsewhere(self, changes: tuple[Any, ...] | None) -> None:
        """Another process's commit changed the entity graph (a node of a server store), as
        it said (`changes`, None: unknown)."""
        self.begun += 1
        self.changes[self.generation + 1] = changes
        self.changes.pop(self.generation + 1 - KEPT, None)
        self.generation += 1

    def rolled_back(self) -> None:
        self._changed, self._described = False, []

    def describe(self, change: Any) -> None:
        """Inside `describing`: one thing its writes change. Outside, the change stays unknown."""
        if self._said is not None:
            self._said.append(change)

    def between(self, after: int, upto: int) -> list[Any] | None:
        """What the commits after generation `after` up to `upto` changed, or None when one
        of them is not known."""
        found = [self.changes.get(g) for g in range(after + 1, upto + 1)]
        if any(changes is None for changes in found):
            return None
        return [change for changes in found if changes for change in changes]

    @contextmanager
    def describing(self) -> Iterator[list[Any]]:
        """Writes inside are what the caller says (`describe`, or appends to the yielded list)."""
        said: list[Any] = []
        self._said = said
        try:
            yield said
        finally:
            self._said = None
        if not said:
            self._described = None
        elif self._described is not None:
            self._described += said
