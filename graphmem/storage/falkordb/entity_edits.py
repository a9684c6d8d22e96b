"""Corrections of the entity graph in FalkorDB: merge duplicates, delete an entity and put it
back, and the rewrite of rows, aliases and links that corrections by hand and their undo write
(graphmem/graph/editing.py). Each is one query sent at the transaction's end: what a write
reports is read before it buffers anything (graphmem.storage.falkordb.entities)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any

from graphmem.errors import InvalidInput, NotFound
from graphmem.storage.falkordb.connection import FalkorConnection
from graphmem.storage.protocols.entities import EntityLink

# the edges a merge moves onto the primary: (relationship, pattern of `r` into duplicate `d`)
_MOVED = (
    ("MENTIONS", "(m:Memory)-[r:MENTIONS]->(d:Entity {id: dup})"),
    ("MENTIONS", "(m:Chunk)-[r:MENTIONS]->(d:Entity {id: dup})"),
    ("SUBJECT", "(m:Fact)-[r:SUBJECT]->(d:Entity {id: dup})"),
    ("OBJECT", "(m:Fact)-[r:OBJECT]->(d:Entity {id: dup})"),
)

# an EntityLink's kind -> (the label of its source, the relationship into the entity)
_LINKS = {
    "memory": ("Memory", "MENTIONS"),
    "chunk": ("Chunk", "MENTIONS"),
    "subject": ("Fact", "SUBJECT"),
    "object": ("Fact", "OBJECT"),
}
_KINDS = list(_LINKS)


class FalkorEntityEdits:
    """The writes of graphmem.storage.protocols.Entities that correct entities."""

    conn: FalkorConnection

    def merge(self, primary: str, duplicates: Sequence[str]) -> int:
        """Move every mention and fact end of the duplicates onto the primary, record their
        names as aliases of it, delete them. The edges moved are counted before the query."""
        dupes = [d for d in dict.fromkeys(duplicates) if d != primary]
        if not dupes:
            raise InvalidInput("give at least one duplicate that is not the primary")
        known = {
            r[0]
            for r in self.conn.read(
                "UNWIND $i AS x MATCH (e:Entity {id: x}) RETURN e.id", {"i": [primary, *dupes]}
            )
        }
        for entity in [primary, *dupes]:
            if entity not in known:
                raise NotFound(f"no entity with id {entity!r}", id=entity)
        moved = 0
        for _rel, pattern in _MOVED:
            rows = self.conn.read(f"UNWIND $d AS dup MATCH {pattern} RETURN count(r)", {"d": dupes})
            moved += int(rows[0][0]) if rows else 0
        with self.conn.transaction():
            for rel, pattern in _MOVED:
                keep = (
                    " ON CREATE SET x.name = r.name, x.extractor = r.extractor"
                    if rel == "MENTIONS"
                    else ""
                )  # a memory that named both keeps one mention
                self.conn.write(
                    f"UNWIND $d AS dup MATCH {pattern} MATCH (p:Entity {{id: $p}}) "
                    f"MERGE (m)-[x:{rel}]->(p){keep}",
                    {"p": primary, "d": dupes},
                    entity_graph=True,
                )
            self.conn.write(
                "MATCH (a:EntityAlias) WHERE a.entity IN $d SET a.entity = $p",
                {"p": primary, "d": dupes},
                entity_graph=True,
            )
            self.conn.write(
                "UNWIND $d AS dup MERGE (a:EntityAlias {norm: dup}) SET a.entity = $p",
                {"p": primary, "d": dupes},
                entity_graph=True,
            )
            self.conn.write(
                "UNWIND $d AS dup MATCH (e:Entity {id: dup}) DELETE e",
                {"d": dupes},
                entity_graph=True,
            )
        return moved

    def delete(self, entity_id: str) -> None:
        """The entity with its edges (DELETE takes them) and its aliases."""
        with self.conn.transaction():
            self.conn.write(
                "MATCH (a:EntityAlias) WHERE a.entity = $id DELETE a",
                {"id": entity_id},
                entity_graph=True,
            )
            self.conn.write(
                "MATCH (e:Entity {id: $id}) DELETE e", {"id": entity_id}, entity_graph=True
            )

    def rewrite(
        self,
        *,
        rows: Sequence[dict[str, Any]] = (),
        unalias: Sequence[tuple[str, str]] = (),
        aliases: dict[str, str] | None = None,
        unlink: Sequence[EntityLink] = (),
        link: Sequence[EntityLink] = (),
        delete: Sequence[str] = (),
    ) -> None:
        """One correction, as one query: each statement matches its nodes by key from an
        UNWIND, so one whose memory is gone matches nothing and the next runs on."""
        conn = self.conn
        with conn.transaction():
            for row in rows:
                self._put_row(row)
            if unalias:
                conn.write(
                    "UNWIND $rows AS r MATCH (a:EntityAlias {norm: r.norm}) "
                    "WHERE a.entity = r.entity DELETE a",
                    {"rows": [{"norm": n, "entity": e} for n, e in unalias]},
                    entity_graph=True,
                )
            if aliases:
                conn.write(
                    "UNWIND $rows AS r MERGE (a:EntityAlias {norm: r.norm}) SET a.entity = r.entity",
                    {"rows": [{"norm": n, "entity": e} for n, e in aliases.items()]},
                    entity_graph=True,
                )
            for kind, (label, rel) in _LINKS.items():
                gone = [asdict(e) for e in unlink if e.kind == kind]
                if gone:
                    conn.write(
                        f"UNWIND $rows AS r MATCH (s:{label} {{id: r.source}})-[x:{rel}]->"
                        "(e:Entity {id: r.entity}) DELETE x",
                        {"rows": gone},
                        entity_graph=True,
                    )
            for kind, (label, rel) in _LINKS.items():
                made = [asdict(e) for e in link if e.kind == kind]
                if made:
                    keep = (
                        " ON CREATE SET x.name = r.name, x.extractor = r.extractor"
                        if rel == "MENTIONS"
                        else ""
                    )
                    conn.write(
                        f"UNWIND $rows AS r MATCH (s:{label} {{id: r.source}}) "
                        f"MATCH (e:Entity {{id: r.entity}}) MERGE (s)-[x:{rel}]->(e){keep}",
                        {"rows": made},
                        entity_graph=True,
                    )
            for entity_id in delete:
                self.delete(entity_id)

    def links(self, entity_ids: Sequence[str]) -> list[EntityLink]:
        wanted = list(dict.fromkeys(entity_ids))
        found: list[EntityLink] = []
        for kind, (label, rel) in _LINKS.items():
            named = "x.name, x.extractor" if rel == "MENTIONS" else "'' AS n, '' AS x"
            rows = self.conn.read(
                f"UNWIND $e AS i MATCH (s:{label})-[x:{rel}]->(e:Entity {{id: i}}) "
                f"RETURN e.id, s.id, {named} ORDER BY e.id, s.id",
                {"e": wanted},
            )
            found += [EntityLink(kind, r[1], r[0], r[2] or "", r[3] or "") for r in rows]
        order = {e: n for n, e in enumerate(wanted)}
        return sorted(found, key=lambda e: (order[e.entity], _KINDS.index(e.kind), e.source))

    def _put_row(self, row: dict[str, Any]) -> None:
        created = row["created_at"]
        self.conn.write(
            "MERGE (e:Entity {id: $id}) SET e.name = $name, e.norm = $norm, e.key = $key, "
            "e.label = $label, e.created_at = $created_at",
            {
                **{k: row[k] for k in ("id", "name", "norm", "key", "label")},
                # as it comes back from JSON (an audit row), or as `row` read it
                "created_at": datetime.fromisoformat(created)
                if isinstance(created, str)
                else created,
            },
            entity_graph=True,
        )

    def restore(self, row: dict[str, Any]) -> None:
        with self.conn.transaction():
            self._put_row(row)
            if row["aliases"]:
                self.conn.write(
                    "UNWIND $aliases AS alias MERGE (a:EntityAlias {norm: alias}) SET a.entity = $id",
                    {"aliases": list(row["aliases"]), "id": row["id"]},
                    entity_graph=True,
                )
