"""SessionOps, the service of GraphMemory for sessions: close one (plan an action per statement of its summary, apply what the
mode lets apply, queue the rest for review), and work the review queue.

Every change applied, by a session or by resolving an item, writes an Audit row (who, when, the
memory before and after); every resolution is kept on its item, whose fingerprint keeps the same
change from being proposed again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from graphmem.documents.redact import redact
from graphmem.errors import GraphmemError, InvalidInput, check_limit
from graphmem.ids import new_id
from graphmem.models import utcnow
from graphmem.service_context import Service, ServiceContext
from graphmem.sessions.checkpoint import strip_private
from graphmem.sessions.models import (
    SESSION_MODES,
    PlannedAction,
    ResolveReport,
    ReviewItem,
    ReviewQueue,
    SessionMode,
    SessionPlan,
)
from graphmem.sessions.planner import STORED_AS, Neighbour, may_auto_apply, plan_statement
from graphmem.sessions.statements import infer_mode, statement_kind, statements
from graphmem.storage.protocols.transactions import transaction_reading_its_writes
from graphmem.usage import unnoticed

if TYPE_CHECKING:
    from graphmem.knowledge.ops import KnowledgeOps
    from graphmem.memory_ops import MemoryOps
    from graphmem.models import Memory

NEIGHBOURS = 5
_RESOLUTIONS = {"accept": "accepted", "reject": "rejected", "defer": "deferred"}


def clean(text: str) -> str:
    """Text as it may be stored: `<private>` parts gone, secrets redacted."""
    return redact(strip_private(text))[0].strip()


def fingerprint(action: str, target: str | None, statement: str) -> str:
    words = " ".join(statement.lower().split())
    return hashlib.sha256(f"{action}|{target or ''}|{words}".encode()).hexdigest()[:32]


class SessionOps(Service):
    def __init__(
        self,
        context: ServiceContext,
        memories: MemoryOps,
        knowledge: KnowledgeOps,
        *,
        closed: Callable[[], None],
    ) -> None:
        """`closed` is told when a session closed for real (the owner's steward tends what it
        stored)."""
        super().__init__(context)
        self._memories = memories
        self._knowledge = knowledge
        self._closed = closed

    def close_session(
        self,
        summary: str,
        *,
        mode: str | None = None,
        context: str | None = None,
        service: str | None = None,
        dry_run: bool = True,
        auto_apply_low_risk: bool = False,
        session_id: str | None = None,
        client: str | None = None,
        cwd: str | None = None,
    ) -> SessionPlan:
        """Plan one action per statement of `summary`; unless `dry_run`, apply in one
        transaction (step by step on a server store) the actions the mode lets apply on their
        own (with `auto_apply_low_risk`) and queue the rest as review items. The summary itself
        is kept as the session's memory."""
        text = clean(summary or "")
        if not text:
            raise InvalidInput("the summary is empty")
        if mode is not None and mode not in SESSION_MODES:
            raise InvalidInput(f"mode must be one of {', '.join(SESSION_MODES)}", mode=mode)
        chosen: SessionMode = mode or infer_mode(text)  # type: ignore[assignment]
        session = session_id or new_id()
        actions = [
            plan_statement(
                s,
                statement_kind(s),
                self._neighbours(s),
                mode=chosen,
                context=context,
                service=service,
            )
            for s in statements(text)
        ]
        prints = {id(a): fingerprint(a.action, a.target, a.statement) for a in actions}
        seen = self.store.sessions.resolved_fingerprints(list(prints.values()))
        kept = [a for a in actions if prints[id(a)] not in seen]
        plan = SessionPlan(
            session_id=session, mode=chosen, mode_inferred=mode is None, context=context,
            service=service, dry_run=dry_run, actions=kept, skipped=len(actions) - len(kept),
        )  # fmt: skip
        if dry_run:
            return plan
        with transaction_reading_its_writes(self.store):
            self.store.sessions.upsert(
                session, client=client, mode=chosen, context=context, service=service, cwd=cwd,
                ended_at=utcnow(), summary_id=None,
            )  # fmt: skip
            stored = self._memories.remember(
                text, kind="summary", type="episodic", context=context, service=service,
                session_id=session, tags=["session", chosen], client_session=session,
            )  # fmt: skip
            plan.summary_id = stored.id
            self.store.sessions.upsert(
                session, client=client, mode=chosen, context=context, service=service, cwd=cwd,
                ended_at=utcnow(), summary_id=stored.id,
            )  # fmt: skip
            linked = [stored.id]
            for action in kept:
                if auto_apply_low_risk and may_auto_apply(action, chosen):
                    action.memory_id = self._apply(action, session, context, service, actor=client)
                    action.applied = True
                    linked.append(action.memory_id)
                else:
                    action.review_item = self.store.sessions.add_review_item(
                        session, _item_fields(action, prints[id(action)], context, service)
                    )
            self.store.sessions.link_memories(session, [m for m in linked if m])
        self._closed()
        return plan

    def _neighbours(self, statement: str) -> list[Neighbour]:
        with unnoticed():  # comparing a statement with the store is not a use of what it finds
            found = self._memories.recall(statement, limit=NEIGHBOURS, explain=True).hits
        out = []
        for hit in found:
            parts = hit.explain or {}
            cosine = max(parts.get("cosine_raw") or 0.0, parts.get("passage_raw") or 0.0)
            out.append(Neighbour(hit.memory, float(cosine)))
        return out

    def _apply(
        self,
        action: PlannedAction,
        session: str | None,
        context: str | None,
        service: str | None,
        *,
        actor: str | None,
        item: str | None = None,
    ) -> str:
        """Carry out one action; returns the memory it stored or changed."""
        kind, type_, tags = STORED_AS[action.statement_kind]
        who = actor or "session"
        if action.action in ("new", "supersede"):
            stored = self._memories.remember(
                action.statement, kind=kind, type=type_, tags=tags, context=context,
                service=service, session_id=session,
            )  # fmt: skip
            if action.action == "supersede" and action.target:
                before = self._memories.get(action.target)
                self._knowledge.mark_outdated(
                    action.target,
                    reason=f"superseded in session {session}",
                    superseded_by=stored.id,
                )
                self.store.steward.audit(actor=who, action="supersede", target=action.target, item=item,
                                 before=before.model_dump(mode="json"), after={"by": stored.id})  # fmt: skip
            self.store.steward.audit(actor=who, action="store", target=stored.id, item=item, before=None,
                             after=stored.model_dump(mode="json"))  # fmt: skip
            return stored.id
        if action.target is None:  # raw_only: the summary holds it
            return ""
        before = self._memories.get(action.target)
        after: Memory = before
        if action.action == "update":
            after = self._memories.update(
                action.target, content=f"{before.content}\n\n{action.statement}"
            )
        elif action.action == "promote":
            after = self._knowledge.promote_to_canonical(action.target, owner=who)
        self.store.steward.audit(actor=who, action=action.action, target=action.target, item=item,
                         before=before.model_dump(mode="json"), after=after.model_dump(mode="json"))  # fmt: skip
        return action.target

    # -- the review queue ---------------------------------------------------------------------

    def review_session_changes(
        self,
        *,
        session: str | None = None,
        status: str | None = "pending",
        action: str | None = None,
        limit: int = 50,
    ) -> ReviewQueue:
        """Review items, oldest first: by default the pending ones of every session."""
        check_limit(limit)
        rows = self.store.sessions.review_items(
            session=session, status=status, action=action, limit=limit
        )
        return ReviewQueue(
            items=[_item(r) for r in rows], pending=self.store.sessions.count_pending_reviews()
        )

    def resolve_review_item(
        self, item_id: str, resolution: str, note: str | None = None, *, actor: str = "user"
    ) -> ResolveReport:
        """Accept (apply the change), reject or defer one item; the resolution is recorded."""
        return self._resolve([self.store.sessions.review_item(item_id)], resolution, note, actor)

    def accept_session_changes(
        self,
        session: str | None = None,
        items: Sequence[str] | None = None,
        *,
        actor: str = "user",
    ) -> ResolveReport:
        """Accept the given items, or every pending item of the session."""
        if (session is None) == (items is None):
            raise InvalidInput("give a session or a list of items")
        rows = (
            [self.store.sessions.review_item(i) for i in items]
            if items is not None
            else self.store.sessions.review_items(
                session=session, status="pending", action=None, limit=1000
            )
        )
        return self._resolve(rows, "accept", None, actor)

    def resolve_review_queue(
        self,
        resolution: str,
        *,
        session: str | None = None,
        action: str | None = None,
        risk: str | None = None,
        note: str | None = None,
        dry_run: bool = True,
        actor: str = "user",
    ) -> ResolveReport:
        """Resolve every pending item the filters select; `dry_run` lists them only."""
        rows = [
            r
            for r in self.store.sessions.review_items(
                session=session, status="pending", action=action, limit=1000
            )
            if risk is None or r["risk"] == risk
        ]
        if dry_run:
            _check_resolution(resolution)
            return ResolveReport(resolved=[_item(r) for r in rows], dry_run=True)
        return self._resolve(rows, resolution, note, actor)

    def _resolve(
        self, rows: list[dict[str, Any]], resolution: str, note: str | None, actor: str
    ) -> ResolveReport:
        status = _check_resolution(resolution)
        report = ResolveReport()
        for row in rows:
            if row["status"] in ("accepted", "rejected"):
                raise InvalidInput(
                    f"review item {row['id']} is already {row['status']}", id=row["id"]
                )
            if status == "accepted":
                try:
                    action = PlannedAction(
                        statement=row["statement"], statement_kind=row["statement_kind"],
                        action=row["action"], target=row["target"], confidence=row["confidence"],
                        risk=row["risk"], rationale=row["rationale"],
                    )  # fmt: skip
                    payload = row["payload"]
                    memory_id = self._apply(
                        action, row["session"], payload.get("context"), payload.get("service"),
                        actor=actor, item=row["id"],
                    )  # fmt: skip
                except GraphmemError as exc:  # the item stays pending, with why
                    report.failed.append({"item": row["id"], "error": exc.message})
                    continue
                if memory_id:
                    report.memories.append(memory_id)
                    if row["session"]:
                        self.store.sessions.link_memories(row["session"], [memory_id])
            self.store.sessions.set_item_status(row["id"], status=status, note=note, actor=actor)
            self.store.steward.audit(actor=actor, action=f"review:{resolution}", target=row["target"],
                             item=row["id"], before={"status": row["status"]}, after={"status": status})  # fmt: skip
            report.resolved.append(_item(self.store.sessions.review_item(row["id"])))
        return report


def _check_resolution(resolution: str) -> str:
    if resolution not in _RESOLUTIONS:
        raise InvalidInput("resolution must be accept, reject or defer", resolution=resolution)
    return _RESOLUTIONS[resolution]


def _item_fields(
    action: PlannedAction, print_: str, context: str | None, service: str | None
) -> dict[str, Any]:
    return {
        "action": action.action, "statement_kind": action.statement_kind,
        "statement": action.statement, "target": action.target, "risk": action.risk,
        "confidence": action.confidence, "rationale": action.rationale, "fingerprint": print_,
        "payload": {"context": context, "service": service},
    }  # fmt: skip


def _item(row: dict[str, Any]) -> ReviewItem:
    return ReviewItem.model_validate({k: v for k, v in row.items() if k != "payload"})
