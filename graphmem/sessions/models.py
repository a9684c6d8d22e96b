"""What closing a session plans and does, and the review queue's items, at every boundary."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from graphmem.models import Model, UtcDateTime

SessionMode = Literal["coding", "incident", "migration", "research", "cleanup"]
SESSION_MODES: tuple[str, ...] = SessionMode.__args__  # type: ignore[attr-defined]
StatementKind = Literal[
    "decision", "dead_end", "incident", "runbook_step", "caveat", "migration_note", "fact", "todo"
]
ActionKind = Literal["new", "update", "merge_into", "supersede", "promote", "raw_only"]
Risk = Literal["auto", "soft", "hard"]
ReviewStatus = Literal["pending", "accepted", "rejected", "deferred"]
Resolution = Literal["accept", "reject", "defer"]


class PlannedAction(Model):
    """What closing a session would do with one statement of its summary."""

    statement: str
    statement_kind: StatementKind
    action: ActionKind
    target: str | None = Field(
        default=None, description="the memory it would update, merge into, supersede or promote"
    )
    target_excerpt: str | None = Field(default=None, description="the start of the target's text")
    confidence: float = Field(ge=0.0, le=1.0)
    risk: Risk = Field(
        description="auto: may apply without review in this mode; soft: a quick look; hard: a "
        "careful one"
    )
    rationale: str = Field(description="one line: why this action")
    applied: bool = Field(default=False, description="applied when the session was closed")
    memory_id: str | None = Field(default=None, description="the memory it stored or changed")
    review_item: str | None = Field(default=None, description="the review item it became")


class SessionPlan(Model):
    session_id: str
    mode: SessionMode
    mode_inferred: bool = Field(description="the mode came from the summary's words")
    context: str | None = None
    service: str | None = None
    dry_run: bool
    actions: list[PlannedAction]
    summary_id: str | None = Field(
        default=None, description="the summary kept as the session's own memory (not in dry run)"
    )
    skipped: int = Field(default=0, description="statements whose same change was resolved before")


class ReviewItem(Model):
    id: str
    session: str | None = None
    action: ActionKind
    statement_kind: StatementKind
    statement: str
    target: str | None = None
    risk: Risk
    confidence: float
    rationale: str
    status: ReviewStatus
    note: str | None = None
    created_at: UtcDateTime
    resolved_at: UtcDateTime | None = None
    resolved_by: str | None = None


class ReviewQueue(Model):
    items: list[ReviewItem]
    pending: int = Field(description="pending items in the whole queue, not only these")


class ResolveReport(Model):
    """What resolving review items did: the items, and what changed in the store."""

    resolved: list[ReviewItem] = Field(default_factory=list)
    memories: list[str] = Field(
        default_factory=list, description="memories stored or changed by accepted items"
    )
    failed: list[dict[str, Any]] = Field(
        default_factory=list, description="items that could not be applied: {item, error}"
    )
    dry_run: bool = False
