"""Knowledge over time: versions (supersession chains), merges, dead ends a decision avoids,
citations of files and documents, verification."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from graphmem.models import Memory

# a version: the memory, what replaced it, when, and why
Version = tuple[Memory, str | None, datetime | None, str | None]


class Knowledge(Protocol):
    def supersede(self, old_id: str, *, reason: str, new_id: str | None, at: datetime) -> None:
        """Close the old memory's validity (at the successor's valid_from, else `at`) and mark
        it superseded, or outdated when there is no new one; link new -> old. NotFound for a
        missing memory; InvalidInput for itself; Conflict when the old one is superseded
        already, or the new one is an older version of it."""
        ...

    def merge_into(
        self, primary: str, duplicates: Sequence[str], *, reason: str | None, at: datetime
    ) -> None:
        """Archive the duplicates, each linked to the primary, their validity closed at `at`.
        NotFound for a missing memory; InvalidInput for no duplicates or the primary among
        them."""
        ...

    def check_dead_ends(self, ids: Sequence[str]) -> None:
        """NotFound for a missing memory, InvalidInput for one that is not a dead end."""
        ...

    def link_avoids(self, decision_id: str, dead_end_ids: Sequence[str], *, at: datetime) -> None:
        """The decision avoids these dead ends (checked as `check_dead_ends`)."""
        ...

    def newest_successors(self, ids: Sequence[str]) -> dict[str, str]:
        """For each superseded id, the newest version at the end of its chain."""
        ...

    def chain(self, memory_id: str) -> list[Version]:
        """Every version linked to the memory by supersession, itself included, each with
        what replaced it; NotFound when it is not there."""
        ...

    def linked_memories(self, memory_id: str) -> list[tuple[str, str, Any, str, str, str]]:
        """(relation, id, title, content, kind, lifecycle) of the memories one link away:
        versions, merges and dead ends, each relation read from this memory's side
        (supersedes / superseded_by, merged_into / merged_from, avoids / avoided_by)."""
        ...

    def avoided_by(self, dead_end_ids: Sequence[str]) -> dict[str, list[str]]:
        """dead end -> the decisions that avoid it."""
        ...

    def dead_ends_near(self, memories: Sequence[Memory], *, limit: int) -> list[Memory]:
        """Live dead ends that share a context, service or tag with the memories, or that a
        decision among them avoids."""
        ...

    def dead_end_ids(self) -> list[str]:
        """Every dead end not archived, sorted; cached until the next write."""
        ...

    def set_fields(self, memory_id: str, values: dict[str, Any]) -> None:
        """Set knowledge fields (lifecycle, lifecycle_reason, owner, importance, verified_at,
        verify_status, verify_method, verify_note, updated_at) of one memory; InvalidInput for
        another field, NotFound when it is not there."""
        ...

    def cite(
        self, memory_id: str, path: str, *, section: str | None, sha256: str | None, at: datetime
    ) -> None:
        """The memory cites the file at `path` (made a document when the store has none)."""
        ...

    def citations(
        self, memory_id: str | None = None
    ) -> list[tuple[str, str | None, str, str | None]]:
        """(memory id, title, path, sha256 recorded) of every citation of live memories, or
        one memory's, by memory and path."""
        ...

    def record_citation_hashes(
        self, memory_id: str, hashes: dict[str, str | None], *, at: datetime
    ) -> None:
        """The hashes the memory's cited files had when it was verified."""
        ...

    def verification_due(
        self, *, before: datetime, min_importance: float, limit: int
    ) -> list[Memory]:
        """Live memories, canonical or at least `min_importance`, not verified since `before`:
        never verified first, then the oldest checks."""
        ...
