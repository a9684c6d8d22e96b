"""Which entity a name is: one node per thing, however the texts spell it, and two nodes for two
things, however alike their names.

A new name is resolved, cheapest first, to:

1. the entity it was merged into before (EntityAlias), or the entity with that exact normalised
   name (the normaliser folded case, plurals and articles: "JWT", "the JWTs");
2. an entity spelt the same once punctuation and spaces are dropped ("billing-service",
   "billing service", "BillingService") whose name also means the same to the embedder, both
   spelled out ("Billing Service"). A snake_case name is a code name (a column, a database, a
   rake namespace named after the thing: "publishing_api") and joins only snake_case names;
3. the named thing, for a name followed by a noun that only says what kind of thing it is
   ("ledger-worker service", "publishing-api app", "Govspeak gem", "finder_filter object"), in
   whichever order the two forms arrive. The noun is singular ("GOV.UK applications" are several
   things) and what it follows is a name, not a plain word; after a known third-party tool it
   says what was built with it ("Rails app", "GitHub repo"), so there only "daemon", "server" or
   "process" count ("Docker daemon");
4. a person whose first name a one-word person name shortens ("Mel" -> "Melanie"), when only
   one person's name starts so.

Anything else is a new entity. A name with a modifier that picks out another thing ("pgbouncer
transaction mode", "search-api-v2 worker") is never merged into the modifier. Possessives never
reach this far: the extractor splits "sqlc's prepared statements" into sqlc and the prepared
statements.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from graphmem.extractors import ExtractedEntity
from graphmem.extractors.normalise import long_form
from graphmem.extractors.vocabulary import PACKAGES, PRODUCTS, words
from graphmem.storage.entities import EntityRow, compact_key
from graphmem.storage.store import KuzuStore

if TYPE_CHECKING:
    from graphmem.extractors import Extraction

EmbedNames = Callable[[list[str]], npt.NDArray[np.float32]]

# nouns that say what kind of software thing a name is ("app" and "repo" are normalised to
# "application" and "repository")
KIND_NOUNS = words(
    """
    service svc application api daemon server process gem library lib package module repository
    project tool object array class function method field column variable
    """
)
RUNNING = words("daemon server process")  # a third-party tool's own program
THIRD_PARTY = PACKAGES | PRODUCTS
_HUMPS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[\s\-_./:]+")


@dataclass(frozen=True)
class ResolutionRules:
    """The knobs of resolution; `python -m eval entities --cross` measures each setting."""

    same_meaning: float = 0.8  # cosine of two spelled-out names the compact key joins
    code_names_apart: bool = True  # snake_case names join only snake_case names
    kind_nouns: bool = True  # "ledger-worker service" is ledger-worker
    nickname_letters: int = 3  # shortest short form of a first name; 0 turns it off


DEFAULT_RULES = ResolutionRules()


@dataclass
class Resolution:
    ids: dict[str, str]  # norm -> entity id, for every name resolved
    rows: list[EntityRow]  # the entities to create
    aliases: dict[str, str]  # new aliases: norm -> entity id


@dataclass(frozen=True)
class Known:
    """An entity a new name may join, from the store or made earlier in this batch."""

    id: str  # an entity's id is the normalised name it was made from
    name: str
    label: str


def spelled_out(name: str) -> str:
    """ "PublishingAPI" and "publishing-api" as words: "Publishing API", "publishing api"."""
    return _SEPARATORS.sub(" ", _HUMPS.sub(" ", name)).strip()


def kind_split(norm: str) -> tuple[str, str] | None:
    """(name, kind noun) of "ledger-worker service"; None when the last word is no kind noun."""
    base, _, noun = norm.rpartition(" ")
    base = base.strip(" -_:")
    return (base, noun) if base and noun in KIND_NOUNS else None


def is_a_name(name: str, label: str) -> bool:
    """A pattern or the NER labelled it, or its last word has a capital, a digit or code
    punctuation: "notifier" and "Harry Potter fan" are a plain word and a kind of person,
    "Notifier", "notifier-v2", "notify_worker" and "Discovery Engine" are names."""
    last = name.rsplit(maxsplit=1)[-1] if name.strip() else ""
    return label != "concept" or any(ch.isupper() or ch.isdigit() or ch in "-_." for ch in last)


def kind_fits(noun: str, mention: ExtractedEntity, base: Known, base_said: str) -> bool:
    """Whether `noun` in `mention` ("publishing-api app") only says what kind of thing `base`
    is; `base_said` is how the mention wrote the base ("publishing-api")."""
    said = mention.name.rsplit(maxsplit=1)[-1]
    if long_form(said.casefold().strip(" .,;:`'\"")) != noun:
        return False  # a plural, or another spelling: several things, or a different one
    if base.name.casefold() in THIRD_PARTY or base.id in THIRD_PARTY:
        return noun in RUNNING
    return is_a_name(base.name, base.label) or is_a_name(base_said, "concept")


def _code_name(norm: str) -> bool:
    return "_" in norm


class EntityResolver:
    def __init__(
        self, store: KuzuStore, embed_names: EmbedNames | None, rules: ResolutionRules
    ) -> None:
        self.store = store
        self.embed_names = embed_names
        self.rules = rules

    def resolve(self, norms: Sequence[str], extractions: Sequence[Extraction]) -> Resolution:
        ids = self.store.resolve_norms(norms)
        firsts: dict[str, ExtractedEntity] = {}  # the first form and label of each new norm
        for extraction in extractions:
            for entity in extraction.entities:
                if entity.norm not in ids and compact_key(entity.norm):
                    firsts.setdefault(entity.norm, entity)
        out = Resolution(ids, [], {})
        if not firsts:
            return out
        # shorter names first, so "ledger-worker" is there when "ledger-worker service" comes
        order = sorted(firsts, key=lambda n: len(n.split()))
        batch = _Batch(self.store, {n: firsts[n] for n in order}, self.rules)
        for norm in order:
            entity = firsts[norm]
            match = self._match(norm, entity, batch)
            if match is not None:
                ids[norm] = out.aliases[norm] = match.id
                batch.add(norm, match)
                continue
            out.rows.append(EntityRow(norm, entity.name, norm, compact_key(norm), entity.label))
            batch.add(norm, Known(norm, entity.name, entity.label))
            ids[norm] = norm
        return out

    def _match(self, norm: str, entity: ExtractedEntity, batch: _Batch) -> Known | None:
        for known in batch.by_key.get(compact_key(norm), []):
            if self._same_spelling(norm, entity.name, known):
                return known
        if self.rules.kind_nouns:
            found = self._kind_of(norm, entity, batch)
            if found is not None:
                return found
        if self.rules.nickname_letters:
            return batch.person_shortened(norm, entity)
        return None

    def _same_spelling(self, norm: str, name: str, known: Known) -> bool:
        if self.rules.code_names_apart and _code_name(norm) != _code_name(known.id):
            return False
        if self.embed_names is None or name.lower() == known.name.lower():
            return True
        vectors = self.embed_names([spelled_out(name), spelled_out(known.name)])
        return float(vectors[0] @ vectors[1]) >= self.rules.same_meaning

    def _kind_of(self, norm: str, entity: ExtractedEntity, batch: _Batch) -> Known | None:
        """ "ledger-worker service" -> ledger-worker; "ledger-worker" -> an entity named
        "ledger-worker service" made before it."""
        split = kind_split(norm)
        if split is not None:
            base = batch.known(split[0])
            base_said = entity.name.rsplit(maxsplit=1)[0]
            if base is not None and kind_fits(split[1], entity, base, base_said):
                return base
        for noun in KIND_NOUNS:
            longer = batch.by_norm.get(f"{norm} {noun}")
            if longer is None:
                continue
            as_mention = ExtractedEntity(name=longer.name, norm=longer.id, label=longer.label)
            if kind_fits(noun, as_mention, Known(norm, entity.name, entity.label), entity.name):
                return longer
        return None


class _Batch:
    """What a batch of new names may join: entities of the store looked up once for the whole
    batch (by compact key, by the names a kind noun follows or leads to, by a first name's
    first letters), plus the entities the batch resolves as it goes."""

    def __init__(
        self, store: KuzuStore, new: dict[str, ExtractedEntity], rules: ResolutionRules
    ) -> None:
        kinds = rules.kind_nouns
        bases = [s[0] for s in map(kind_split, new) if s is not None] if kinds else []
        longer = [
            f"{norm} {noun}"
            for norm, entity in new.items()
            if kinds and is_a_name(entity.name, entity.label) and len(norm.split()) < 4
            for noun in KIND_NOUNS
        ]
        self.by_key: dict[str, list[Known]] = {
            key: [Known(*row) for row in rows]
            for key, rows in store.entities_by_key([compact_key(n) for n in [*new, *bases]]).items()
        }
        resolved = store.resolve_norms(bases)
        names = store.entity_names(list(resolved.values()))
        self.by_norm: dict[str, Known] = {
            norm: Known(entity, *names[entity])
            for norm, entity in resolved.items()
            if entity in names
        }
        # a longer form made before its name: an entity of its own ("ledger-worker service")
        for entity, (name, label) in store.entity_names(longer).items():
            self.by_norm[entity] = Known(entity, name, label)
        self.code_names_apart = rules.code_names_apart
        self.letters = rules.nickname_letters
        self.people: dict[str, list[Known]] = {}  # one-word people by their first letters
        if self.letters:
            prefixes = [n[: self.letters] for n in new if n.isalpha() and len(n) >= self.letters]
            for entity, norm, name in store.people_by_prefix(prefixes):
                self.people.setdefault(norm[: self.letters], []).append(
                    Known(entity, name, "person")
                )

    def add(self, norm: str, known: Known) -> None:
        """A name of this batch resolved to `known` (a new entity or one it joined)."""
        if known.id == norm:
            self.by_key.setdefault(compact_key(norm), []).append(known)
        self.by_norm[norm] = known
        if self.letters and known.label == "person" and norm.isalpha() and known.id == norm:
            self.people.setdefault(norm[: self.letters], []).append(known)

    def known(self, norm: str) -> Known | None:
        """The entity a name is, by its norm, else by its compact key (a snake_case name only
        by another's, see the module doc)."""
        if norm in self.by_norm:
            return self.by_norm[norm]
        spelt = self.by_key.get(compact_key(norm), [])
        if self.code_names_apart:
            spelt = [k for k in spelt if _code_name(k.id) == _code_name(norm)]
        return next(iter(spelt), None)

    def person_shortened(self, norm: str, entity: ExtractedEntity) -> Known | None:
        """The one person whose one-word name this one shortens, or that shortens this one."""
        if (
            entity.label != "person"
            or not entity.name[:1].isupper()
            or not norm.isalpha()
            or len(norm) < self.letters
        ):
            return None
        found = {
            p.id: p
            for p in self.people.get(norm[: self.letters], [])
            if p.id != norm and (p.id.startswith(norm) or norm.startswith(p.id))
        }
        return next(iter(found.values())) if len(found) == 1 else None
