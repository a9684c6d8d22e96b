"""Typed questions about memories that the domain asks the store (the knowledge bank's views, a
session's last checkpoint). Each engine translates a selection into its own query language, so
no Cypher, nor any other dialect, is written outside graphmem/storage/."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import get_args

from graphmem.models import Lifecycle

LIVE: tuple[str, ...] = ("active", "canonical")
NOT_ARCHIVED: tuple[str, ...] = tuple(s for s in get_args(Lifecycle) if s != "archived")


@dataclass(frozen=True)
class Mentions:
    """A memory that carries one of `tags` (exact spelling), or whose title or content holds one
    of `words` (in any case, anywhere: "migrat" finds "Migrating" and "immigration")."""

    tags: tuple[str, ...] = ()
    words: tuple[str, ...] = ()


@dataclass(frozen=True)
class DueForReview:
    """A memory whose last check failed or asked for an update, or that is canonical or at least
    `min_importance` important and was not verified since `before`."""

    before: datetime
    min_importance: float = 0.7


@dataclass(frozen=True)
class MemorySelection:
    """Memories that meet every condition given; None leaves a field free. Archived memories
    are in unless `lifecycles` leaves them out. The store returns them newest first."""

    kinds: tuple[str, ...] | None = None
    lifecycles: tuple[str, ...] | None = None
    context: str | None = None
    session_id: str | None = None
    mentions: Mentions | None = None
    due_for_review: DueForReview | None = None
