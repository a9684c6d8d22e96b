"""Sessions and the review items they file, in FalkorDB: `Session` and `ReviewItem` nodes linked
by IN_SESSION (and REVIEWS to the memory an item would change), as on the embedded engines,
times as microseconds. Every write is one buffered statement that checks what it needs (the
session, the target memory) as it lands, so none of them reads first.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from graphmem.errors import NotFound
from graphmem.ids import new_id
from graphmem.models import utcnow
from graphmem.storage.falkordb.connection import FalkorConnection
from graphmem.storage.falkordb.values import from_micros

ITEM_FIELDS = (
    "id", "session", "action", "statement_kind", "statement", "target", "risk", "confidence",
    "rationale", "status", "note", "created_at", "resolved_at", "resolved_by",
)  # fmt: skip
ITEM_TIMES = frozenset({"created_at", "resolved_at"})
FILED_FIELDS = (
    "action", "statement_kind", "statement", "target", "risk", "confidence", "rationale",
    "fingerprint",
)  # fmt: skip
RETURN_ITEM = ", ".join(f"r.{f}" for f in ITEM_FIELDS)


def _item(row: Sequence[Any]) -> dict[str, Any]:
    item = {
        f: from_micros(v) if f in ITEM_TIMES else v
        for f, v in zip(ITEM_FIELDS, row[:-1], strict=True)
    }
    return {**item, "payload": json.loads(row[-1] or "{}")}


class FalkorSessions:
    """graphmem.storage.protocols.Sessions over one connection."""

    def __init__(self, conn: FalkorConnection) -> None:
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
        self.conn.write(
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
            self.conn.write(
                "UNWIND $ids AS i MATCH (m:Memory {id: i}), (s:Session {id: $s}) "
                "MERGE (m)-[:IN_SESSION]->(s)",
                {"ids": list(dict.fromkeys(memory_ids)), "s": session_id},
            )

    def by_client(self) -> dict[str, list[str]]:
        rows = self.conn.read(
            "MATCH (s:Session) WHERE s.client IS NOT NULL RETURN s.client, collect(s.id)"
        )
        return {client: sorted(ids) for client, ids in rows}

    def resolved_fingerprints(self, fingerprints: Sequence[str]) -> dict[str, str]:
        if not fingerprints:
            return {}
        rows = self.conn.read(
            "MATCH (r:ReviewItem) WHERE r.fingerprint IN $f RETURN r.fingerprint, r.status",
            {"f": list(fingerprints)},
        )
        return {f: s for f, s in rows}

    def add_review_item(self, session_id: str, fields: dict[str, Any]) -> str:
        """The item is made only if the session is there when the statement lands, and linked
        to its target only if that memory is; the id is returned either way, as on the
        embedded engines."""
        item_id = new_id()
        values = {f: fields.get(f) for f in FILED_FIELDS}
        if values["confidence"] is not None:  # a DOUBLE column on the embedded engines
            values["confidence"] = float(values["confidence"])
        payload = json.dumps(fields.get("payload", {}), ensure_ascii=False)
        with self.conn.transaction():
            self.conn.write(
                "MATCH (s:Session {id: $session}) "
                "CREATE (r:ReviewItem {id: $id, session: $session, action: $action, "
                "statement_kind: $statement_kind, statement: $statement, target: $target, "
                "risk: $risk, confidence: $confidence, rationale: $rationale, "
                "payload: $payload, status: 'pending', created_at: $at, "
                "fingerprint: $fingerprint})-[:IN_SESSION]->(s)",
                {**values, "id": item_id, "session": session_id, "payload": payload,
                 "at": utcnow()},
            )  # fmt: skip
            if values["target"]:
                self.conn.write(
                    "MATCH (r:ReviewItem {id: $id}), (m:Memory {id: $t}) "
                    "CREATE (r)-[:REVIEWS]->(m)",
                    {"id": item_id, "t": values["target"]},
                )
        return item_id

    def review_items(
        self, *, session: str | None, status: str | None, action: str | None, limit: int
    ) -> list[dict[str, Any]]:
        conditions: list[str] = []
        params: dict[str, Any] = {"limit": limit}
        for name, value in (("session", session), ("status", status), ("action", action)):
            if value is not None:
                conditions.append(f"r.{name} = ${name}")
                params[name] = value
        where = f"WHERE {' AND '.join(conditions)} " if conditions else ""
        rows = self.conn.read(
            f"MATCH (r:ReviewItem) {where}RETURN {RETURN_ITEM}, r.payload "
            "ORDER BY r.created_at, r.id LIMIT $limit",
            params,
        )
        return [_item(row) for row in rows]

    def review_item(self, item_id: str) -> dict[str, Any]:
        rows = self.conn.read(
            f"MATCH (r:ReviewItem {{id: $id}}) RETURN {RETURN_ITEM}, r.payload", {"id": item_id}
        )
        if not rows:
            raise NotFound(f"no review item with id {item_id!r}", id=item_id)
        return _item(rows[0])

    def count_pending_reviews(self) -> int:
        rows = self.conn.read("MATCH (r:ReviewItem) WHERE r.status = 'pending' RETURN count(r)")
        return int(rows[0][0]) if rows else 0

    def set_item_status(self, item_id: str, *, status: str, note: str | None, actor: str) -> None:
        self.conn.write(
            "MATCH (r:ReviewItem {id: $id}) SET r.status = $status, r.note = $note, "
            "r.resolved_at = $at, r.resolved_by = $actor",
            {"id": item_id, "status": status, "note": note, "at": utcnow(), "actor": actor},
        )

    def reopen_review_item(self, item_id: str, *, status: str) -> None:
        """Put an item back to `status`, unresolved (an undo of the steward's dismissal)."""
        self.conn.write(
            "MATCH (r:ReviewItem {id: $id}) SET r.status = $status, r.note = NULL, "
            "r.resolved_at = NULL, r.resolved_by = NULL",
            {"id": item_id, "status": status},
        )
