"""KnowledgeOps, the service of GraphMemory for knowledge over time.

Records are memories with a kind and structured fields kept in metadata["record"]; their text is
composed from those fields so that recall finds them by any of them. Lifecycle changes, links and
citations are graph edits of the store's knowledge repository (storage/kuzu/knowledge.py).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from graphmem.errors import Conflict, InvalidInput, check_limit, validation_message
from graphmem.idempotency import CALL_FIELDS
from graphmem.knowledge.models import (
    BANK_VIEWS,
    BankView,
    Citation,
    CitationState,
    DeadEndRecord,
    DecisionRecord,
    DocumentVersion,
    DriftItem,
    DriftReport,
    IncidentRecord,
    PostmortemRecord,
    ProjectContext,
    RunbookRecord,
    Timeline,
    TimelineEntry,
)
from graphmem.models import (
    Memory,
    MemoryFilter,
    MemoryPage,
    RecallResult,
    StoredMemory,
    parse_time,
    utcnow,
)
from graphmem.service_context import Service, ServiceContext
from graphmem.storage.selection import (
    LIVE,
    NOT_ARCHIVED,
    DueForReview,
    MemorySelection,
    Mentions,
)
from graphmem.text import shortened

if TYPE_CHECKING:
    from graphmem.api import Filters
    from graphmem.documents.ops import DocumentOps
    from graphmem.memory_ops import MemoryOps

R = TypeVar("R", bound=BaseModel)
# what a record shares with a plain memory, and what a store call brings besides
_COMMON = {"title", "tags", "context", "service", "importance", "created_at", *CALL_FIELDS}
_VERIFY_STATUSES = ("verified", "failed", "needs_update")
_REVIEW_DAYS = 90  # the review queue's canonical and important entries go stale after this
# what each bank view holds (the review queue: also due for review, counted from now)
_SHELVES = {
    "decisions": MemorySelection(kinds=("decision",), lifecycles=LIVE),
    "runbooks": MemorySelection(kinds=("runbook",), lifecycles=LIVE),
    "incidents": MemorySelection(kinds=("incident", "postmortem"), lifecycles=LIVE),
    "caveats": MemorySelection(
        lifecycles=LIVE, mentions=Mentions(tags=("caveat", "gotcha", "pitfall", "warning"))
    ),
    "migrations": MemorySelection(
        lifecycles=LIVE, mentions=Mentions(tags=("migration",), words=("migrat",))
    ),
    "dead_ends": MemorySelection(kinds=("dead_end",), lifecycles=NOT_ARCHIVED),
    "canonical_overview": MemorySelection(lifecycles=("canonical",)),
    "review_queue": MemorySelection(lifecycles=LIVE),
}


def _parse(model: type[R], fields: Mapping[str, Any]) -> R:
    try:
        return model.model_validate(dict(fields))
    except ValidationError as exc:
        raise InvalidInput(validation_message(exc)) from exc


def _lines(*parts: tuple[str, str | None]) -> str:
    return "\n".join(f"{label}: {value}" for label, value in parts if value)


def _sha256(path: Path) -> str | None:
    try:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
    except OSError:
        return None


class KnowledgeOps(Service):
    """Lifecycle, records, canonical knowledge, time, verification and drift."""

    def __init__(
        self, context: ServiceContext, memories: MemoryOps, documents: DocumentOps
    ) -> None:
        super().__init__(context)
        self._memories = memories
        self._documents = documents

    # -- lifecycle --------------------------------------------------------------------------

    def mark_outdated(
        self, memory_id: str, *, reason: str, superseded_by: str | None = None
    ) -> Memory:
        """Retire a memory: its validity ends; with a successor it is linked as superseded."""
        if not reason or not reason.strip():
            raise InvalidInput("say why it is outdated (reason)")
        self.store.knowledge.supersede(
            memory_id, reason=reason.strip(), new_id=superseded_by, at=utcnow()
        )
        return self._memories.get(memory_id)

    def merge_duplicates(
        self, primary: str, duplicates: list[str], *, reason: str | None = None
    ) -> Memory:
        """Fold duplicates into the primary (tags joined, highest importance kept); they stay,
        archived, linked by MERGED_INTO, so nothing is lost."""
        duplicates = list(dict.fromkeys(duplicates))
        self.store.knowledge.merge_into(primary, duplicates, reason=reason, at=utcnow())
        keep = self._memories.get(primary)
        merged = [keep, *self.store.memories.get_many(duplicates).values()]
        tags = list(dict.fromkeys(t for m in merged for t in m.tags))
        importance = max(m.importance for m in merged)
        if tags != keep.tags or importance != keep.importance:
            return self._memories.update(primary, tags=tags, importance=importance)
        return keep

    def promote_to_canonical(self, memory_id: str, *, owner: str) -> Memory:
        """Mark a memory as the canonical statement of its topic; it ranks first in recall."""
        if not owner or not owner.strip():
            raise InvalidInput("a canonical entry needs an owner")
        current = self._memories.get(memory_id)
        if current.lifecycle in ("outdated", "superseded", "archived"):
            newest = self.store.knowledge.newest_successors([memory_id]).get(memory_id)
            hint = f"; promote its newest version {newest}" if newest else ""
            raise Conflict(f"{memory_id} is {current.lifecycle}{hint}", id=memory_id)
        self.store.knowledge.set_fields(
            memory_id,
            {"lifecycle": "canonical", "owner": owner.strip(),
             "lifecycle_reason": f"promoted by {owner.strip()}", "updated_at": utcnow()},
        )  # fmt: skip
        return self._memories.get(memory_id)

    # -- engineering records ----------------------------------------------------------------

    def _store_record(
        self, record: BaseModel, *, kind: str, type_: str, content: str, title: str, **extra: Any
    ) -> StoredMemory:
        common = record.model_dump(include=_COMMON)
        details = record.model_dump(exclude=_COMMON, mode="json")
        common = {**common, "title": common["title"] or title, **extra}
        return self._memories.remember(
            content,
            **common,
            kind=kind,
            type=type_,
            metadata={"record": details},
        )

    def store_decision(self, /, **fields: Any) -> StoredMemory:
        """A decision with its rationale; `avoids` links the dead ends it steers clear of."""
        rec = _parse(DecisionRecord, fields)
        self.store.knowledge.check_dead_ends(rec.avoids)  # before anything is written
        memory = self._store_record(
            rec, kind="decision", type_="semantic", title=shortened(rec.decision, 80),
            content=_lines(("Decision", rec.decision), ("Why", rec.rationale),
                           ("Consequences", rec.consequences), ("Status", rec.status)),
        )  # fmt: skip
        if rec.avoids and not memory.deduplicated:  # a repeat's links were made the first time
            self.store.knowledge.link_avoids(memory.id, rec.avoids, at=utcnow())
        return memory

    def store_dead_end(self, /, **fields: Any) -> StoredMemory:
        """An approach that failed and why, so nobody tries it again; recall warns about it."""
        rec = _parse(DeadEndRecord, fields)
        return self._store_record(
            rec, kind="dead_end", type_="episodic", title=f"Dead end: {shortened(rec.attempted_approach, 70)}",
            content=_lines(("Tried", rec.attempted_approach), ("Failed because", rec.why_failed),
                           ("Instead", rec.alternative)),
        )  # fmt: skip

    def store_incident(self, /, **fields: Any) -> StoredMemory:
        rec = _parse(IncidentRecord, fields)
        return self._store_record(
            rec, kind="incident", type_="episodic", title=f"Incident: {shortened(rec.summary, 70)}",
            content=_lines(("Incident", rec.summary), ("Severity", rec.severity),
                           ("Impact", rec.impact), ("Root cause", rec.root_cause),
                           ("Resolution", rec.resolution)),
            **({"created_at": rec.occurred_at} if rec.occurred_at else {}),
        )  # fmt: skip

    def store_runbook(self, /, **fields: Any) -> StoredMemory:
        """Steps for a situation; cited files are checked for drift later."""
        rec = _parse(RunbookRecord, fields)
        steps = "\n".join(f"{i}. {step}" for i, step in enumerate(rec.steps, start=1))
        paths = [self._project_path(p) for p in rec.cites]
        for path in paths:
            self._require_file(path)
        memory = self._store_record(
            rec, kind="runbook", type_="procedural", title=f"Runbook: {shortened(rec.trigger, 70)}",
            content=_lines(("When", rec.trigger), ("Steps", "\n" + steps),
                           ("Verify", rec.verification), ("Rollback", rec.rollback)),
        )  # fmt: skip
        for path in paths if not memory.deduplicated else ():
            self.cite_source(memory.id, path)
        return memory

    def store_postmortem(self, /, **fields: Any) -> StoredMemory:
        rec = _parse(PostmortemRecord, fields)
        if rec.incident_id:
            self._memories.get(rec.incident_id)
        items = "\n".join(f"- {item}" for item in rec.action_items)
        return self._store_record(
            rec, kind="postmortem", type_="semantic", title=f"Postmortem: {shortened(rec.summary, 70)}",
            content=_lines(("Postmortem", rec.summary), ("Root cause", rec.root_cause),
                           ("Action items", "\n" + items if items else None)),
        )  # fmt: skip

    def search_runbooks(self, query: str, *, limit: int = 5) -> RecallResult:
        return self._memories.recall(query, limit=limit, filters={"kind": "runbook"})

    def recall_similar_incidents(self, query: str, *, limit: int = 5) -> RecallResult:
        return self._memories.recall(query, limit=limit, filters={"kind": "incident"})

    # -- canonical knowledge and views ------------------------------------------------------

    def list_canonical_knowledge(
        self, *, context: str | None = None, limit: int = 50
    ) -> MemoryPage:
        check_limit(limit)
        return self.store.memories.page(
            MemoryFilter(lifecycle="canonical", context=context), limit=limit, cursor=None
        )

    def recall_canonical_knowledge(self, query: str, *, limit: int = 10) -> RecallResult:
        return self._memories.recall(query, limit=limit, filters={"lifecycle": "canonical"})

    def summarize_project_context(
        self, *, context: str | None = None, limit: int = 10
    ) -> ProjectContext:
        """Canonical knowledge first, then the latest active entries: what to read before work."""
        check_limit(limit)
        canonical = self.list_canonical_knowledge(context=context, limit=limit).memories
        recent = self.store.memories.page(
            MemoryFilter(lifecycle="active", context=context), limit=limit, cursor=None
        ).memories
        counts = self.store.memories.count_by("kind", MemoryFilter(context=context))
        return ProjectContext(context=context, canonical=canonical, recent=recent, counts=counts)

    def project_bank_view(
        self, view: str, *, context: str | None = None, limit: int = 50
    ) -> BankView:
        """A shelf of the project's knowledge bank (decisions, runbooks, incidents, ...)."""
        check_limit(limit)
        if view not in BANK_VIEWS:
            raise InvalidInput(f"unknown view {view!r}; known: {', '.join(BANK_VIEWS)}", view=view)
        selection = replace(_SHELVES[view], context=context)
        if view == "review_queue":
            due = DueForReview(before=utcnow() - timedelta(days=_REVIEW_DAYS))
            selection = replace(selection, due_for_review=due)
        memories = self.store.memories.select(selection, limit=limit)
        return BankView(view=view, memories=memories)  # type: ignore[arg-type]

    # -- time -------------------------------------------------------------------------------

    def recall_as_of(
        self,
        query: str,
        *,
        as_of: datetime | str,
        limit: int = 10,
        filters: Filters = None,
    ) -> RecallResult:
        """What was believed at `as_of`: valid then and already recorded; later changes ignored."""
        try:
            when = parse_time(as_of)
        except ValueError as exc:
            raise InvalidInput(f"as_of: {exc}", as_of=str(as_of)) from exc
        if when is None:
            raise InvalidInput("as_of is required")
        given = filters.model_dump() if isinstance(filters, MemoryFilter) else dict(filters or {})
        return self._memories.recall(query, limit=limit, filters={**given, "as_of": when})

    def knowledge_timeline(
        self, query: str | None = None, *, memory_id: str | None = None
    ) -> Timeline:
        """The versions of one piece of knowledge, oldest first, with when and why each ended."""
        if (query is None) == (memory_id is None):
            raise InvalidInput("give either a query or a memory id")
        documents = self._document_versions(query) if query is not None else []
        if memory_id is None:
            assert query is not None
            hits = self._memories.recall(query, limit=1).hits
            if not hits:
                return Timeline(anchor_id="", entries=[], documents=documents)
            memory_id = hits[0].memory.id
        versions = self.store.knowledge.chain(memory_id)
        versions.sort(key=lambda v: (v[0].valid_from or v[0].created_at, v[0].created_at))
        entries = [
            TimelineEntry(memory=m, superseded_by=by, superseded_at=at, reason=reason)
            for m, by, at, reason in versions
        ]
        return Timeline(anchor_id=memory_id, entries=entries, documents=documents)

    def _document_versions(self, query: str) -> list[DocumentVersion]:
        """The chain of ADRs the best-matching decision record belongs to, oldest first; empty
        when it supersedes nothing and nothing supersedes it."""
        if not self.store.documents.index().docs:
            return []
        found = self._documents.search_docs(query, limit=1, source_type="adr", recipe="bm25").hits
        if not found:
            return []
        doc = self.store.documents.index().doc_by_rel(found[0].path)
        chain = self.store.documents.chain(doc[0].path) if doc else []
        if len(chain) < 2:
            return []
        newer = {rel: by for _, rel, _, by in chain}  # rel -> the rel of what superseded it
        order: list[str] = []
        current = next((rel for rel in newer if rel not in set(newer.values())), None)
        while current is not None and current not in order:  # from the oldest on
            order.append(current)
            current = newer.get(current)
        titles = {rel: title for _, rel, title, _ in chain}
        return [
            DocumentVersion(path=rel, title=titles[rel], superseded_by=newer[rel]) for rel in order
        ]

    # -- verification and drift -------------------------------------------------------------

    @property
    def project_root(self) -> Path:
        """Cited paths are relative to the project: the folder holding the data dir."""
        return self.settings.home.parent

    def _project_path(self, path: str) -> str:
        if not path or not path.strip():
            raise InvalidInput("path is empty")
        raw = Path(path.strip()).expanduser()
        if raw.is_absolute():
            try:
                raw = raw.resolve().relative_to(self.project_root.resolve())
            except ValueError:
                raise InvalidInput(
                    f"{path} is outside the project {self.project_root}", path=path
                ) from None
        cleaned = PurePosixPath(os.path.normpath(raw.as_posix()))
        if cleaned.parts and cleaned.parts[0] == "..":
            raise InvalidInput(f"{path} is outside the project {self.project_root}", path=path)
        return cleaned.as_posix()

    def _require_file(self, relative: str) -> Path:
        full = self.project_root / relative
        if not full.is_file():
            raise InvalidInput(f"no file {relative} under {self.project_root}", path=relative)
        return full

    def cite_source(self, memory_id: str, path: str, *, section: str | None = None) -> Citation:
        """Record that a memory relies on a file (with its hash now), so drift can be seen."""
        relative = self._project_path(path)
        sha = _sha256(self._require_file(relative))
        self.store.knowledge.cite(memory_id, relative, section=section, sha256=sha, at=utcnow())
        return Citation(memory_id=memory_id, path=relative, section=section, sha256=sha)

    def verify_entry(
        self, memory_id: str, *, method: str, status: str, note: str | None = None
    ) -> Memory:
        """Record a check of a memory; a verified one takes its cited files' current hashes."""
        if status not in _VERIFY_STATUSES:
            raise InvalidInput(
                f"status must be one of {', '.join(_VERIFY_STATUSES)}", status=status
            )
        if not method or not method.strip():
            raise InvalidInput("say how it was verified (method)")
        now = utcnow()
        self.store.knowledge.set_fields(
            memory_id,
            {"verified_at": now, "verify_status": status, "verify_method": method.strip(),
             "verify_note": note, "updated_at": now},
        )  # fmt: skip
        if status == "verified":
            cited = self.store.knowledge.citations(memory_id)
            hashes = {path: _sha256(self.project_root / path) for _, _, path, _ in cited}
            self.store.knowledge.record_citation_hashes(memory_id, hashes, at=now)
        return self._memories.get(memory_id)

    def verification_candidates(
        self, *, days: int = 90, min_importance: float = 0.7, limit: int = 50
    ) -> MemoryPage:
        """Canonical or important entries not verified for `days` days, least recently first."""
        if days < 0 or not 0 <= min_importance <= 1 or not 1 <= limit <= 1000:
            raise InvalidInput("days >= 0, min_importance in 0..1 and limit in 1..1000")
        before = utcnow() - timedelta(days=days)
        return MemoryPage(
            memories=self.store.knowledge.verification_due(
                before=before, min_importance=min_importance, limit=limit
            )
        )

    def citation_states(self, memory_id: str) -> list[CitationState]:
        states = []
        for _, _, path, recorded in self.store.knowledge.citations(memory_id):
            current = _sha256(self.project_root / path)
            states.append(
                CitationState(
                    path=path,
                    status="source_missing"
                    if current is None
                    else "current"
                    if current == recorded
                    else "source_changed",
                )
            )
        return states

    def drift_scan(self) -> DriftReport:
        """Memories whose cited files are gone (source_missing) or changed (source_changed)."""
        items = []
        citations = self.store.knowledge.citations()
        for memory_id, title, path, recorded in citations:
            current = _sha256(self.project_root / path)
            if current is None:
                status = "source_missing"
            elif current != recorded:
                status = "source_changed"
            else:
                continue
            items.append(
                DriftItem(memory_id=memory_id, title=title, path=path, status=status,  # type: ignore[arg-type]
                          recorded_sha256=recorded, current_sha256=current)
            )  # fmt: skip
        return DriftReport(checked=len(citations), items=items)
