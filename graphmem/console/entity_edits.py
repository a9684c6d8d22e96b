"""Corrections of an entity from its console page: add or remove an alias, rename it, merge
another entity into it, split some memories' mentions off into a new entity. Each runs the
audited operation of the core (`graphmem.graph.editing`) and says what it did, with the audit
row that undoes it.

What a correction did is kept server-side for the session that made it and shown once, by the
entity page the browser is sent to: no text typed into a form rides in a URL, so a link cannot
make a page claim a change nobody made, nor offer to undo one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from graphmem.errors import Conflict, GraphmemError, InvalidInput, NotFound

if TYPE_CHECKING:
    from graphmem.api import MemoryAPI

ACTIONS = ("alias", "unalias", "rename", "merge", "split")
SPLIT_LIMIT = 200  # memories ticked at once: more than an entity page lists
KEPT = 1000  # sessions whose last outcome waits to be shown, the oldest dropped beyond this


@dataclass(frozen=True)
class Outcome:
    """What one correction did: shown on `entity_id`'s page, with an Undo for `audit_id` and a
    link to the entity it came from (`source`, after a split)."""

    entity_id: str
    message: str
    audit_id: str | None = None
    source: str | None = None


class Outcomes:
    """The last outcome of each session, taken (once) by the page of the entity it is about."""

    def __init__(self, kept: int = KEPT) -> None:
        self.kept = kept
        self._waiting: OrderedDict[str, Outcome] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, session_id: str, outcome: Outcome) -> None:
        with self._lock:
            self._waiting.pop(session_id, None)
            self._waiting[session_id] = outcome
            while len(self._waiting) > self.kept:
                self._waiting.popitem(last=False)

    def take(self, session_id: str, entity_id: str) -> Outcome | None:
        with self._lock:
            outcome = self._waiting.get(session_id)
            if outcome is None or outcome.entity_id != entity_id:
                return None
            return self._waiting.pop(session_id)


def status_of(error: GraphmemError) -> int:
    """The HTTP status a refused correction answers with."""
    if isinstance(error, NotFound):
        return 404
    return 409 if isinstance(error, Conflict) else 400


def correct(
    gm: MemoryAPI, entity_id: str, action: str, form: Mapping[str, str], picked: Sequence[str]
) -> Outcome:
    """Run one correction of `entity_id`; raises what the core raises, having changed nothing."""
    if action == "alias":
        alias = _given(form, "alias", "the alias to add")
        added = gm.add_entity_alias(entity_id, alias)
        if not added.changed:
            return Outcome(entity_id, f"{added.alias!r} already names this entity: no change.")
        return Outcome(entity_id, f"Added alias {added.alias!r}.", added.audit_id)
    if action == "unalias":
        removed = gm.remove_entity_alias(entity_id, _given(form, "alias", "the alias to remove"))
        return Outcome(entity_id, f"Removed alias {removed.alias!r}.", removed.audit_id)
    if action == "rename":
        renamed = gm.rename_entity(entity_id, _given(form, "name", "the new name"))
        if renamed.audit_id is None:
            return Outcome(entity_id, f"It is named {renamed.name!r} already: no change.")
        return Outcome(
            entity_id,
            f"Renamed {renamed.previous!r} to {renamed.name!r}; the old name stays an alias.",
            renamed.audit_id,
        )
    if action == "merge":
        other, name = other_entity(gm, _given(form, "other", "the other entity's id or name"))
        merged = gm.merge_entities(entity_id, [other])
        return Outcome(
            entity_id,
            f"Merged {name!r} ({other}) into this entity: its mentions and facts are here, its "
            "names are aliases.",
            merged.audit_id,
        )
    if action == "split":
        memories = list(dict.fromkeys(m for m in picked if m))
        if not memories:
            raise InvalidInput("tick the memories whose mentions go to the new entity")
        if len(memories) > SPLIT_LIMIT:
            raise InvalidInput(f"tick at most {SPLIT_LIMIT} memories", picked=len(memories))
        split = gm.split_entity(entity_id, memories, name=form.get("name", "").strip() or None)
        n, facts = len(split.memories), len(split.facts)
        return Outcome(
            split.new_entity_id,
            f"Split {split.name!r} off {entity_id!r}: it took the mentions of {n} "
            f"memor{'y' if n == 1 else 'ies'} and {facts} fact{'' if facts == 1 else 's'}.",
            split.audit_id,
            source=entity_id,
        )
    raise NotFound(f"no correction {action!r} of an entity")


def other_entity(gm: MemoryAPI, given: str) -> tuple[str, str]:
    """(id, name) of the entity a merge names by its id or by its whole name (any case); a name
    several entities have, or none, is refused: their ids are on their pages."""
    try:
        page = gm.entity_page(given, limit=1)
        return page.id, page.name
    except NotFound:
        pass
    wanted = " ".join(given.split()).casefold()
    named = [
        e
        for e in gm.list_entities(given, limit=50).entities
        if " ".join(e.name.split()).casefold() == wanted
    ]
    if len(named) == 1:
        return named[0].id, named[0].name
    if named:
        ids = ", ".join(e.id for e in named)
        raise InvalidInput(f"several entities are named {given!r}: give the id of one ({ids})")
    raise NotFound(
        f"no entity has the id or the name {given!r}: give the other entity's id (shown on its "
        "page)",
        other=given,
    )


def _given(form: Mapping[str, str], field: str, what: str) -> str:
    value = form.get(field, "").strip()
    if not value:
        raise InvalidInput(f"give {what}")
    return value
