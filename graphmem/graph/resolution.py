"""Which entity a name is: one node per thing, however the texts spell it, and two nodes for two
things, however alike their names.

A new name is resolved, cheapest first, to:

1. the entity it was merged into before (EntityAlias), or the entity with that exact normalised
   name (the normaliser folded case, plurals and articles: "JWT", "the JWTs");
2. an entity spelt the same once punctuation and spaces are dropped ("billing-service",
   "billing service", "BillingService") whose name also means the same to the embedder, both
   spelled out ("Billing Service"). A code name, snake_case or lowerCamelCase (a column, a
   database, a rake namespace, a field named after the thing: "publishing_api",
   "retryPolicy"), joins only code names;
3. the same name in the singular, for a plural the normaliser keeps: on the last segment of a
   hyphenated name or the last hump of a CamelCase one ("payments-dashboards", "RetryPolicies")
   or on the last word of a Title Case name of two words or more ("Postgres Replicas"), in
   whichever order the two forms arrive. Only a singular already known is joined, so a one-word
   name that looks plural ("James") keeps its letters;
4. the named thing, for a name followed by a noun that only says what kind of thing it is
   ("ledger-worker service", "publishing-api app", "Govspeak gem", "finder_filter object"), in
   whichever order the two forms arrive. The noun is singular ("GOV.UK applications" are several
   things) and what it follows is a name, not a plain word; after a known third-party tool it
   says what was built with it ("Rails app", "GitHub repo"), so there only "daemon", "server" or
   "process" count ("Docker daemon");
5. the name a cloud vendor's name leads ("AWS Lambda" -> "Lambda", "Amazon Kinesis stream" ->
   "Kinesis stream"), in whichever order the two forms arrive: the name starts with a
   capital or a digit and is written with the same letters and case on its own ("AWS account"
   is an account, "Google Docs" is not "DOCS");
6. a person whose first name a one-word person name shortens ("Mel" -> "Melanie"), when only
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
from graphmem.extractors.normalise import long_form, singular
from graphmem.extractors.vocabulary import PACKAGES, PRODUCTS, words
from graphmem.storage.protocols import EntityRow, Store, compact_key

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
# cloud vendors whose product names are written with and without the vendor's name ("AWS
# Lambda", "Amazon Kinesis", "Google BigQuery", "Azure Functions")
VENDORS = words("aws amazon google gcp azure microsoft")
THIRD_PARTY = PACKAGES | PRODUCTS
_HUMPS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[\s\-_./:]+")
_LOWER_CAMEL = re.compile(r"[a-z][a-z0-9]+(?:[A-Z][a-z0-9]+)+")  # "retryPolicy", not "jQuery"
_QUOTES = " `'\"“”‘’"


@dataclass(frozen=True)
class ResolutionRules:
    """The knobs of resolution; `python -m eval entities --cross` measures each setting."""

    same_meaning: float = 0.8  # cosine of two spelled-out names the compact key joins
    code_names_apart: bool = True  # snake_case names join only snake_case names
    kind_nouns: bool = True  # "ledger-worker service" is ledger-worker
    plurals: bool = True  # "payments-dashboards", "RetryPolicies" join a known singular
    vendors: bool = True  # "AWS Lambda" is Lambda
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


def code_name(norm: str, name: str) -> bool:
    """A snake_case ("publishing_api") or lowerCamelCase ("retryPolicy") name: an
    identifier in code (a column, a field, a variable) named after a thing, not the thing."""
    return "_" in norm or bool(_LOWER_CAMEL.fullmatch(name.strip(_QUOTES)))


def singular_spelling(name: str, norm: str) -> tuple[str, str] | None:
    """(norm, name) of `name` with a plural the normaliser keeps made singular, or None: the
    last segment of a hyphenated name ("payments-dashboards"), the last hump of a CamelCase one
    ("RetryPolicies") and the last word of a Title Case name of two words or more ("Postgres
    Replicas"). A one-word Title Case name keeps its letters ("James", "Paris")."""
    said = name.strip(_QUOTES + ".,;:!?")
    words = said.split()
    if not words or "_" in norm:
        return None
    last = words[-1]
    piece = last.rpartition("-")[2]
    if piece == last:
        piece = _HUMPS.split(last)[-1]
        if piece == last and len(words) < 2:
            return None
    if not (piece.isalpha() and (piece.islower() or piece.istitle())):
        return None
    one = singular(piece.lower())
    if one == piece.lower() or not norm.endswith(piece.lower()):
        return None
    written = one.capitalize() if piece.istitle() else one
    return norm[: -len(piece)] + one, said[: -len(piece)] + written


def _letters(text: str) -> str:
    return "".join(ch for ch in text if ch.isalnum())


def vendor_split(norm: str, name: str) -> tuple[str, str] | None:
    """(norm, spelling) of the name a cloud vendor's name leads ("AWS Lambda" -> "lambda",
    "Lambda"), or None: the name must start with a capital or a
    digit ("AWS account" is an account of AWS, not a thing called "account")."""
    first, _, rest = norm.partition(" ")
    said = name.split(maxsplit=1)
    if first not in VENDORS or not rest or len(said) < 2:
        return None
    spelt = said[1].strip(_QUOTES)
    return (rest, spelt) if spelt[:1].isupper() or spelt[:1].isdigit() else None


def written_alike(said: str, known: Known) -> bool:
    """Whether an entity's name starts with the first word of `said`, letter for letter and
    case for case ("Big" / "BigQuery", "Kinesis" / "Kinesis stream", not "Docs" / "DOCS")."""
    word = _letters(said.split(maxsplit=1)[0]) if said.strip() else ""
    return bool(word) and _letters(known.name).startswith(word)


def plural_keys(key: str) -> list[str]:
    """The compact keys a plural of a name with this key may have."""
    keys = [key + "s", key + "es"]
    return [*keys, key[:-1] + "ies"] if key.endswith("y") else keys


class EntityResolver:
    def __init__(
        self, store: Store, embed_names: EmbedNames | None, rules: ResolutionRules
    ) -> None:
        self.store = store
        self.embed_names = embed_names
        self.rules = rules

    def resolve(self, norms: Sequence[str], extractions: Sequence[Extraction]) -> Resolution:
        ids = self.store.entities.resolve_norms(norms)
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
        if self.rules.plurals:
            found = self._plural_of(norm, entity, batch)
            if found is not None:
                return found
        if self.rules.kind_nouns:
            found = self._kind_of(norm, entity, batch)
            if found is not None:
                return found
        if self.rules.vendors:
            found = self._vendor_of(norm, entity, batch)
            if found is not None:
                return found
        if self.rules.nickname_letters:
            return batch.person_shortened(norm, entity)
        return None

    def _same_spelling(self, norm: str, name: str, known: Known) -> bool:
        if self.rules.code_names_apart and code_name(norm, name) != code_name(known.id, known.name):
            return False
        if self.embed_names is None or name.lower() == known.name.lower():
            return True
        vectors = self.embed_names([spelled_out(name), spelled_out(known.name)])
        return float(vectors[0] @ vectors[1]) >= self.rules.same_meaning

    def _plural_of(self, norm: str, entity: ExtractedEntity, batch: _Batch) -> Known | None:
        """ "payments-dashboards" -> "payments-dashboard", whichever of the two came first."""
        one = singular_spelling(entity.name, norm)
        if one is not None:
            for known in batch.by_key.get(compact_key(one[0]), []):
                if self._same_spelling(*one, known):
                    return known
        key = compact_key(norm)
        for plural in plural_keys(key):
            for known in batch.by_key.get(plural, []):
                one = singular_spelling(known.name, known.id)
                if one is None or compact_key(one[0]) != key:
                    continue
                if self._same_spelling(norm, entity.name, Known(one[0], one[1], known.label)):
                    return known
        return None

    def _vendor_of(self, norm: str, entity: ExtractedEntity, batch: _Batch) -> Known | None:
        """ "AWS Lambda" -> Lambda; "Kinesis stream" -> an entity named "Amazon Kinesis stream"
        made before it."""
        split = vendor_split(norm, entity.name)
        if split is not None:
            known = batch.known(*split)
            if known is not None and written_alike(split[1], known):
                return known
        if not entity.name[:1].isupper() and not entity.name[:1].isdigit():
            return None
        for vendor in sorted(VENDORS):
            longer = batch.by_norm.get(f"{vendor} {norm}")
            if longer is None:
                continue
            led = vendor_split(longer.id, longer.name)
            if led is not None and written_alike(led[1], Known(norm, entity.name, "")):
                return longer
        return None

    def _kind_of(self, norm: str, entity: ExtractedEntity, batch: _Batch) -> Known | None:
        """ "ledger-worker service" -> ledger-worker; "ledger-worker" -> an entity named
        "ledger-worker service" made before it."""
        split = kind_split(norm)
        if split is not None:
            base_said = entity.name.rsplit(maxsplit=1)[0]
            base = batch.known(split[0], base_said)
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
        self, store: Store, new: dict[str, ExtractedEntity], rules: ResolutionRules
    ) -> None:
        kinds = rules.kind_nouns
        bases = [s[0] for s in map(kind_split, new) if s is not None] if kinds else []
        if rules.vendors:
            bases += [s[0] for s in (vendor_split(n, e.name) for n, e in new.items()) if s]
        spellings = [compact_key(n) for n in [*new, *bases]]
        if rules.plurals:
            ones = (singular_spelling(e.name, n) for n, e in new.items())
            spellings += [compact_key(one[0]) for one in ones if one is not None]
            spellings += [k for n in new for k in plural_keys(compact_key(n))]
        longer = [
            f"{norm} {noun}"
            for norm, entity in new.items()
            if kinds and is_a_name(entity.name, entity.label) and len(norm.split()) < 4
            for noun in KIND_NOUNS
        ]
        self.by_key: dict[str, list[Known]] = {
            key: [Known(*row) for row in rows]
            for key, rows in store.entities.by_key(spellings).items()
        }
        resolved = store.entities.resolve_norms(bases)
        names = store.entities.names(list(resolved.values()))
        self.by_norm: dict[str, Known] = {
            norm: Known(entity, *names[entity])
            for norm, entity in resolved.items()
            if entity in names
        }
        if rules.vendors:
            longer += [f"{vendor} {norm}" for norm in new for vendor in VENDORS]
        # a longer form made before its name: an entity of its own ("ledger-worker service")
        for entity, (name, label) in store.entities.names(longer).items():
            self.by_norm[entity] = Known(entity, name, label)
        self.code_names_apart = rules.code_names_apart
        self.letters = rules.nickname_letters
        self.people: dict[str, list[Known]] = {}  # one-word people by their first letters
        if self.letters:
            prefixes = [n[: self.letters] for n in new if n.isalpha() and len(n) >= self.letters]
            for entity, norm, name in store.entities.people_by_prefix(prefixes):
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

    def known(self, norm: str, said: str) -> Known | None:
        """The entity a name is, by its norm, else by its compact key (a code name only by
        another's, see the module doc); `said` is how the text wrote it."""
        if norm in self.by_norm:
            return self.by_norm[norm]
        spelt = self.by_key.get(compact_key(norm), [])
        if self.code_names_apart:
            code = code_name(norm, said)
            spelt = [k for k in spelt if code_name(k.id, k.name) == code]
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
