"""Applying the project's glossary (graph/glossary.py) to the entity graph, through the audited
corrections of graph/editing.py, so a person can see and undo what it did.

For each canonical name: its entity (the one its name resolves to, made when there is none);
then for each alias: nothing when it resolves there already, a merge when it resolves to another
entity, an alias when it resolves to nothing. An alias that resolves to the entity of another
canonical name of the file is left alone: merging two things the glossary keeps apart is for a
person to decide. Every change is a step of one run, so `steward_undo(run)` takes it all back.

Extraction applies the glossary before it resolves a batch, when the file's content changed
since it was last applied (its hash is kept in the store), so names resolve as the project's
glossary says without anyone running a command.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from graphmem.errors import GraphmemError
from graphmem.extractors.normalise import normalise
from graphmem.graph.editing import EntityEditOps
from graphmem.graph.glossary import Glossary, GlossaryEntry, glossary_path, read_glossary
from graphmem.graph.models import GlossaryName, GlossaryReport, GlossarySkip
from graphmem.ids import new_id
from graphmem.service_context import Service, ServiceContext
from graphmem.storage.protocols import Store

log = logging.getLogger("graphmem.graph")
APPLIED_KEY = "glossary:sha256"  # the content hash of the glossary last applied
ACTOR = "glossary"
NEW_LABEL = "concept"  # a canonical name no text named yet: no label is known


class GlossaryOps(Service):
    def __init__(self, context: ServiceContext, edits: EntityEditOps) -> None:
        super().__init__(context)
        self._edits = edits
        self._lock = threading.Lock()  # one application at a time: extraction's or a caller's
        self._refused: str | None = None  # the last error logged for a bad file
        # the file's (mtime, size) when it was last found applied, or bad: until it changes,
        # a batch neither reads nor parses it again
        self._settled: tuple[int, int] | None = None

    def glossary_file(self) -> Path:
        """The `glossary` setting's file, or the project root's graphmem.aliases.yaml."""
        return glossary_path(self.settings.glossary, self.settings.home.parent)

    def apply_glossary(
        self, path: str | Path | None = None, *, dry_run: bool = False
    ) -> GlossaryReport:
        """Make each name of the project's glossary (or the YAML file at `path`, relative to
        the project root) resolve to its canonical name's entity: aliases added, entities
        merged or made, each audited. `dry_run` reports what would change and writes nothing.
        No file is no glossary: an empty report. InvalidInput names the line of a bad file."""
        file = (
            glossary_path(Path(path), self.settings.home.parent) if path else self.glossary_file()
        )
        glossary = read_glossary(file)
        if glossary is None:
            return GlossaryReport(path=str(file), found=False, dry_run=dry_run)
        with self._lock:
            return self._apply(glossary, dry_run=dry_run)

    def apply_if_changed(self) -> GlossaryReport | None:
        """The project's glossary applied when its content is not the one applied last, else
        None. Extraction calls it before each batch: a bad file is logged (once) and the batch
        goes on without it, as it would without a glossary (so does one a change of it is
        refused by, say a name another batch just gave an entity: the next batch tries again)."""
        file = self.glossary_file()
        try:
            stat = file.stat()
        except OSError:  # no glossary (or none to read: read_glossary says why when asked)
            return None
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp == self._settled:
            return None
        try:
            try:
                glossary = read_glossary(file)
            except GraphmemError:  # a bad file stays bad until it changes
                self._settled = stamp
                raise
            if glossary is None or self.store.meta_get(APPLIED_KEY) == glossary.sha256:
                self._settled = stamp
                return None
            with self._lock:
                if self.store.meta_get(APPLIED_KEY) == glossary.sha256:  # applied meanwhile
                    self._settled = stamp
                    return None
                report = self._apply(glossary, dry_run=False)
        except GraphmemError as exc:
            if exc.message != self._refused:
                log.warning("the glossary is not applied: %s", exc.message)
            self._refused = exc.message
            return None
        self._refused = None
        self._settled = stamp
        return report

    def _apply(self, glossary: Glossary, *, dry_run: bool) -> GlossaryReport:
        report = _Application(self.store, self._edits, glossary, dry_run=dry_run).run()
        if not dry_run:
            self.store.meta_set(APPLIED_KEY, glossary.sha256)
        return report


class _Application:
    """One glossary applied to one store (or, in a dry run, planned: what the changes would
    leave is kept here, so a later name of the file sees the earlier ones' effect)."""

    def __init__(
        self, store: Store, edits: EntityEditOps, glossary: Glossary, *, dry_run: bool
    ) -> None:
        self.store = store
        self.glossary = glossary
        self.dry_run = dry_run
        self.run_id = new_id()
        self.edits = edits.audited_as(ACTOR, self.run_id)
        self.planned: dict[str, str] = {}  # dry run: name -> the entity it would resolve to
        self.folded: dict[str, str] = {}  # dry run: entity merged -> the entity it went into
        self.report = GlossaryReport(
            path=str(glossary.path), found=True, sha256=glossary.sha256, dry_run=dry_run,
            entries=len(glossary.entries),
        )  # fmt: skip

    def owner(self, norm: str) -> str | None:
        """The entity a name resolves to now (in a dry run: once the planned changes are)."""
        found = self.planned.get(norm) if self.dry_run else None
        found = found or self.store.entities.resolve_norms([norm]).get(norm)
        while found is not None and found in self.folded:
            found = self.folded[found]
        return found

    def run(self) -> GlossaryReport:
        entries = self.glossary.entries
        resolved = self.store.entities.resolve_norms([e.norm for e in entries])
        canonical = {entity: e.name for e in entries if (entity := resolved.get(e.norm))}
        for entry in entries:
            entity = self.owner(entry.norm) or self.create(entry)
            canonical.setdefault(entity, entry.name)
            for alias in entry.aliases:
                self.settle(entry, entity, alias, canonical)
        report = self.report
        done = [*report.created, *report.merged, *report.aliased]
        report.audit_ids = [n.audit_id for n in done if n.audit_id]
        report.run = self.run_id if report.changed and not self.dry_run else None
        return report

    def create(self, entry: GlossaryEntry) -> str:
        """An entity for a canonical name nothing resolves to, labelled as the first entity an
        alias of it names (that one is merged into it next), else as a concept."""
        known = [o for o in (self.owner(normalise(a)) for a in entry.aliases) if o]
        names = self.store.entities.names(known[:1])
        label = names[known[0]][1] if known and known[0] in names else NEW_LABEL
        if self.dry_run:
            entity, audit = entry.norm, None
            self.planned[entry.norm] = entity
        else:
            entity, audit = self.edits.create_entity(entry.name, label)
        self.report.created.append(
            GlossaryName(name=entry.name, norm=entry.norm, entity_id=entity, audit_id=audit)
        )
        return entity

    def settle(
        self, entry: GlossaryEntry, entity: str, alias: str, canonical: dict[str, str]
    ) -> None:
        norm: str = normalise(alias)
        owner = self.owner(norm)
        named = GlossaryName(name=alias, norm=norm, entity_id=entity)
        if owner == entity:
            self.report.unchanged.append(named)
        elif owner is not None and canonical.get(owner, entry.name) != entry.name:
            why = (
                f"{alias!r} names entity {owner!r}, the glossary's {canonical[owner]!r}: merge "
                f"them by hand (merge_entities {entity!r} [{owner!r}]) if they are one thing"
            )
            self.report.skipped.append(GlossarySkip(name=alias, entity_id=entity, why=why))
        elif owner is not None:
            named.merged = owner
            if self.dry_run:
                self.folded[owner] = entity
            else:
                named.audit_id = self.edits.merge_entities(entity, [owner]).audit_id
            self.report.merged.append(named)
        else:
            if self.dry_run:
                self.planned[norm] = entity
            else:
                named.audit_id = self.edits.add_entity_alias(entity, alias).audit_id
            self.report.aliased.append(named)
