"""Sessions and the review items they file, in Kùzu."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from graphmem.errors import NotFound
from graphmem.ids import new_id
from graphmem.models import utcnow
from graphmem.storage.kuzu.connection import KuzuConnection
from graphmem.storage.kuzu.values import equal_to

ITEM_FIELDS = (
    "id", "session", "action", "statement_kind", "statement", "target", "risk", "confidence",
    "rationale", "status", "note", "created_at", "resolved_at", "resolved_by",
)  # fmt: skip
RETURN_ITEM = ", ".join(f"r.{f}" for f in ITEM_FIELDS)


class KuzuSessions:
    """graphmem.storage.protocols.Sessions over one connection."""

    def __init__(self, conn: KuzuConnection) -> None:
        self.conn = conn

    def upsert(
        self,
        session_id: str,
        *,
        client: str | None,
        mode: str,
        context: str | None,
        service: str | None,
        cwd: str | None,
        ended_at: datetime | None,
        summary_id: str | None,
    ) -> None:
        self.conn.execute(
            "MERGE (s:Session {id: $id}) ON CREATE SET s.started_at = $now "
            "SET s.client = coalesce($client, s.client), s.mode = $mode, "
            "s.context = coalesce($context, s.context), s.service = coalesce($service, s.service), "
            "s.cwd = coalesce($cwd, s.cwd), s.ended_at = $ended, "
            "s.summary_id = coalesce($summary, s.summary_id)",
            {"id": session_id, "now": utcnow(), "client": client, "mode": mode,
             "context": context, "service": service, "cwd": cwd, "ended": ended_at,
             "summary": summary_id},
        )  # fmt: skip

    def link_memories(self, session_id: str, memory_ids: Sequence[str]) -> None:
        if memory_ids:
            self.conn.execute(
                "UNWIND $ids AS i MATCH (m:Memory {id: i}), (s:Session {id: $s}) "
                "MERGE (m)-[:IN_SESSION]->(s)",
                {"ids": list(memory_ids), "s": session_id},
            )

    def by_client(self) -> dict[str, list[str]]:
        rows = self.conn.read(
            "MATCH (s:Session) WHERE s.client IS NOT NULL RETURN s.client, collect(s.id)"
        )
        return {client: sorted(ids) for client, ids in rows}

    def resolved_fingerprints(self, fingerprints: Sequence[str]) -> dict[str, str]:
        """fingerprint -> status of the items already filed for these changes."""
        if not fingerprints:
            return {}
        rows = self.conn.read(
            "MATCH (r:ReviewItem) WHERE r.fingerprint IN $f RETURN r.fingerprint, r.status",
            {"f": list(fingerprints)},
        )
        return {f: s for f, s in rows}

    def add_review_item(self, session_id: str, fields: dict[str, Any]) -> str:
        item_id = new_id()
        payload = json.dumps(fields.pop("payload", {}), ensure_ascii=False)
        self.conn.execute(
            "MATCH (s:Session {id: $session}) "
            "CREATE (r:ReviewItem {id: $id, session: $session, action: $action, "
            "statement_kind: $statement_kind, statement: $statement, target: $target, "
            "risk: $risk, confidence: $confidence, rationale: $rationale, payload: $payload, "
            "status: 'pending', created_at: $at, fingerprint: $fingerprint})-[:IN_SESSION]->(s)",
            {**fields, "id": item_id, "session": session_id, "payload": payload, "at": utcnow()},
        )
        if fields.get("target"):
            self.conn.execute(
                "MATCH (r:ReviewItem {id: $id}), (m:Memory {id: $t}) CREATE (r)-[:REVIEWS]->(m)",
                {"id": item_id, "t": fields["target"]},
            )
        return item_id

    def review_items(
        self, *, session: str | None, status: str | None, action: str | None, limit: int
    ) -> list[dict[str, Any]]:
        conditions: list[str] = []
        params: dict[str, Any] = {"limit": limit}
        equal_to("r", conditions, params, session=session, status=status, action=action)
        where = f"WHERE {' AND '.join(conditions)} " if conditions else ""
        rows = self.conn.read(
            f"MATCH (r:ReviewItem) {where}RETURN {RETURN_ITEM}, r.payload "
            "ORDER BY r.created_at, r.id LIMIT $limit",
            params,
        )
        return [
            {
                **dict(zip(ITEM_FIELDS, row[:-1], strict=True)),
                "payload": json.loads(row[-1] or "{}"),
            }
            for row in rows
        ]

    def review_item(self, item_id: str) -> dict[str, Any]:
        rows = self.conn.read(
            f"MATCH (r:ReviewItem {{id: $id}}) RETURN {RETURN_ITEM}, r.payload", {"id": item_id}
        )
        if not rows:
            raise NotFound(f"no review item with id {item_id!r}", id=item_id)
        row = rows[0]
        return {
            **dict(zip(ITEM_FIELDS, row[:-1], strict=True)),
            "payload": json.loads(row[-1] or "{}"),
        }

    def count_pending_reviews(self) -> int:
        rows = self.conn.read("MATCH (r:ReviewItem) WHERE r.status = 'pending' RETURN count(*)")
        return int(rows[0][0])

    def set_item_status(self, item_id: str, *, status: str, note: str | None, actor: str) -> None:
        self.conn.execute(
            "MATCH (r:ReviewItem {id: $id}) SET r.status = $status, r.note = $note, "
            "r.resolved_at = $at, r.resolved_by = $actor",
            {"id": item_id, "status": status, "note": note, "at": utcnow(), "actor": actor},
        )

    def reopen_review_item(self, item_id: str, *, status: str) -> None:
        """Put an item back to `status`, unresolved (an undo of the steward's dismissal)."""
        self.conn.execute(
            "MATCH (r:ReviewItem {id: $id}) SET r.status = $status, r.note = NULL, "
            "r.resolved_at = NULL, r.resolved_by = NULL",
            {"id": item_id, "status": status},
        )
