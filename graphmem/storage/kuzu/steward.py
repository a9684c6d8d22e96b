"""The steward's runs, findings and audit rows in Kùzu, and the reads detection needs: live
memories by group, facts of live memories, superseded-but-live memories, orphans."""

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
from graphmem.models import as_utc, stored_time, utcnow
from graphmem.storage.kuzu.connection import KuzuConnection
from graphmem.storage.kuzu.memory_rows import by_id
from graphmem.storage.kuzu.values import equal_to, time_value

FINDING_FIELDS = (
    "id", "run", "kind", "scope", "targets", "confidence", "action", "summary", "status", "auto",
    "error", "note", "created_at", "resolved_at", "resolved_by",
)  # fmt: skip
FILE_CHUNK = 500
_FINDING_COLUMNS = (
    "id", "run", "kind", "scope", "targets", "evidence", "evidence_hash", "fingerprint",
    "confidence", "action", "summary", "status", "auto", "error", "note", "created_at",
)  # fmt: skip
_FINDING_ARROW = {
    "targets": pa.list_(pa.string()), "confidence": pa.float64(), "auto": pa.bool_(),
    "created_at": pa.timestamp("us", tz="UTC"),
}  # fmt: skip
RETURN_FINDING = ", ".join(f"f.{name}" for name in FINDING_FIELDS) + ", f.evidence"
LIVE = "m.lifecycle IN ['active', 'canonical']"
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


def _finding(row: list[Any]) -> dict[str, Any]:
    found = dict(zip(FINDING_FIELDS, row[:-1], strict=True))
    found["evidence"] = json.loads(row[-1] or "{}")
    found["targets"] = list(found["targets"] or [])
    return found


class KuzuSteward:
    """graphmem.storage.protocols.Steward over one connection."""

    def __init__(self, conn: KuzuConnection) -> None:
        self.conn = conn

    # -- runs ----------------------------------------------------------------------------------

    def add_run(self, fields: dict[str, Any]) -> None:
        self.conn.execute(
            "CREATE (:StewardRun {id: $id, scope: $scope, dry_run: $dry_run, context: $context, "
            "service: $service, actor: $actor, started_at: $started_at, report: '{}'})",
            fields,
        )

    def finish_run(self, run_id: str, *, finished_at: datetime, report: dict[str, Any]) -> None:
        self.conn.execute(
            "MATCH (r:StewardRun {id: $id}) SET r.finished_at = $at, r.report = $report",
            {"id": run_id, "at": finished_at, "report": json.dumps(report, default=str)},
        )

    def run_report(self, run_id: str | None) -> dict[str, Any] | None:
        """A run's stored report (the newest run's when `run_id` is None)."""
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
        return as_utc(rows[0][0]) if rows else None

    # -- findings ------------------------------------------------------------------------------

    def known_findings(self, fingerprints: Sequence[str]) -> dict[str, tuple[str, str, str]]:
        """fingerprint -> (id, status, evidence hash) of the newest finding with it."""
        if not fingerprints:
            return {}
        rows = self.conn.read(
            "MATCH (f:Finding) WHERE f.fingerprint IN $prints "
            "RETURN f.fingerprint, f.id, f.status, f.evidence_hash ORDER BY f.created_at",
            {"prints": list(fingerprints)},
        )
        return {row[0]: (row[1], row[2], row[3]) for row in rows}

    def add_findings(self, findings: Sequence[tuple[dict[str, Any], Sequence[str]]]) -> None:
        """Findings in bulk, FILE_CHUNK a transaction, and FLAGS to their memories: a first run
        over 100k memories files 11k (one statement each took 2 ms)."""
        for start in range(0, len(findings), FILE_CHUNK):
            chunk = findings[start : start + FILE_CHUNK]
            rows = [{**f, "evidence": json.dumps(f["evidence"], default=str)} for f, _ in chunk]
            table = pa.table(
                {name: pa.array([r[name] for r in rows], _FINDING_ARROW.get(name, pa.string()))
                 for name in _FINDING_COLUMNS}
            )  # fmt: skip
            with self.conn.transaction():
                fields = ", ".join(f"{name}: {name}" for name in _FINDING_COLUMNS)
                self.conn.query_result(f"LOAD FROM $t CREATE (:Finding {{{fields}}})", {"t": table})
                for fields_of, memories in chunk:
                    for memory_id in dict.fromkeys(memories):  # by key, both ends
                        self.conn.execute(
                            "MATCH (f:Finding {id: $id}), (m:Memory {id: $m}) "
                            "CREATE (f)-[:FLAGS]->(m)",
                            {"id": fields_of["id"], "m": memory_id},
                        )

    def set_finding(self, finding_id: str, values: dict[str, Any]) -> None:
        assignments = ", ".join(f"f.{k} = $v_{k}" for k in values)
        self.conn.execute(
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
        equal_to("f", clauses, params, status=status, kind=kind, run=run)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self.conn.read(
            f"MATCH (f:Finding) {where} RETURN {RETURN_FINDING} "
            f"ORDER BY {_SORTS[sort]}, f.id LIMIT $limit",
            params,
        )
        return [_finding(row) for row in rows]

    def count_findings(self, status: str = "pending") -> dict[str, int]:
        rows = self.conn.read(
            "MATCH (f:Finding) WHERE f.status = $status RETURN f.kind, count(*)", {"status": status}
        )
        return {str(kind): int(n) for kind, n in rows}

    # -- the audit trail, by run ---------------------------------------------------------------

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
        """Who changed what, when, from what to what (the JSON of the memory before and after)."""
        self.conn.execute(
            "CREATE (:Audit {id: $id, actor: $actor, action: $action, target: $target, "
            "item: $item, before: $before, after: $after, at: $at})",
            {"id": new_id(), "actor": actor, "action": action, "target": target, "item": item,
             "before": json.dumps(before, default=str, ensure_ascii=False),
             "after": json.dumps(after, default=str, ensure_ascii=False), "at": utcnow()},
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
        self.conn.execute(
            "CREATE (:Audit {id: $id, actor: $actor, action: $action, target: $target, "
            "item: $item, run: $run, before: $before, after: $after, at: $at})",
            {"id": audit_id, "actor": actor, "action": action, "target": target, "item": item,
             "run": run, "before": json.dumps(before, default=str, ensure_ascii=False),
             "after": json.dumps(after, default=str, ensure_ascii=False), "at": utcnow()},
        )  # fmt: skip
        return audit_id

    def audit_rows(self, run_or_action: str) -> list[dict[str, Any]]:
        """The audit rows of a run, of a finding, or the one row with that id, newest first."""
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
            found.append(entry)
        return found

    def recent_audit(self, limit: int) -> list[dict[str, Any]]:
        rows = self.conn.read(
            "MATCH (a:Audit) RETURN a.id, a.actor, a.action, a.target, a.item, a.run, a.at, "
            "a.undone_at ORDER BY a.at DESC, a.id DESC LIMIT $limit",
            {"limit": limit},
        )
        names = ("id", "actor", "action", "target", "item", "run", "at", "undone_at")
        return [dict(zip(names, row, strict=True)) for row in rows]

    def mark_undone(self, audit_id: str, at: datetime) -> None:
        self.conn.execute(
            "MATCH (a:Audit {id: $id}) SET a.undone_at = $at", {"id": audit_id, "at": at}
        )

    # -- the policy ----------------------------------------------------------------------------

    def meta_json(self, key: str) -> dict[str, Any] | None:
        rows = self.conn.read("MATCH (k:_Meta {key: $key}) RETURN k.value", {"key": key})
        return json.loads(rows[0][0]) if rows and rows[0][0] else None

    def set_meta_json(self, key: str, value: dict[str, Any]) -> None:
        self.conn.execute(
            "MERGE (k:_Meta {key: $key}) SET k.value = $value",
            {"key": key, "value": json.dumps(value)},
        )

    # -- what detection reads ------------------------------------------------------------------

    def live_memory_rows(
        self, *, context: str | None, service: str | None
    ) -> list[tuple[str, str, str, str | None, str, str | None, str, float, int, datetime]]:
        """(id, kind, type, context, content, title, lifecycle, importance, access count, created) of
        every live memory, sessions' own records left out."""
        clauses = [LIVE, "NOT m.kind IN ['summary', 'checkpoint']"]
        params: dict[str, Any] = {}
        equal_to("m", clauses, params, context=context, service=service)
        return self.conn.read_tuples(
            f"MATCH (m:Memory) WHERE {' AND '.join(clauses)} RETURN m.id, m.kind, m.type, "
            "m.context, m.content, m.title, m.lifecycle, m.importance, coalesce(m.access_count, 0), "
            "m.created_at",
            params,
        )

    def count_live(self) -> int:
        """Live memories, sessions' own records left out: what detection looks at."""
        rows = self.conn.read(
            f"MATCH (m:Memory) WHERE {LIVE} AND NOT m.kind IN ['summary', 'checkpoint'] "
            "RETURN count(m)"
        )
        return int(rows[0][0])

    def verified_ids(self, memory_ids: Sequence[str]) -> set[str]:
        """Which of the memories were verified at their last check."""
        rows = self.conn.read(
            "MATCH (m:Memory) WHERE m.id IN $ids AND m.verify_status = 'verified' RETURN m.id",
            {"ids": list(memory_ids)},
        )
        return {r[0] for r in rows}

    def entity_sets(self, memory_ids: Sequence[str]) -> dict[str, set[str]]:
        """The entities each memory mentions: for many memories, every live memory's mentions
        in one scan (an `IN` list of thousands of ids costs Kùzu a comparison per id per row:
        0.7 s at 10k memories against 0.1 s)."""
        wanted = set(memory_ids)
        if len(wanted) > 1000:
            rows = self.conn.read_tuples(
                f"MATCH (m:Memory)-[:MENTIONS]->(e:Entity) WHERE {LIVE} RETURN m.id, e.id"
            )
        else:
            rows = self.conn.read_tuples(
                "MATCH (m:Memory)-[:MENTIONS]->(e:Entity) WHERE m.id IN $ids RETURN m.id, e.id",
                {"ids": list(wanted)},
            )
        found: dict[str, set[str]] = {}
        for memory_id, entity_id in rows:
            FOREGROUND.step_aside()
            if memory_id in wanted:
                found.setdefault(memory_id, set()).add(entity_id)
        return found

    def live_facts(self) -> list[tuple[str, str, str, str, str, str]]:
        """(memory id, subject id, predicate, object id, subject name, object name) of the facts
        extracted from live memories."""
        return self.conn.read_tuples(
            "MATCH (f:Fact)-[:EXTRACTED_FROM]->(m:Memory) "
            f"WHERE {LIVE} AND NOT m.kind IN ['summary', 'checkpoint'] "
            "MATCH (f)-[:SUBJECT]->(s:Entity), (f)-[:OBJECT]->(o:Entity) "
            "RETURN m.id, s.id, f.predicate, o.id, s.name, o.name"
        )

    def avoid_pairs(self) -> set[tuple[str, str]]:
        rows = self.conn.read("MATCH (d:Memory)-[:AVOIDS]->(x:Memory) RETURN d.id, x.id")
        return {(a, b) for a, b in rows}

    def superseded_but_live(self) -> list[tuple[str, str]]:
        """(newer, older) where the older is still live though a newer one supersedes it."""
        rows = self.conn.read(
            "MATCH (n:Memory)-[:SUPERSEDES]->(m:Memory) "
            f"WHERE {LIVE} AND n.lifecycle IN ['active', 'canonical'] RETURN n.id, m.id"
        )
        return [(a, b) for a, b in rows]

    def stale_rows(
        self, *, before: datetime, context: str | None, service: str | None
    ) -> list[tuple[str, str, datetime | None, datetime | None, datetime]]:
        """Live memories neither verified nor used since `before`, written before it:
        (id, kind, verified_at, accessed_at, created_at)."""
        clauses = [
            LIVE, "m.type <> 'working'", "NOT m.kind IN ['summary', 'checkpoint']",
            "(m.verified_at IS NULL OR m.verified_at < $before)",
            "(m.accessed_at IS NULL OR m.accessed_at < $before)", "m.created_at < $before",
        ]  # fmt: skip
        params: dict[str, Any] = {"before": before}
        equal_to("m", clauses, params, context=context, service=service)
        rows = self.conn.read(
            f"MATCH (m:Memory) WHERE {' AND '.join(clauses)} "
            "RETURN m.id, m.kind, m.verified_at, m.accessed_at, m.created_at",
            params,
        )
        return [tuple(row) for row in rows]

    def expired_working(
        self, *, before: datetime, context: str | None, service: str | None
    ) -> list[tuple[str, datetime]]:
        clauses = [LIVE, "m.type = 'working'", "m.created_at < $before"]
        params: dict[str, Any] = {"before": before}
        equal_to("m", clauses, params, context=context, service=service)
        rows = self.conn.read(
            f"MATCH (m:Memory) WHERE {' AND '.join(clauses)} RETURN m.id, m.created_at", params
        )
        return [(a, b) for a, b in rows]

    def reference_counts(self) -> dict[str, int]:
        """What other knowledge points at each live memory: AVOIDS, SUPERSEDES and MERGED_INTO
        edges in, and the entities it shares with canonical entries."""
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
        with self.conn.transaction():
            self.conn.execute(
                "MATCH (m:Memory) WHERE m.reference_count > 0 SET m.reference_count = 0"
            )
            rows = [{"id": k, "n": v} for k, v in counts.items()]
            for start in range(0, len(rows), 10_000):
                self.conn.execute(
                    "UNWIND $rows AS r MATCH (m:Memory {id: r.id}) SET m.reference_count = r.n",
                    {"rows": rows[start : start + 10_000]},
                )

    def sweepable(
        self, *, before: datetime, max_importance: float
    ) -> list[tuple[str, str, datetime]]:
        """Live episodic and working memories older than `before`, at most `max_importance`,
        never used and referenced by nothing: (id, type, created_at)."""
        rows = self.conn.read(
            "MATCH (m:Memory) WHERE m.lifecycle = 'active' "
            "AND m.type IN ['episodic', 'working'] AND NOT m.kind IN ['summary', 'incident', "
            "'postmortem', 'decision', 'dead_end'] AND m.created_at < $before "
            "AND m.importance <= $max AND coalesce(m.access_count, 0) = 0 "
            "AND coalesce(m.reference_count, 0) = 0 "
            "AND NOT EXISTS { MATCH (:Memory)-[:AVOIDS|SUPERSEDES|MERGED_INTO]->(m) } "
            "RETURN m.id, m.type, m.created_at",
            {"before": before, "max": max_importance},
        )
        return [(a, b, c) for a, b, c in rows]

    def orphan_entities(self) -> list[tuple[str, str]]:
        """(id, name) of entities no memory or chunk mentions and no fact names."""
        rows = self.conn.read(
            "MATCH (e:Entity) WHERE NOT EXISTS { MATCH ()-[:MENTIONS]->(e) } "
            "AND NOT EXISTS { MATCH (:Fact)-[]->(e) } RETURN e.id, e.name"
        )
        return [(a, b) for a, b in rows]

    def entity_names(self) -> list[tuple[str, str, str]]:
        rows = self.conn.read_tuples("MATCH (e:Entity) RETURN e.id, e.name, e.label")
        return [(str(i), str(n), str(lab)) for i, n, lab in rows]

    def entity_mentions(self) -> list[tuple[str, str, str]]:
        rows = [
            *self.conn.read_tuples(
                f"MATCH (m:Memory)-[r:MENTIONS]->(e:Entity) WHERE {LIVE} RETURN m.id, e.id, r.name"
            ),
            *self.conn.read_tuples(
                "MATCH (c:Chunk)-[r:MENTIONS]->(e:Entity) RETURN c.id, e.id, r.name"
            ),
        ]
        return [(str(s), str(e), str(n or "")) for s, e, n in rows]

    def orphan_review_items(self) -> list[tuple[str, str]]:
        """(item id, target) of pending review items whose target memory is gone."""
        rows = self.conn.read(
            "MATCH (r:ReviewItem) WHERE r.status = 'pending' AND r.target IS NOT NULL "
            "OPTIONAL MATCH (m:Memory {id: r.target}) WITH r, m WHERE m IS NULL "
            "RETURN r.id, r.target"
        )
        return [(a, b) for a, b in rows]

    # -- sedimentation -------------------------------------------------------------------------

    def sediment_table(self) -> pa.Table:
        """What the sediment cycle decides by, for every live memory (sessions' own records left
        out), in one arrow scan: id, layer, layer_at, layer_by, lifecycle, created_at,
        accessed_at, targeted (uses an id or a filter asked for)."""
        return self.conn.read_arrow(
            f"MATCH (m:Memory) WHERE {LIVE} AND NOT m.kind IN ['summary', 'checkpoint'] "
            "RETURN m.id AS id, m.layer AS layer, m.layer_at AS layer_at, "
            "m.layer_by AS layer_by, m.lifecycle AS lifecycle, m.created_at AS created_at, "
            "m.accessed_at AS accessed_at, coalesce(m.targeted_count, 0) AS targeted"
        )

    def layer_states(
        self, memory_ids: Sequence[str]
    ) -> dict[str, tuple[str | None, datetime | None, str | None]]:
        """(layer, layer_at, layer_by) of each memory found, as stored (a null layer: surface)."""
        rows = self.conn.read(
            "UNWIND $ids AS i MATCH (m:Memory {id: i}) RETURN m.id, m.layer, m.layer_at, "
            "m.layer_by",
            {"ids": list(memory_ids)},
        )
        return {row[0]: (row[1], row[2], row[3]) for row in rows}

    def set_layers(
        self, layers: Sequence[tuple[str, str | None, datetime | None, str | None]]
    ) -> None:
        """Set (id, layer, layer_at, layer_by) of each memory, in the caller's transaction or
        one of its own; recall's columns follow once it commits. Loaded from arrow: Kùzu takes
        10,000 rows in ~0.06 s so, and ~2.4 s as an UNWIND of maps."""
        ids, names, times, how = zip(*layers, strict=True) if layers else ((), (), (), ())
        table = pa.table(
            {
                "id": pa.array(ids, pa.string()),
                "layer": pa.array(names, pa.string()),
                "at": pa.array([None if t is None else stored_time(t) for t in times],
                               pa.timestamp("us")),
                "by": pa.array(how, pa.string()),
            }
        )  # fmt: skip
        with self.conn.transaction():
            for start in range(0, len(ids), 50_000):
                self.conn.query_result(
                    "LOAD FROM $rows MATCH (m:Memory {id: id}) "
                    "SET m.layer = layer, m.layer_at = at, m.layer_by = by",
                    {"rows": table.slice(start, 50_000)},
                )
            self.conn.emit(LayersSet(dict(zip(ids, names, strict=True))))

    # -- what an undo restores ------------------------------------------------------------------

    def memory_state(self, memory_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The fields a steward action may change, of each memory, as they are now."""
        returns = ", ".join(["m.id", *("m." + f for f in STATE)])
        rows = by_id(self.conn, list(dict.fromkeys(memory_ids)), returns)  # by key: few ids
        return {row[0]: dict(zip(STATE, row[1:], strict=True)) for row in rows}

    def restore_state(self, memory_id: str, state: dict[str, Any]) -> None:
        """Put back fields `memory_state` read (times come back from JSON as ISO strings)."""
        values = {k: time_value(v) if k in _TIMES else v for k, v in state.items() if k in STATE}
        assignments = ", ".join(f"m.{k} = $v_{k}" for k in values)
        with self.conn.transaction():
            self.conn.execute(
                f"MATCH (m:Memory {{id: $id}}) SET {assignments}",
                {"id": memory_id, **{f"v_{k}": v for k, v in values.items()}},
            )
            self.conn.emit(MemoriesChanged([memory_id]))

    def delete_edge(self, rel: str, source: str, target: str) -> None:
        if rel not in ("MERGED_INTO", "SUPERSEDES"):
            raise ValueError(f"not an edge the steward makes: {rel}")
        self.conn.execute(
            f"MATCH (a:Memory {{id: $a}})-[r:{rel}]->(b:Memory {{id: $b}}) DELETE r",
            {"a": source, "b": target},
        )
