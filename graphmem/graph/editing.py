"""Corrections of entity resolution by hand: merge duplicates, add or remove an alias, rename,
split one entity in two. Each plans the entities' state after the change from their state
before it, writes the difference in one transaction with an Audit row `curate:ACTION` that holds
both sides of it (rows, aliases and the links that move), so `steward_undo(AUDIT_ID)` writes the
difference the other way (`undo`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import astuple, dataclass, field
from datetime import datetime
from typing import Any

from graphmem.curation import CURATE
from graphmem.errors import Conflict, InvalidInput, NotFound
from graphmem.extractors.normalise import normalise
from graphmem.graph.models import (
    EntityAliasReport,
    MergeEntitiesReport,
    RenameEntityReport,
    SplitEntityReport,
)
from graphmem.models import utcnow
from graphmem.service_context import Service
from graphmem.storage.protocols import EntityLink, Store, compact_key

ROW_FIELDS = ("id", "name", "norm", "key", "label")
MENTIONS = ("memory", "chunk")


@dataclass
class EntityState:
    """What a correction reads and plans: entity rows (None: no such entity), the aliases that
    may change (norm -> entity id) and the links that may move."""

    rows: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    links: set[EntityLink] = field(default_factory=set)


def _row(row: dict[str, Any]) -> dict[str, Any]:
    """An entity row as the audit keeps it: no aliases (they are kept apart), times as text."""
    created = row["created_at"]
    return {k: row[k] for k in ROW_FIELDS} | {
        "created_at": created.isoformat() if isinstance(created, datetime) else created
    }


def difference(before: EntityState, after: EntityState) -> tuple[dict[str, Any], dict[str, Any]]:
    """(before, after) as an audit row keeps them: only what differs."""

    def side(one: EntityState, other: EntityState) -> dict[str, Any]:
        return {
            "entities": {i: r for i, r in one.rows.items() if other.rows.get(i, r) != r},
            "aliases": {n: e for n, e in one.aliases.items() if other.aliases.get(n) != e},
            "links": sorted(list(astuple(x)) for x in one.links - other.links),
        }

    return side(before, after), side(after, before)


def write(store: Store, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Take the entities from one side of a difference to the other."""
    store.entities.rewrite(
        rows=[r for r in new["entities"].values() if r is not None],
        unalias=list(old["aliases"].items()),
        aliases=dict(new["aliases"]),
        unlink=[EntityLink(*x) for x in old["links"]],
        link=[EntityLink(*x) for x in new["links"]],
        delete=[i for i, r in new["entities"].items() if r is None],
    )


def changed_since(store: Store, before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """The first entity that is no longer as the correction left it (renamed, merged, made
    again, or one the undo deletes named by another memory since), or a name the undo would
    point elsewhere that has an entity of its own by now: undoing it would wipe the later
    change."""
    for entity_id, planned in after.get("entities", {}).items():
        now = store.entities.row(entity_id)
        if (now and {k: now[k] for k in ROW_FIELDS}) != (
            planned and {k: planned[k] for k in ROW_FIELDS}
        ):
            return str(entity_id)
    made = {(x[0], x[1], x[2]) for x in after.get("links", [])}
    gone = [i for i, row in before.get("entities", {}).items() if row is None]
    for link in store.entities.links(gone):  # named since by a memory the undo would unlink
        if (link.kind, link.source, link.entity) not in made:
            return link.entity
    aliases = before.get("aliases", {})
    named = store.entities.names([n for n, e in aliases.items() if n != e])
    return next((str(n) for n in aliases if n in named and n not in before["entities"]), None)


def undo(store: Store, before: dict[str, Any], after: dict[str, Any]) -> None:
    write(store, after, before)


class EntityEditOps(Service):
    """The audited corrections of the entity graph a person (or an agent) asks for."""

    _actor = "user"
    _run: str | None = None
    _item: str | None = None

    def audited_as(self, actor: str, run: str | None, item: str | None = None) -> EntityEditOps:
        """The same corrections, audited as `actor`'s and as steps of `run`, so that
        `steward_undo(run)` takes them all back (the glossary's: graph/glossary_ops.py), and
        as applying steward finding `item`, which undoing them puts back in the inbox."""
        other = copy.copy(self)
        other._actor, other._run, other._item = actor, run, item
        return other

    def _row_of(self, entity_id: str) -> dict[str, Any]:
        row = self.store.entities.row(entity_id)
        if row is None:
            raise NotFound(f"no entity {entity_id!r}", entity_id=entity_id)
        return row

    def _commit(
        self, action: str, target: str, before: EntityState, after: EntityState, *, write_it: bool
    ) -> str:
        """Write the difference (unless the caller writes it) and its audit row, in one
        transaction; returns the audit row's id."""
        old, new = difference(before, after)
        with self.store.transaction():
            if write_it:
                write(self.store, old, new)
            return self.store.steward.audit_step(
                actor=self._actor, action=CURATE + action, target=target, item=self._item,
                run=self._run,
                before=old, after=new,
            )  # fmt: skip

    def _owner(self, norm: str) -> str | None:
        return self.store.entities.resolve_norms([norm]).get(norm)

    @staticmethod
    def _norm(name: str, what: str) -> str:
        norm: str = normalise(name or "")
        if not compact_key(norm):
            raise InvalidInput(f"{what} must have letters or digits", **{what: name})
        return norm

    # -- merge --------------------------------------------------------------------------------

    def merge_entities(self, primary: str, duplicates: Sequence[str]) -> MergeEntitiesReport:
        """Fold duplicates into the primary entity: mentions and facts move, names become aliases,
        and later extractions of those names resolve to the primary. Audited:
        `steward_undo(audit_id)` brings the duplicates back with their links."""
        if isinstance(duplicates, str):
            duplicates = [duplicates]
        dupes = [d for d in dict.fromkeys(duplicates) if d != primary]
        entities = self.store.entities
        before, after = EntityState(), EntityState()
        kept = {(x.kind, x.source) for x in entities.links([primary])}
        for dup in dupes:
            row = entities.row(dup)
            before.rows[dup], after.rows[dup] = (_row(row) if row else None), None
            for alias in row["aliases"] if row else ():
                before.aliases[alias], after.aliases[alias] = dup, primary
            after.aliases.setdefault(dup, primary)
        for link in entities.links(dupes):
            before.links.add(link)
            if (link.kind, link.source) not in kept:
                kept.add((link.kind, link.source))
                after.links.add(EntityLink(link.kind, link.source, primary, link.name,
                                           link.extractor))  # fmt: skip
        with self.store.transaction():  # merge validates: NotFound, InvalidInput
            moved = entities.merge(primary, duplicates)
            audit = self._commit("merge-entities", primary, before, after, write_it=False)
        return MergeEntitiesReport(primary=primary, merged=dupes, edges_moved=moved,
                                   audit_id=audit)  # fmt: skip

    # -- aliases ------------------------------------------------------------------------------

    def add_entity_alias(self, entity_id: str, alias: str) -> EntityAliasReport:
        """Make a name resolve to the entity from now on, without merging anything: later
        extraction of text that says it links to this entity. A name that already resolves to
        another entity is refused (Conflict): merge the two if they are one thing."""
        row = self._row_of(entity_id)
        norm = self._norm(alias, "alias")
        owner = self._owner(norm)
        if owner == entity_id:
            return EntityAliasReport(entity_id=entity_id, alias=norm, changed=False,
                                     aliases=row["aliases"])  # fmt: skip
        if owner is not None:
            raise Conflict(
                f"{alias!r} already names entity {owner!r}: if the two are one thing, merge "
                f"them (merge_entities {entity_id!r} [{owner!r}])",
                entity_id=entity_id, alias=norm, owner=owner,
            )  # fmt: skip
        before = EntityState(aliases=dict.fromkeys(row["aliases"], entity_id))
        after = EntityState(aliases={**before.aliases, norm: entity_id})
        audit = self._commit("add-entity-alias", entity_id, before, after, write_it=True)
        return EntityAliasReport(entity_id=entity_id, alias=norm, changed=True,
                                 aliases=sorted(after.aliases), audit_id=audit)  # fmt: skip

    def remove_entity_alias(self, entity_id: str, alias: str) -> EntityAliasReport:
        """Stop a name resolving to the entity: what was linked stays linked, and a later
        extraction of the name makes (or finds) an entity of its own."""
        row = self._row_of(entity_id)
        norm = alias if alias in row["aliases"] else self._norm(alias, "alias")
        if norm not in row["aliases"]:
            raise NotFound(
                f"entity {entity_id!r} has no alias {alias!r} (its aliases: "
                f"{', '.join(row['aliases']) or 'none'})",
                entity_id=entity_id, alias=alias,
            )  # fmt: skip
        if norm == entity_id:
            raise InvalidInput(
                f"{alias!r} is the entity's id, which always resolves to it: rename it instead",
                entity_id=entity_id, alias=alias,
            )  # fmt: skip
        before = EntityState(aliases=dict.fromkeys(row["aliases"], entity_id))
        after = EntityState(aliases={a: e for a, e in before.aliases.items() if a != norm})
        audit = self._commit("remove-entity-alias", entity_id, before, after, write_it=True)
        return EntityAliasReport(entity_id=entity_id, alias=norm, changed=True,
                                 aliases=sorted(after.aliases), audit_id=audit)  # fmt: skip

    def create_entity(self, name: str, label: str = "concept") -> tuple[str, str]:
        """An entity for a name no text has named yet (a glossary's canonical name), so that
        aliases can point at it: (its id, the audit row's id). Its id is the name's norm, as
        extraction would have made it; a name that already resolves is refused (Conflict)."""
        name = (name or "").strip()
        norm = self._norm(name, "name")
        owner = self._owner(norm)
        if owner is not None:
            raise Conflict(f"{name!r} already names entity {owner!r}", name=name, owner=owner)
        row = {"id": norm, "name": name, "norm": norm, "key": compact_key(norm), "label": label,
               "created_at": utcnow().isoformat()}  # fmt: skip
        before, after = EntityState(rows={norm: None}), EntityState(rows={norm: row})
        return norm, self._commit("create-entity", norm, before, after, write_it=True)

    # -- rename -------------------------------------------------------------------------------

    def rename_entity(self, entity_id: str, name: str) -> RenameEntityReport:
        """Show the entity under another name; its id stays, and the old name stays an alias,
        so text that says it still resolves here. A name that already resolves to another
        entity is refused (Conflict): merge the two instead."""
        row = self._row_of(entity_id)
        name = (name or "").strip()
        norm = self._norm(name, "name")
        owner = self._owner(norm)
        if owner is not None and owner != entity_id:
            raise Conflict(
                f"{name!r} already names entity {owner!r}: if the two are one thing, merge "
                f"them (merge_entities {owner!r} [{entity_id!r}])",
                entity_id=entity_id, name=name, owner=owner,
            )  # fmt: skip
        if name == row["name"]:
            return RenameEntityReport(entity_id=entity_id, name=name, previous=name,
                                      aliases=row["aliases"])  # fmt: skip
        aliases = dict.fromkeys(row["aliases"], entity_id)
        before = EntityState(rows={entity_id: _row(row)}, aliases=aliases)
        added: dict[str, str] = {}
        if norm != row["norm"]:  # the old name stays an alias; the new one needs its own
            added[row["norm"]] = entity_id  # (shown, even where it is the id it resolves by)
            if norm != entity_id:
                added[norm] = entity_id
        after = EntityState(
            rows={entity_id: {**_row(row), "name": name, "norm": norm, "key": compact_key(norm)}},
            aliases={**aliases, **added},
        )
        audit = self._commit("rename-entity", entity_id, before, after, write_it=True)
        return RenameEntityReport(entity_id=entity_id, name=name, previous=row["name"],
                                  aliases=sorted(after.aliases), audit_id=audit)  # fmt: skip

    # -- split --------------------------------------------------------------------------------

    def split_entity(
        self, entity_id: str, memory_ids: Sequence[str], name: str | None = None
    ) -> SplitEntityReport:
        """Give some memories' mentions of an entity to a new entity of the same label (named
        `name`, by default as the original): to take back part of a wrong merge (a name merged
        in goes with it), or to tell two things of one name apart. Ids of document chunks work as memory ids do. The facts
        about the entity that only those memories stated move too; a fact other memories state
        as well stays (`facts_kept`)."""
        if isinstance(memory_ids, str):
            memory_ids = [memory_ids]
        wanted = list(dict.fromkeys(m for m in memory_ids if m))
        if not wanted:
            raise InvalidInput("give at least one memory whose mentions move")
        row = self._row_of(entity_id)
        links = self.store.entities.links([entity_id])
        mentioning = {x.source for x in links if x.kind in MENTIONS}
        strangers = [m for m in wanted if m not in mentioning]
        if strangers:
            raise InvalidInput(
                f"{', '.join(strangers)} do not mention entity {entity_id!r}",
                entity_id=entity_id, memory_ids=strangers,
            )  # fmt: skip
        if set(wanted) >= mentioning:
            raise InvalidInput(
                "those are all the mentions of the entity: rename it instead",
                entity_id=entity_id,
            )  # fmt: skip
        facts = sorted({x.source for x in links if x.kind not in MENTIONS})
        sources = self.store.entities.fact_sources(facts)
        stated = [f for f in facts if set(sources.get(f, ())) & set(wanted)]
        moving = [f for f in stated if set(sources[f]) <= set(wanted)]
        name = (name or row["name"]).strip()
        norm = self._norm(name, "name")
        new_id = self._new_id(entity_id, norm)
        # a name merged in before goes with the split: it resolves to the new entity by its id
        taken = {norm: entity_id} if new_id == norm and norm in row["aliases"] else {}
        new_row = {"id": new_id, "name": name, "norm": norm, "key": compact_key(norm),
                   "label": row["label"], "created_at": utcnow().isoformat()}  # fmt: skip
        moved = {x for x in links if x.source in (wanted if x.kind in MENTIONS else moving)}
        before = EntityState(rows={new_id: None}, aliases=taken, links=moved)
        after = EntityState(
            rows={new_id: new_row},
            links={EntityLink(x.kind, x.source, new_id, x.name, x.extractor) for x in moved},
        )
        audit = self._commit("split-entity", entity_id, before, after, write_it=True)
        return SplitEntityReport(
            entity_id=entity_id, new_entity_id=new_id, name=name, memories=wanted, facts=moving,
            facts_kept=[f for f in stated if f not in moving], audit_id=audit,
        )  # fmt: skip

    def _new_id(self, entity_id: str, norm: str) -> str:
        """The name's norm when no entity has it, or when it is a name merged into the original
        (the name then resolves to the new entity); `norm~2`, `norm~3`... when it is the
        original's own (which it keeps resolving to). A name of a third entity is refused."""
        owner = self._owner(norm)
        if owner is None:
            return norm
        row = self.store.entities.row(entity_id) or {}
        merged_in = norm in row.get("aliases", ()) and norm not in (entity_id, row.get("norm"))
        if owner == entity_id and merged_in and not self.store.entities.names([norm]):
            return norm
        if owner != entity_id:
            raise Conflict(
                f"{norm!r} already names entity {owner!r}: pick another name",
                entity_id=entity_id, owner=owner,
            )  # fmt: skip
        taken = self.store.entities.names([f"{norm}~{n}" for n in range(2, 102)])
        return next(f"{norm}~{n}" for n in range(2, 102) if f"{norm}~{n}" not in taken)
