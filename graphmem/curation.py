"""Curation by hand, audited: the public update, mark_outdated, merge_duplicates,
promote_to_canonical and verify_entry (what the CLI, the MCP tools and the console call) each
write an Audit row `curate:ACTION` holding the memories' fields before and after and the edge it
made (read before the change, in its transaction but for an edit of the text, which embeds; and
after it commits), so `steward_undo(AUDIT_ID)` puts the change back like one of the steward's. The steward and session capture call the knowledge service directly and write
their own rows. `audit_log` lists the newest rows of every kind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any, TypeVar

from graphmem.errors import check_limit
from graphmem.knowledge.ops import KnowledgeOps
from graphmem.memory_ops import MemoryOps
from graphmem.models import Memory
from graphmem.service_context import Service, ServiceContext
from graphmem.steward.models import AuditEntry, AuditPage
from graphmem.storage.protocols.transactions import transaction_reading_its_writes

T = TypeVar("T")
CURATE = "curate:"
UNDOABLE = ("steward:", CURATE)  # the rows steward_undo can put back


class CurationOps(Service):
    """The audited changes to memories a person (or an agent) asks for."""

    def __init__(
        self, context: ServiceContext, memories: MemoryOps, knowledge: KnowledgeOps
    ) -> None:
        super().__init__(context)
        self._memories = memories
        self._knowledge = knowledge

    def _audited(
        self,
        action: str,
        ids: Sequence[str],
        change: Callable[[], T],
        *,
        edges: Sequence[list[str]] = (),
        text: dict[str, Any] | None = None,
    ) -> T:
        store = self.context.store
        # an edit of the text embeds it and writes its vector: not inside a held transaction;
        # the knowledge operations read what they wrote (step by step on a server store)
        with transaction_reading_its_writes(store) if text is None else nullcontext():
            before: dict[str, Any] = {"memories": store.steward.memory_state(ids)}
            if text is not None:
                before["text"] = text
            done = change()
        # read once the change committed: a server store's transaction does not read its own
        # writes (docs/adr/0011-falkordb-engine.md)
        after = {"memories": store.steward.memory_state(ids), "edges": list(edges)}
        store.steward.audit_step(
            actor="user", action=CURATE + action, target=ids[0], item=None, run=None,
            before=before, after=after,
        )  # fmt: skip
        return done

    def update(self, /, memory_id: str, **changes: Any) -> Memory:
        """Change fields of a memory; a content or title change re-embeds it."""
        current = self.context.store.memories.get(memory_id)
        text = None
        if {"content", "title"} & {k for k, v in changes.items() if v is not None}:
            text = {memory_id: {"content": current.content, "title": current.title or ""}}
        return self._audited(
            "edit", [memory_id], lambda: self._memories.update(memory_id, **changes), text=text
        )

    def mark_outdated(
        self, memory_id: str, *, reason: str, superseded_by: str | None = None
    ) -> Memory:
        """Retire a memory: its validity ends; with a successor it is linked as superseded."""
        edges = [["SUPERSEDES", superseded_by, memory_id]] if superseded_by else []
        return self._audited(
            "outdated", [memory_id],
            lambda: self._knowledge.mark_outdated(
                memory_id, reason=reason, superseded_by=superseded_by
            ),
            edges=edges,
        )  # fmt: skip

    def merge_duplicates(
        self, primary: str, duplicates: list[str], *, reason: str | None = None
    ) -> Memory:
        """Fold duplicates into the primary (tags joined, highest importance kept); they stay,
        archived, linked by MERGED_INTO, so nothing is lost."""
        duplicates = list(dict.fromkeys(duplicates))
        return self._audited(
            "merge", [primary, *duplicates],
            lambda: self._knowledge.merge_duplicates(primary, duplicates, reason=reason),
            edges=[["MERGED_INTO", d, primary] for d in duplicates if d != primary],
        )  # fmt: skip

    def promote_to_canonical(self, memory_id: str, *, owner: str) -> Memory:
        """Mark a memory as the canonical statement of its topic; it ranks first in recall."""
        return self._audited(
            "canonical", [memory_id],
            lambda: self._knowledge.promote_to_canonical(memory_id, owner=owner),
        )  # fmt: skip

    def verify_entry(
        self, memory_id: str, *, method: str, status: str, note: str | None = None
    ) -> Memory:
        """Record a check of a memory; a verified one takes its cited files' current hashes."""
        return self._audited(
            "verify", [memory_id],
            lambda: self._knowledge.verify_entry(
                memory_id, method=method, status=status, note=note
            ),
        )  # fmt: skip

    def audit_log(self, *, limit: int = 50) -> AuditPage:
        """The newest audited changes, by hand, by the steward and by session capture; an entry
        `undoable` can be put back with `steward_undo(id)`."""
        check_limit(limit)
        store = self.context.store
        rows = store.steward.recent_audit(limit)
        labels = store.memories.labels(sorted({r["target"] for r in rows if r["target"]}))
        return AuditPage(
            entries=[
                AuditEntry.model_validate(
                    {**row, "target_label": labels.get(row["target"] or ""),
                     "undoable": row["undone_at"] is None
                     and str(row["action"]).startswith(UNDOABLE)}
                )
                for row in rows
            ]
        )  # fmt: skip
