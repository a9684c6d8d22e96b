"""Models of knowledge over time: engineering records, timelines, verification and drift."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, field_validator

from graphmem.models import MAX_CONTENT_CHARS, Memory, MemoryPage, Model, UtcDateTime

DecisionStatus = Literal["proposed", "accepted", "rejected", "deprecated"]
Severity = Literal["sev1", "sev2", "sev3", "sev4"]
VerifyStatus = Literal["verified", "failed", "needs_update"]
BankViewName = Literal[
    "decisions", "runbooks", "incidents", "caveats", "migrations", "dead_ends",
    "canonical_overview", "review_queue",
]  # fmt: skip
BANK_VIEWS: tuple[str, ...] = BankViewName.__args__  # type: ignore[attr-defined]

_Text = Field(min_length=1, max_length=MAX_CONTENT_CHARS)


class _Record(Model):
    """Fields every engineering record shares with a plain memory."""

    model_config = ConfigDict(extra="forbid")

    title: str | None = Field(default=None, max_length=500)
    tags: list[str] = Field(default_factory=list)
    context: str | None = None
    service: str | None = None
    importance: float = Field(default=0.6, ge=0.0, le=1.0)
    created_at: UtcDateTime | None = Field(
        default=None, description="when it happened or was decided"
    )
    # how a retried store is found again (graphmem.idempotency); not part of the record
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)
    client_session: str | None = Field(default=None, max_length=200)

    @field_validator("*", mode="before")
    @classmethod
    def _strip(cls, value: object) -> object:
        return value.strip() if isinstance(value, str) else value


class DecisionRecord(_Record):
    decision: str = _Text
    rationale: str = _Text
    consequences: str | None = None
    status: DecisionStatus = "accepted"
    avoids: list[str] = Field(
        default_factory=list, description="ids of dead ends it steers clear of"
    )


class DeadEndRecord(_Record):
    attempted_approach: str = _Text
    why_failed: str = _Text
    alternative: str | None = None


class IncidentRecord(_Record):
    summary: str = _Text
    impact: str | None = None
    root_cause: str | None = None
    resolution: str | None = None
    severity: Severity | None = None
    occurred_at: UtcDateTime | None = None


class RunbookRecord(_Record):
    trigger: str = _Text
    steps: list[str] = Field(min_length=1)

    @field_validator("steps")
    @classmethod
    def _steps_not_blank(cls, steps: list[str]) -> list[str]:
        cleaned = [s.strip() for s in steps]
        if not all(cleaned):
            raise ValueError("every step needs text")
        return cleaned

    verification: str | None = None
    rollback: str | None = None
    cites: list[str] = Field(
        default_factory=list, description="files or docs the runbook relies on"
    )


class PostmortemRecord(_Record):
    summary: str = _Text
    root_cause: str = _Text
    action_items: list[str] = Field(default_factory=list)
    incident_id: str | None = None


class TimelineEntry(Model):
    memory: Memory
    superseded_by: str | None = None
    superseded_at: UtcDateTime | None = None
    reason: str | None = None


class DocumentVersion(Model):
    """One record of a chain of ADRs that supersede each other."""

    path: str
    title: str
    superseded_by: str | None = Field(default=None, description="path of the newer record")


class Timeline(Model):
    """Versions of one piece of knowledge, oldest first: memories, and for a query the chain of
    ADRs of the decision record that answers it best."""

    anchor_id: str
    entries: list[TimelineEntry]
    documents: list[DocumentVersion] = Field(default_factory=list)


class Citation(Model):
    memory_id: str
    path: str
    section: str | None = None
    sha256: str | None = None


class CitationState(Model):
    """A file a memory cites, and whether it still reads as when it was cited or verified."""

    path: str
    section: str | None = None
    status: Literal["current", "source_changed", "source_missing"]


class DriftItem(Model):
    memory_id: str
    title: str | None
    path: str
    status: Literal["source_missing", "source_changed"]
    recorded_sha256: str | None
    current_sha256: str | None = None


class DriftReport(Model):
    checked: int
    items: list[DriftItem]


class ProjectContext(Model):
    """Canonical knowledge first, then what happened lately."""

    context: str | None
    canonical: list[Memory]
    recent: list[Memory]
    counts: dict[str, int]


class BankView(Model):
    view: BankViewName
    memories: list[Memory]


__all__ = [
    "BANK_VIEWS",
    "BankView",
    "Citation",
    "DeadEndRecord",
    "DecisionRecord",
    "DriftItem",
    "DriftReport",
    "IncidentRecord",
    "MemoryPage",
    "PostmortemRecord",
    "ProjectContext",
    "RunbookRecord",
    "Timeline",
    "TimelineEntry",
]
