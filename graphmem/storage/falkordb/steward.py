"""The steward's runs, findings and audit rows in FalkorDB, and the reads detection needs, with
the embedded engine's labels, properties and results (graphmem/storage/kuzu/steward.py).

Times are stored as integer microseconds and read back as the naive UTC datetimes the embedded
engine returns. Every method either reads or writes: none reads after buffering a write, so
each works inside a caller's transaction as long as the caller's own reads come first.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa

from graphmem.errors import NotFound
from graphmem.foreground import FOREGROUND
from graphmem.ids import new_id
from graphmem.indexes.changes import LayersSet, MemoriesChanged
from graphmem.models import utcnow
from graphmem.storage.falkordb.connection import FalkorConnection
from graphmem.storage.falkordb.values import aware, from_micros

FINDING_FIELDS = (
    "id", "run", "kind", "scope", "targets", "confidence", "action", "summary", "status", "auto",
    "error", "note", "created_at", "resolved_at", "resolved_by",
)  # fmt: skip
FILE_CHUNK = 500  # findings a transaction, as on the embedded engine
WRITE_CHUNK = 10_000  # rows an UNWIND statement
_FINDING_COLUMNS = (
    "id", "run", "kind", "scope", "targets", "evidence", "evidence_hash", "fingerprint",
    "confidence", "action", "summary", "status", "auto", "error", "note", "created_at",
)  # fmt: skip
_FINDING_TIMES = frozenset({"created_at", "resolved_at"})
RETURN_FINDING = ", ".join(f"f.{name}" for name in FINDING_FIELDS) + ", f.evidence"
LIVE = "m.lifecycle IN ['active', 'canonical']"
OWN_RECORDS = "NOT m.kind IN ['summary', 'checkpoint']"  # a session's summaries and checkpoints
_SORTS = {
    "confidence": "f.confidence DESC, f.created_at DESC",
    "newest": "f.created_at DESC",
    "oldest": "f.created_at",
}
_TIMES = ("valid_to", "verified_at", "updated_at")
# what a steward action may change on a memory, and an undo puts back
STATE = (
    "lifecycle", "lifecycle_reason", "valid_to", "owner", "importance", "tags", "verified_at",
    "verify_status", "verify_method", "verify_note", "updated_at",
)  # fmt: skip
_SEDIMENT = pa.schema(
    [
        ("id", pa.string()), ("layer", pa.string()), ("layer_at", pa.timestamp("us")),
        ("layer_by", pa.string()), ("lifecycle", pa.string()),
        ("created_at", pa.timestamp("us")), ("accessed_at", pa.timestamp("us")),
        ("targeted", pa.int64()),
    ]
)  # fmt: skip


def _equal_to(alias: str, clauses: list[str], params: dict[str, Any], **values: Any) -> None:
    """Narrow a match to the given properties' values (None: any)."""
    for name, value in values.items():
        if value is not None:
            clauses.append(f"{alias}.{name} = ${name}")
            params[name] = value


def _float(value: Any) -> float | None:
    """A DOUBLE as the embedded engine returns it: FalkorDB keeps an integer written as one."""
    return None if value is None else float(value)


def _finding(row: list[Any]) -> dict[str, Any]:
    found = dict(zip(FINDING_FIELDS, row[:-1], strict=True))
    for name in _FINDING_TIMES:
        found[name] = from_micros(found[name])
    found["confidence"] = _float(found["confidence"])
    found["evidence"] = json.loads(row[-1] or "{}")
    found["targets"] = list(found["targets"] or [])
    return found


def _time_value(value: Any) -> Any:
    """A time as it comes back from JSON (ISO text), for a parameter."""
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def _json(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


class FalkorSteward:
    """graphmem.storage.protocols.Steward over one connection."""

    def __init__(self, conn: FalkorConnection) -> None:
        self.conn = conn

    # -- runs -------------------------------------------------------------------------------

    def add_run(self, fields: dict[str, Any]) -> None:
        self.conn.write(
            "CREATE (:StewardRun {id: $id, scope: $scope, dry_run: $dry_run, context: $context, "
            "service: $service, actor: $actor, started_at: $started_at, report: '{}'})",
            fields,
        )

    def finish_run(self, run_id: str, *, finished_at: datetime, report: dict[str, Any]) -> None:
        self.conn.write(
            "MATCH (r:StewardRun {id: $id}) SET r.finished_at = $at, r.report = $report",
            {"id": run_id, "at": finished_at, "report": json.dumps(report, default=str)},
        )

    def run_report(self, run_id: str | None) -> dict[str, Any] | None:
        where, params = ("WHERE r.id = $id", {"id": run_id}) if run_id else ("", {})
        rows = self.conn.read(
            f"MATCH (r:StewardRun) {where} RETURN r.report, r.started_at "
            "ORDER BY r.started_at DESC LIMIT 1",
            params,
        )
        if not rows:
            if run_id is not None:
                raise NotFound(f"no steward run with id {run_id!r}", id=run_id)
            return None
        report: dict[str, Any] = json.loads(rows[0][0] or "{}")
        return report

    def last_run_finished(self) -> datetime | None:
        rows = self.conn.read(
            "MATCH (r:StewardRun) WHERE r.finished_at IS NOT NULL "
            "RETURN r.finished_at ORDER BY r.finished_at DESC LIMIT 1"
        )
        return aware(rows[0][0]) if rows else None

    # -- findings ---------------------------------------------------------------------------

    def known_findings(self, fingerprints: Sequence[str]) -> dict[str, tuple[str, str, str]]:
        if not fingerprints:
            return {}
        rows = self.conn.read(
            "MATCH (f:Finding) WHERE f.fingerprint IN $prints "
            "RETURN f.fingerprint, f.id, f.status, f.evidence_hash ORDER BY f.created_at",
            {"prints": list(fingerprints)},
        )
        return {row[0]: (row[1], row[2], row[3]) for row in rows}

    def add_findings(self, findings: Sequence[tuple[dict[str, Any], Sequence[str]]]) -> None:
        """Findings and their FLAGS, FILE_CHUNK a transaction; a flag to a memory that is gone
        is left out, as on the embedded engine."""
        fields = ", ".join(f"{name}: r.{name}" for name in _FINDING_COLUMNS)
        for start in range(0, len(findings), FILE_CHUNK):
            chunk = findings[start : start + FILE_CHUNK]
            rows = [
                {name: f.get(name) for name in _FINDING_COLUMNS}
                | {"evidence": json.dumps(f["evidence"], default=str)}
                for f, _ in chunk
            ]
            for row in rows:
                row["confidence"] = _float(row["confidence"])
            flags = [
                {"f": f["id"], "m": memory_id}
                for f, memories in chunk
                for memory_id in dict.fromkeys(memories)
            ]
            with self.conn.transaction():
                self.conn.write(f"UNWIND $rows AS r CREATE (:Finding {{{fields}}})", {"rows": rows})
                if flags:
                    self.conn.write(
                        "UNWIND $rows AS r MATCH (f:Finding {id: r.f}), (m:Memory {id: r.m}) "
                        "CREATE (f)-[:FLAGS]->(m)",
                        {"rows": flags},
                    )

    def set_finding(self, finding_id: str, values: dict[str, Any]) -> None:
        assignments = ", ".join(f"f.{k} = $v_{k}" for k in values)
        self.conn.write(
            f"MATCH (f:Finding {{id: $id}}) SET {assignments}",
            {"id": finding_id, **{f"v_{k}": v for k, v in values.items()}},
        )

    def finding(self, finding_id: str) -> dict[str, Any]:
        rows = self.conn.read(
            f"MATCH (f:Finding {{id: $id}}) RETURN {RETURN_FINDING}", {"id": finding_id}
        )
        if not rows:
            raise NotFound(f"no finding with id {finding_id!r}", id=finding_id)
        return _finding(rows[0])

    def findings(
        self,
        *,
        status: str | None,
        kind: str | None = None,
        run: str | None = None,
        limit: int,
        sort: str = "confidence",
    ) -> list[dict[str, Any]]:
        clauses: list[str] = []
        params: dict[str, Any] = {"limit": limit}
        _equal_to("f", clauses, params, status=status, kind=kind, run=run)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self.conn.read(
            f"MATCH (f:Finding) {where} RETURN {RETURN_FINDING} "
            f"ORDER BY {_SORTS[sort]}, f.id LIMIT $limit",
            params,
        )
        return [_finding(row) for row in rows]

    def count_findings(self, status: str = "pending") -> dict[str, int]:
        rows = self.conn.read(
            "MATCH (f:Finding) WHERE f.status = $status RETURN f.kind, count(f)", {"status": status}
        )
        return {str(kind): int(n) for kind, n in rows}

    # -- the audit trail, by run ------------------------------------------------------------

    def audit(
        self,
        *,
        actor: str,
        action: str,
        target: str | None,
        item: str | None,
        before: Any,
        after: Any,
    ) -> None:
        self.audit_step(
            actor=actor, action=action, target=target, item=item, run=None, before=before,
            after=after,
        )  # fmt: skip

    def audit_step(
        self,
        *,
        actor: str,
        action: str,
        target: str | None,
        item: str | None,
        run: str | None,
        before: Any,
        after: Any,
    ) -> str:
        audit_id = new_id()
        self.conn.write(
            "CREATE (:Audit {id: $id, actor: $actor, action: $action, target: $target, "
            "item: $item, run: $run, before: $before, after: $after, at: $at})",
            {"id": audit_id, "actor": actor, "action": action, "target": target, "item": item,
             "run": run, "before": _json(before), "after": _json(after), "at": utcnow()},
        )  # fmt: skip
        return audit_id

    def audit_rows(self, run_or_action: str) -> list[dict[str, Any]]:
        rows = self.conn.read(
            "MATCH (a:Audit) WHERE a.run = $key OR a.id = $key OR a.item = $key "
            "RETURN a.id, a.action, a.target, a.item, a.run, a.before, a.after, a.undone_at "
            "ORDER BY a.at DESC",
            {"key": run_or_action},
        )
        names = ("id", "action", "target", "item", "run", "before", "after", "undone_at")
        found = []
        for row in rows:
            entry = dict(zip(names, row, strict=True))
            entry["before"] = json.loads(entry["before"] or "null")
            entry["after"] = json.loads(entry["after"] or "null")
            entry["undone_at"] = from_micros(entry["undone_at"])
            found.append(entry)
        return found

    def recent_audit(self, limit: int) -> list[dict[str, Any]]:
        rows = self.conn.read(
            "MATCH (a:Audit) RETURN a.id, a.actor, a.action, a.target, a.item, a.run, a.at, "
            "a.undone_at ORDER BY a.at DESC, a.id DESC LIMIT $limit",
            {"limit": limit},
        )
        names = ("id", "actor", "action", "target", "item", "run", "at", "undone_at")
        found = []
        for row in rows:
            entry = dict(zip(names, row, strict=True))
            entry["at"], entry["undone_at"] = (
                from_micros(entry["at"]),
                from_micros(entry["undone_at"]),
            )
            found.append(entry)
        return found

    def mark_undone(self, audit_id: str, at: datetime) -> None:
        self.conn.write(
            "MATCH (a:Audit {id: $id}) SET a.undone_at = $at", {"id": audit_id, "at": at}
        )

    # -- the policy -------------------------------------------------------------------------

    def meta_json(self, key: str) -> dict[str, Any] | None:
        value = self.conn.meta_get(key)
        return json.loads(value) if value else None

    def set_meta_json(self, key: str, value: dict[str, Any]) -> None:
        self.conn.meta_set(key, json.dumps(value))

    # -- what detection reads ---------------------------------------------------------------

    def live_memory_rows(
        self, *, context: str | None, service: str | None
    ) -> list[tuple[str, str, str, str | None, str, str | None, str, float, int, datetime]]:
        clauses = [LIVE, OWN_RECORDS]
        params: dict[str, Any] = {}
        _equal_to("m", clauses, params, context=context, service=service)
        rows = self.conn.read(
            f"MATCH (m:Memory) WHERE {' AND '.join(clauses)} RETURN m.id, m.kind, m.type, "
            "m.context, m.content, m.title, m.lifecycle, m.importance, "
            "coalesce(m.access_count, 0), m.created_at",
            params,
        )
        return [
            (i, kind, mtype, context, content, title, lifecycle, float(importance), int(n),
             _time(created))
            for i, kind, mtype, context, content, title, lifecycle, importance, n, created in rows
        ]  # fmt: skip

    def count_live(self) -> int:
        rows = self.conn.read(f"MATCH (m:Memory) WHERE {LIVE} AND {OWN_RECORDS} RETURN count(m)")
        return int(rows[0][0]) if rows else 0

    def verified_ids(self, memory_ids: Sequence[str]) -> set[str]:
        rows = self.conn.read(
            "UNWIND $ids AS i MATCH (m:Memory {id: i}) WHERE m.verify_status = 'verified' "
            "RETURN m.id",
            {"ids": list(dict.fromkeys(memory_ids))},
        )
        return {r[0] for r in rows}

    def entity_sets(self, memory_ids: Sequence[str]) -> dict[str, set[str]]:
        """The entities each memory mentions: for many memories, every live memory's mentions
        in one scan rather than thousands of lookups by id."""
        wanted = set(memory_ids)
        if len(wanted) > 1000:
            rows = self.conn.read(
                f"MATCH (m:Memory)-[:MENTIONS]->(e:Entity) WHERE {LIVE} RETURN m.id, e.id"
            )
        else:
            rows = self.conn.read(
                "UNWIND $ids AS i MATCH (m:Memory {id: i})-[:MENTIONS]->(e:Entity) "
                "RETURN m.id, e.id",
                {"ids": list(wanted)},
            )
        found: dict[str, set[str]] = {}
        for memory_id, entity_id in rows:
            FOREGROUND.step_aside()
            if memory_id in wanted:
                found.setdefault(memory_id, set()).add(entity_id)
        return found

    def live_facts(self) -> list[tuple[str, str, str, str, str, str]]:
        rows = self.conn.read(
            "MATCH (f:Fact)-[:EXTRACTED_FROM]->(m:Memory) "
            f"WHERE {LIVE} AND {OWN_RECORDS} "
            "MATCH (f)-[:SUBJECT]->(s:Entity), (f)-[:OBJECT]->(o:Entity) "
            "RETURN m.id, s.id, f.predicate, o.id, s.name, o.name"
        )
        return [(a, b, c, d, e, f) for a, b, c, d, e, f in rows]

    def avoid_pairs(self) -> set[tuple[str, str]]:
        rows = self.conn.read("MATCH (d:Memory)-[:AVOIDS]->(x:Memory) RETURN d.id, x.id")
        return {(a, b) for a, b in rows}

    def superseded_but_live(self) -> list[tuple[str, str]]:
        rows = self.conn.read(
            "MATCH (n:Memory)-[:SUPERSEDES]->(m:Memory) "
            f"WHERE {LIVE} AND n.lifecycle IN ['active', 'canonical'] RETURN n.id, m.id"
        )
        return [(a, b) for a, b in rows]

    def stale_rows(
        self, *, before: datetime, context: str | None, service: str | None
    ) -> list[tuple[str, str, datetime | None, datetime | None, datetime]]:
        clauses = [
            LIVE, "m.type <> 'working'", OWN_RECORDS,
            "(m.verified_at IS NULL OR m.verified_at < $before)",
            "(m.accessed_at IS NULL OR m.accessed_at < $before)", "m.created_at < $before",
        ]  # fmt: skip
        params: dict[str, Any] = {"before": before}
        _equal_to("m", clauses, params, context=context, service=service)
        rows = self.conn.read(
            f"MATCH (m:Memory) WHERE {' AND '.join(clauses)} "
            "RETURN m.id, m.kind, m.verified_at, m.accessed_at, m.created_at",
            params,
        )
        return [
            (i, kind, from_micros(verified), from_micros(accessed), _time(created))
            for i, kind, verified, accessed, created in rows
        ]

    def expired_working(
        self, *, before: datetime, context: str | None, service: str | None
    ) -> list[tuple[str, datetime]]:
        clauses = [LIVE, "m.type = 'working'", "m.created_at < $before"]
        params: dict[str, Any] = {"before": before}
        _equal_to("m", clauses, params, context=context, service=service)
        rows = self.conn.read(
            f"MATCH (m:Memory) WHERE {' AND '.join(clauses)} RETURN m.id, m.created_at", params
        )
        return [(a, _time(b)) for a, b in rows]

    def reference_counts(self) -> dict[str, int]:
        """AVOIDS, SUPERSEDES and MERGED_INTO edges in, and the entities a live memory shares
        with canonical entries."""
        counts: dict[str, int] = {}
        rows = self.conn.read(
            "MATCH (x:Memory)-[r:AVOIDS|SUPERSEDES|MERGED_INTO]->(m:Memory) "
            f"WHERE {LIVE} RETURN m.id, count(r)"
        )
        rows += self.conn.read(
            "MATCH (c:Memory)-[:MENTIONS]->(e:Entity)<-[:MENTIONS]-(m:Memory) "
            f"WHERE c.lifecycle = 'canonical' AND m.id <> c.id AND {LIVE} "
            "RETURN m.id, count(DISTINCT e)"
        )
        for memory_id, n in rows:
            counts[memory_id] = counts.get(memory_id, 0) + int(n)
        return counts

    def write_reference_counts(self, counts: dict[str, int]) -> None:
        rows = [{"id": k, "n": v} for k, v in counts.items()]
        with self.conn.transaction():
            self.conn.write(
                "MATCH (m:Memory) WHERE m.reference_count > 0 SET m.reference_count = 0"
            )
            for start in range(0, len(rows), WRITE_CHUNK):
                self.conn.write(
                    "UNWIND $rows AS r MATCH (m:Memory {id: r.id}) SET m.reference_count = r.n",
                    {"rows": rows[start : start + WRITE_CHUNK]},
                )

    def sweepable(
        self, *, before: datetime, max_importance: float
    ) -> list[tuple[str, str, datetime]]:
        """A pattern predicate where the embedded engine has an EXISTS subquery (FalkorDB has
        none)."""
        rows = self.conn.read(
            "MATCH (m:Memory) WHERE m.lifecycle = 'active' "
            "AND m.type IN ['episodic', 'working'] AND NOT m.kind IN ['summary', 'incident', "
            "'postmortem', 'decision', 'dead_end'] AND m.created_at < $before "
            "AND m.importance <= $max AND coalesce(m.access_count, 0) = 0 "
            "AND coalesce(m.reference_count, 0) = 0 "
            "AND NOT (:Memory)-[:AVOIDS|SUPERSEDES|MERGED_INTO]->(m) "
            "RETURN m.id, m.type, m.created_at",
            {"before": before, "max": max_importance},
        )
        return [(a, b, _time(c)) for a, b, c in rows]

    def orphan_entities(self) -> list[tuple[str, str]]:
        """(id, name) of entities no memory or chunk mentions and no fact names."""
        rows = self.conn.read(
            "MATCH (e:Entity) WHERE NOT ()-[:MENTIONS]->(e) AND NOT (:Fact)-->(e) "
            "RETURN e.id, e.name"
        )
        return [(a, b) for a, b in rows]

    def entity_names(self) -> list[tuple[str, str, str]]:
        rows = self.conn.read("MATCH (e:Entity) RETURN e.id, e.name, e.label")
        return [(str(i), str(n), str(lab)) for i, n, lab in rows]

    def entity_mentions(self) -> list[tuple[str, str, str]]:
        rows = [
            *self.conn.read(
                f"MATCH (m:Memory)-[r:MENTIONS]->(e:Entity) WHERE {LIVE} RETURN m.id, e.id, r.name"
            ),
            *self.conn.read("MATCH (c:Chunk)-[r:MENTIONS]->(e:Entity) RETURN c.id, e.id, r.name"),
        ]
        return [(str(s), str(e), str(n or "")) for s, e, n in rows]

    def orphan_review_items(self) -> list[tuple[str, str]]:
        rows = self.conn.read(
            "MATCH (r:ReviewItem) WHERE r.status = 'pending' AND r.target IS NOT NULL "
            "OPTIONAL MATCH (m:Memory {id: r.target}) WITH r, m WHERE m IS NULL "
            "RETURN r.id, r.target"
        )
        return [(a, b) for a, b in rows]

    # -- sedimentation ----------------------------------------------------------------------

    def sediment_table(self) -> pa.Table:
        """The embedded engine's arrow table: its columns and types, times naive UTC."""
        rows = self.conn.read(
            f"MATCH (m:Memory) WHERE {LIVE} AND {OWN_RECORDS} "
            "RETURN m.id, m.layer, m.layer_at, m.layer_by, m.lifecycle, m.created_at, "
            "m.accessed_at, coalesce(m.targeted_count, 0)"
        )
        columns = list(zip(*rows, strict=True)) if rows else [()] * len(_SEDIMENT)
        return pa.table(
            [pa.array(values, f.type) for values, f in zip(columns, _SEDIMENT, strict=True)],
            schema=_SEDIMENT,
        )

    def layer_states(
        self, memory_ids: Sequence[str]
    ) -> dict[str, tuple[str | None, datetime | None, str | None]]:
        rows = self.conn.read(
            "UNWIND $ids AS i MATCH (m:Memory {id: i}) RETURN m.id, m.layer, m.layer_at, "
            "m.layer_by",
            {"ids": list(memory_ids)},
        )
        return {row[0]: (row[1], from_micros(row[2]), row[3]) for row in rows}

    def set_layers(
        self, layers: Sequence[tuple[str, str | None, datetime | None, str | None]]
    ) -> None:
        rows = [{"id": i, "layer": name, "at": at, "by": by} for i, name, at, by in layers]
        with self.conn.transaction():
            for start in range(0, len(rows), WRITE_CHUNK):
                self.conn.write(
                    "UNWIND $rows AS r MATCH (m:Memory {id: r.id}) "
                    "SET m.layer = r.layer, m.layer_at = r.at, m.layer_by = r.by",
                    {"rows": rows[start : start + WRITE_CHUNK]},
                )
            self.conn.emit(LayersSet({i: name for i, name, _, _ in layers}))

    # -- what an undo restores --------------------------------------------------------------

    def memory_state(self, memory_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        returns = ", ".join(["m.id", *("m." + f for f in STATE)])
        rows = self.conn.read(
            f"UNWIND $ids AS i MATCH (m:Memory {{id: i}}) RETURN {returns}",
            {"ids": list(dict.fromkeys(memory_ids))},
        )
        found: dict[str, dict[str, Any]] = {}
        for row in rows:
            state = dict(zip(STATE, row[1:], strict=True))
            for name in _TIMES:
                state[name] = from_micros(state[name])
            state["importance"] = _float(state["importance"])
            found[row[0]] = state
        return found

    def restore_state(self, memory_id: str, state: dict[str, Any]) -> None:
        values = {k: _time_value(v) if k in _TIMES else v for k, v in state.items() if k in STATE}
        if "importance" in values:  # a DOUBLE on the embedded engine, whatever JSON gave back
            values["importance"] = _float(values["importance"])
        assignments = ", ".join(f"m.{k} = $v_{k}" for k in values)
        with self.conn.transaction():
            self.conn.write(
                f"MATCH (m:Memory {{id: $id}}) SET {assignments}",
                {"id": memory_id, **{f"v_{k}": v for k, v in values.items()}},
            )
            self.conn.emit(MemoriesChanged([memory_id]))

    def delete_edge(self, rel: str, source: str, target: str) -> None:
        if rel not in ("MERGED_INTO", "SUPERSEDES"):
            raise ValueError(f"not an edge the steward makes: {rel}")
        self.conn.write(
            f"MATCH (a:Memory {{id: $a}})-[r:{rel}]->(b:Memory {{id: $b}}) DELETE r",
            {"a": source, "b": target},
        )


def _time(value: int) -> datetime:
    found = from_micros(value)
    assert found is not None  # a memory's created_at is always set
    return found
