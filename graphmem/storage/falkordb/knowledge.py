"""Knowledge over time in FalkorDB: supersession chains, merges, dead ends a decision avoids,
citations of files and documents, verification; the same graph as the embedded engines
(SUPERSEDES, MERGED_INTO, AVOIDS, CITES) with times as microseconds.

A transaction here is one query sent at its end (graphmem.storage.falkordb.connection): every
check reads before anything is buffered, and what a write needs of the store (the successor's
valid_from, a duplicate's validity) is taken in the statement itself, where it is the state
at commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from graphmem.errors import Conflict, InvalidInput, NotFound
from graphmem.indexes.changes import MemoriesChanged
from graphmem.models import Memory, MemoryFilter
from graphmem.storage.falkordb.connection import FalkorConnection
from graphmem.storage.falkordb.memories import FalkorMemories
from graphmem.storage.falkordb.memory_rows import RETURN_MEMORY, row_to_memory
from graphmem.storage.falkordb.values import from_micros
from graphmem.storage.protocols.knowledge import Version

MAX_CHAIN = 30  # versions followed along SUPERSEDES, as on the embedded engines

SETTABLE = frozenset(
    {"lifecycle", "lifecycle_reason", "owner", "importance", "verified_at", "verify_status",
     "verify_method", "verify_note", "updated_at"}
)  # fmt: skip

# memory-to-memory relations, and how each reads from either end
_LINKS = (
    ("SUPERSEDES", "supersedes", "superseded_by"),
    ("MERGED_INTO", "merged_into", "merged_from"),
    ("AVOIDS", "avoids", "avoided_by"),
)


class FalkorKnowledge:
    """graphmem.storage.protocols.Knowledge over one connection."""

    def __init__(self, conn: FalkorConnection, memories: FalkorMemories) -> None:
        self.conn = conn
        self.memories = memories

    def _require(self, *ids: str) -> None:
        found = self.memories.existing_ids(list(ids))
        for memory_id in ids:
            if memory_id not in found:
                raise NotFound(f"no memory with id {memory_id!r}", id=memory_id)

    # -- writes -----------------------------------------------------------------------------

    def supersede(self, old_id: str, *, reason: str, new_id: str | None, at: datetime) -> None:
        """The checks read first; the old memory's validity closes at the successor's
        valid_from as the statement finds it at commit. A successor another node linked
        meanwhile wins: the statement then leaves the memory as it is, so a chain never forks."""
        if new_id == old_id:
            raise InvalidInput("a memory cannot supersede itself", id=old_id)
        self._require(old_id, *([new_id] if new_id else []))
        already = self.conn.read(
            "MATCH (n:Memory)-[:SUPERSEDES]->(o:Memory {id: $old}) RETURN n.id LIMIT 1",
            {"old": old_id},
        )
        if already:
            raise Conflict(
                f"{old_id} is already superseded by {already[0][0]}; supersede that one instead",
                id=old_id,
                superseded_by=already[0][0],
            )
        if new_id and self.conn.read(
            f"MATCH (o:Memory {{id: $old}})-[:SUPERSEDES*1..{MAX_CHAIN}]->(n:Memory {{id: $new}}) "
            "RETURN n.id LIMIT 1",
            {"old": old_id, "new": new_id},
        ):
            raise Conflict(f"{new_id} is already an older version of {old_id}", id=new_id)
        state = {"reason": reason, "at": at, "old": old_id}
        with self.conn.transaction():
            if new_id:
                self.conn.write(
                    "MATCH (n:Memory {id: $new}), (o:Memory {id: $old}) "
                    "WHERE NOT (:Memory)-[:SUPERSEDES]->(o) "
                    "MERGE (n)-[s:SUPERSEDES]->(o) SET s.at = $at, s.reason = $reason, "
                    "o.lifecycle = 'superseded', o.lifecycle_reason = $reason, "
                    "o.valid_to = coalesce(n.valid_from, $at), o.updated_at = $at",
                    {**state, "new": new_id},
                    entity_graph=True,
                )
            else:
                self.conn.write(
                    "MATCH (o:Memory {id: $old}) WHERE NOT (:Memory)-[:SUPERSEDES]->(o) "
                    "SET o.lifecycle = 'outdated', "
                    "o.lifecycle_reason = $reason, o.valid_to = $at, o.updated_at = $at",
                    state,
                )
            self.conn.emit(MemoriesChanged([old_id]))

    def merge_into(
        self, primary: str, duplicates: Sequence[str], *, reason: str | None, at: datetime
    ) -> None:
        if primary in duplicates:
            raise InvalidInput("the primary cannot also be one of its duplicates", id=primary)
        if not duplicates:
            raise InvalidInput("give at least one duplicate to merge")
        self._require(primary, *duplicates)
        with self.conn.transaction():
            self.conn.write(
                "UNWIND $dups AS dup MATCH (d:Memory {id: dup}), (k:Memory {id: $keep}) "
                "MERGE (d)-[r:MERGED_INTO]->(k) SET r.at = $at, r.reason = $reason, "
                "d.lifecycle = 'archived', d.lifecycle_reason = $why, d.updated_at = $at, "
                "d.valid_to = coalesce(d.valid_to, $at)",
                {"dups": list(dict.fromkeys(duplicates)), "keep": primary, "at": at,
                 "reason": reason or "", "why": f"merged into {primary}"},
            )  # fmt: skip
            self.conn.emit(MemoriesChanged(list(duplicates)))

    def check_dead_ends(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        kinds = dict(
            self.conn.read(
                "UNWIND $ids AS i MATCH (m:Memory {id: i}) RETURN m.id, m.kind",
                {"ids": list(dict.fromkeys(ids))},
            )
        )
        for dead_end in ids:  # the first one wrong, in the caller's order
            if dead_end not in kinds:
                raise NotFound(f"no memory with id {dead_end!r}", id=dead_end)
            if kinds[dead_end] != "dead_end":
                raise InvalidInput(
                    f"{dead_end} is a {kinds[dead_end]}, not a dead end", id=dead_end
                )

    def link_avoids(self, decision_id: str, dead_end_ids: Sequence[str], *, at: datetime) -> None:
        self.check_dead_ends(dead_end_ids)
        if not dead_end_ids:
            return
        self.conn.write(
            "UNWIND $dead_ends AS x_id MATCH (d:Memory {id: $decision}), (x:Memory {id: x_id}) "
            "MERGE (d)-[a:AVOIDS]->(x) SET a.at = $at",
            {"decision": decision_id, "dead_ends": list(dict.fromkeys(dead_end_ids)), "at": at},
        )

    def set_fields(self, memory_id: str, values: dict[str, Any]) -> None:
        """NotFound is read before the write is buffered (a statement returns nothing here)."""
        unknown = set(values) - SETTABLE
        if unknown:
            raise InvalidInput(f"cannot set {sorted(unknown)} here")
        self._require(memory_id)
        if not values:
            return
        assignments = ", ".join(f"m.{k} = $v_{k}" for k in values)
        with self.conn.transaction():
            self.conn.write(
                f"MATCH (m:Memory {{id: $id}}) SET {assignments}",
                {"id": memory_id, **{f"v_{k}": v for k, v in values.items()}},
            )
            self.conn.emit(MemoriesChanged([memory_id]))

    def cite(
        self, memory_id: str, path: str, *, section: str | None, sha256: str | None, at: datetime
    ) -> None:
        self._require(memory_id)
        with self.conn.transaction():
            self.conn.write(
                "MERGE (d:Document {path: $path}) ON CREATE SET d.source_type = 'file', "
                "d.indexed_at = $at SET d.sha256 = $sha",
                {"path": path, "sha": sha256, "at": at},
            )
            self.conn.write(
                "MATCH (m:Memory {id: $id}), (d:Document {path: $path}) "
                "MERGE (m)-[c:CITES]->(d) SET c.section = $section, c.sha256_at_verify = $sha, "
                "c.at = $at",
                {"id": memory_id, "path": path, "section": section, "sha": sha256, "at": at},
            )

    def record_citation_hashes(
        self, memory_id: str, hashes: dict[str, str | None], *, at: datetime
    ) -> None:
        if not hashes:
            return
        self.conn.write(
            "UNWIND $rows AS r MATCH (m:Memory {id: $id})-[c:CITES]->(d:Document {path: r.path}) "
            "SET c.sha256_at_verify = r.sha, c.at = $at, d.sha256 = r.sha",
            {"id": memory_id, "at": at,
             "rows": [{"path": path, "sha": sha} for path, sha in hashes.items()]},
        )  # fmt: skip

    # -- reads ------------------------------------------------------------------------------

    def newest_successors(self, ids: Sequence[str]) -> dict[str, str]:
        rows = self.conn.read(
            f"MATCH p = (o:Memory)<-[:SUPERSEDES*1..{MAX_CHAIN}]-(n:Memory) WHERE o.id IN $ids "
            "RETURN o.id, n.id, length(p), n.created_at",  # FalkorDB cannot order by length(p)
            {"ids": list(dict.fromkeys(ids))},
        )
        rows.sort(key=lambda r: (r[2], r[3]))
        return {old: new for old, new, _, _ in rows}  # the longest path, then the latest, wins

    def chain(self, memory_id: str) -> list[Version]:
        self._require(memory_id)
        linked = self.conn.read(
            f"MATCH (:Memory {{id: $id}})-[:SUPERSEDES*1..{MAX_CHAIN}]->(o:Memory) "
            "RETURN o.id AS v "
            f"UNION MATCH (n:Memory)-[:SUPERSEDES*1..{MAX_CHAIN}]->(:Memory {{id: $id}}) "
            "RETURN n.id AS v",
            {"id": memory_id},
        )
        versions = list(dict.fromkeys([memory_id, *(r[0] for r in linked)]))
        rows = self.conn.read(
            "UNWIND range(0, size($ids) - 1) AS k WITH k, $ids[k] AS i MATCH (m:Memory {id: i}) "
            "OPTIONAL MATCH (n:Memory)-[s:SUPERSEDES]->(m) "
            f"RETURN k, {RETURN_MEMORY}, n.id, coalesce(s.at, m.valid_to), "
            "coalesce(s.reason, m.lifecycle_reason)",
            {"ids": versions},
        )
        rows.sort(key=lambda r: r[0])
        return [(row_to_memory(r[1:-3]), r[-3], from_micros(r[-2]), r[-1]) for r in rows]

    def linked_memories(self, memory_id: str) -> list[tuple[str, str, Any, str, str, str]]:
        out: list[tuple[str, str, Any, str, str, str]] = []
        for rel, forward, backward in _LINKS:
            for pattern, relation in (
                (f"(m:Memory {{id: $id}})-[:{rel}]->(o:Memory)", forward),
                (f"(o:Memory)-[:{rel}]->(m:Memory {{id: $id}})", backward),
            ):
                rows = self.conn.read(
                    f"MATCH {pattern} RETURN o.id, o.title, o.content, o.kind, o.lifecycle "
                    "ORDER BY o.created_at LIMIT 20",
                    {"id": memory_id},
                )
                out.extend((relation, *row) for row in rows)
        return out

    def avoided_by(self, dead_end_ids: Sequence[str]) -> dict[str, list[str]]:
        rows = self.conn.read(
            "UNWIND $ids AS i MATCH (d:Memory)-[:AVOIDS]->(x:Memory {id: i}) RETURN i, d.id",
            {"ids": list(dead_end_ids)},
        )
        out: dict[str, list[str]] = {}
        for dead_end, decision in rows:
            out.setdefault(dead_end, []).append(decision)
        return out

    def dead_ends_near(self, memories: Sequence[Memory], *, limit: int) -> list[Memory]:
        params = {
            "ids": [m.id for m in memories],
            "contexts": sorted({m.context for m in memories if m.context}),
            "services": sorted({m.service for m in memories if m.service}),
            "tags": sorted({t for m in memories for t in m.tags}),
        }
        live = "x.kind = 'dead_end' AND x.lifecycle <> 'archived' AND NOT x.id IN $ids"
        ret = RETURN_MEMORY.replace("m.", "x.")
        rows = self.conn.read(
            f"MATCH (x:Memory) WHERE {live} AND (x.context IN $contexts OR x.service IN $services) "
            f"RETURN {ret} "
            f"UNION UNWIND $tags AS t MATCH (x:Memory) WHERE {live} AND t IN x.tags "
            f"RETURN {ret} "
            f"UNION UNWIND $ids AS i MATCH (:Memory {{id: i}})-[:AVOIDS]->(x:Memory) "
            f"WHERE x.lifecycle <> 'archived' RETURN {ret}",
            params,
        )
        return [row_to_memory(r) for r in rows[:limit]]

    def dead_end_ids(self) -> list[str]:
        """From the search state's columns (archived ones left out), kept until a write."""
        found = self.conn.until_write(
            "dead_end_ids",
            lambda: sorted(self.memories.matching_ids(MemoryFilter(kind="dead_end"))),
        )
        return list(found)

    def citations(
        self, memory_id: str | None = None
    ) -> list[tuple[str, str | None, str, str | None]]:
        match = "(m:Memory {id: $id})" if memory_id else "(m:Memory)"
        where = "" if memory_id else "WHERE m.lifecycle <> 'archived'"
        rows = self.conn.read(
            f"MATCH {match}-[c:CITES]->(d:Document) {where} "
            "RETURN m.id, m.title, d.path, c.sha256_at_verify ORDER BY m.id, d.path",
            {"id": memory_id} if memory_id else {},
        )
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def verification_due(
        self, *, before: datetime, min_importance: float, limit: int
    ) -> list[Memory]:
        rows = self.conn.read(
            "MATCH (m:Memory) WHERE m.lifecycle IN ['active', 'canonical'] "
            "AND (m.lifecycle = 'canonical' OR m.importance >= $imp) "
            "AND (m.verified_at IS NULL OR m.verified_at < $before) "
            f"RETURN {RETURN_MEMORY} "
            "ORDER BY m.verified_at IS NULL DESC, m.verified_at, m.importance DESC, m.created_at LIMIT $limit",
            {"imp": min_importance, "before": before, "limit": limit},
        )
        return [row_to_memory(r) for r in rows]
