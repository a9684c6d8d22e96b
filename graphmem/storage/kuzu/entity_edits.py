"""Corrections of the entity graph in Kùzu: merge duplicates, delete an entity and put it back,
and the rewrite of rows, aliases and links that corrections by hand and their undo write
(graphmem/graph/editing.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphmem.errors import InvalidInput, NotFound
from graphmem.storage.kuzu.connection import KuzuConnection
from graphmem.storage.kuzu.values import time_value
from graphmem.storage.protocols.entities import EntityLink

# an EntityLink's kind -> (the table of its source, the relationship into the entity)
LINKS = {
    "memory": ("Memory", "MENTIONS"),
    "chunk": ("Chunk", "MENTIONS"),
    "subject": ("Fact", "SUBJECT"),
    "object": ("Fact", "OBJECT"),
}


class KuzuEntityEdits:
    """The writes of graphmem.storage.protocols.Entities that correct entities."""

    conn: KuzuConnection

    def merge(self, primary: str, duplicates: Sequence[str]) -> int:
        """Move every mention and fact end of the duplicates onto the primary, record their
        names as aliases of it, delete them. Returns the number of edges moved."""
        dupes = [d for d in dict.fromkeys(duplicates) if d != primary]
        if not dupes:
            raise InvalidInput("give at least one duplicate that is not the primary")
        known = {
            r[0]
            for r in self.conn.read(
                "MATCH (e:Entity) WHERE e.id IN $i RETURN e.id", {"i": [primary, *dupes]}
            )
        }
        for entity in [primary, *dupes]:
            if entity not in known:
                raise NotFound(f"no entity with id {entity!r}", id=entity)
        moved = 0
        with self.conn.transaction():
            for rel, pattern in (
                ("MENTIONS", "(m:Memory)-[r:MENTIONS]->(d:Entity)"),
                ("MENTIONS", "(m:Chunk)-[r:MENTIONS]->(d:Entity)"),
                ("SUBJECT", "(m:Fact)-[r:SUBJECT]->(d:Entity)"),
                ("OBJECT", "(m:Fact)-[r:OBJECT]->(d:Entity)"),
            ):
                keep = (
                    " ON CREATE SET x.name = r.name, x.extractor = r.extractor"
                    if rel == "MENTIONS"
                    else ""
                )  # a memory that named both keeps one mention
                rows = self.conn.execute(
                    f"MATCH {pattern}, (p:Entity {{id: $p}}) WHERE d.id IN $d "
                    f"MERGE (m)-[x:{rel}]->(p){keep} RETURN count(*)",
                    {"p": primary, "d": dupes},
                    entity_graph=True,
                )
                moved += int(rows[0][0]) if rows else 0
            self.conn.execute(
                "MATCH (a:EntityAlias) WHERE a.entity IN $d SET a.entity = $p",
                {"p": primary, "d": dupes},
                entity_graph=True,
            )
            self.conn.execute(
                "UNWIND $d AS dup MERGE (a:EntityAlias {norm: dup}) SET a.entity = $p",
                {"p": primary, "d": dupes},
                entity_graph=True,
            )
            self.conn.execute(
                "MATCH (e:Entity) WHERE e.id IN $d DETACH DELETE e", {"d": dupes}, entity_graph=True
            )
        return moved

    def delete(self, entity_id: str) -> None:
        with self.conn.transaction():
            self.conn.execute(
                "MATCH (a:EntityAlias) WHERE a.entity = $id DELETE a",
                {"id": entity_id},
                entity_graph=True,
            )
            self.conn.execute(
                "MATCH (e:Entity {id: $id}) DETACH DELETE e", {"id": entity_id}, entity_graph=True
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
        """One correction in one transaction; each edge by key, one statement a row (an
        UNWIND over two node tables runs as joins that read both, see `write_extraction`)."""
        conn = self.conn
        with conn.transaction():
            for row in rows:
                self._put_row(row)
            conn.execute_each(
                "MATCH (a:EntityAlias {norm: $norm}) WHERE a.entity = $entity DELETE a",
                [{"norm": n, "entity": e} for n, e in unalias],
                entity_graph=True,
            )
            conn.execute_each(
                "MERGE (a:EntityAlias {norm: $norm}) SET a.entity = $entity",
                [{"norm": n, "entity": e} for n, e in (aliases or {}).items()],
                entity_graph=True,
            )
            for edge in unlink:
                table, rel = LINKS[edge.kind]
                conn.execute(
                    f"MATCH (s:{table} {{id: $s}})-[r:{rel}]->(e:Entity {{id: $e}}) DELETE r",
                    {"s": edge.source, "e": edge.entity},
                    entity_graph=True,
                )
            for edge in link:
                table, rel = LINKS[edge.kind]
                keep = (
                    " ON CREATE SET r.name = $name, r.extractor = $x" if rel == "MENTIONS" else ""
                )
                conn.execute(
                    f"MATCH (s:{table} {{id: $s}}), (e:Entity {{id: $e}}) "
                    f"MERGE (s)-[r:{rel}]->(e){keep}",
                    {"s": edge.source, "e": edge.entity}
                    | ({"name": edge.name, "x": edge.extractor} if keep else {}),
                    entity_graph=True,
                )
            for entity_id in delete:
                self.delete(entity_id)

    def links(self, entity_ids: Sequence[str]) -> list[EntityLink]:
        found: list[EntityLink] = []
        for entity_id in dict.fromkeys(entity_ids):
            for kind, (table, rel) in LINKS.items():
                named = "r.name, r.extractor" if rel == "MENTIONS" else "'' AS n, '' AS x"
                for source, name, extractor in self.conn.read(
                    f"MATCH (s:{table})-[r:{rel}]->(e:Entity {{id: $e}}) "
                    f"RETURN s.id, {named} ORDER BY s.id",
                    {"e": entity_id},
                ):
                    found.append(EntityLink(kind, source, entity_id, name or "", extractor or ""))
        return found

    def _put_row(self, row: dict[str, Any]) -> None:
        self.conn.execute(
            "MERGE (e:Entity {id: $id}) SET e.name = $name, e.norm = $norm, e.key = $key, "
            "e.label = $label, e.created_at = $created_at",
            {
                **{k: row[k] for k in ("id", "name", "norm", "key", "label")},
                "created_at": time_value(row["created_at"]),
            },
            entity_graph=True,
        )

    def restore(self, row: dict[str, Any]) -> None:
        with self.conn.transaction():
            self._put_row(row)
            for alias in row["aliases"]:
                self.conn.execute(
                    "MERGE (a:EntityAlias {norm: $norm}) SET a.entity = $id",
                    {"norm": alias, "id": row["id"]},
                    entity_graph=True,
                )
