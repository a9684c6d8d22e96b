"""Facts read off the dependency parse: who did what to whom, in the active voice.

Each verb's arguments are first put into logical roles, so that "B was replaced by A" and
"A replaced B" both give `doer=A, done_to=B`. A table of known verbs then says how the roles
become a fact; any other verb with a doer and a thing done to yields a generic fact named by
its lemma. Pronouns ("we", "it") never become a side of a fact; only "I" in a chat turn
that names its speaker is read as that speaker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .facts import CANONICAL, GENERIC, FactTable, snake_case
from .mentions import Mention

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

Owner = Callable[["Token"], Mention | None]
Lemma = Callable[["Token"], str]

_SUBJECTS = {"nsubj", "csubj", "expl"}
_PASSIVE_SUBJECTS = {"nsubjpass", "csubjpass"}
_OBJECTS = {"dobj", "obj", "attr", "dative", "oprd"}
_INSTRUMENTS = ("with", "using", "via", "through")
_RELATIVE = {"that", "which", "who", "whom"}
_PRONOUN_TAGS = {"PRP", "PRP$", "WP", "WDT", "EX"}
_PRONOUN_WORDS = {"we", "it", "they", "i", "you"}
_FIRST_PERSON = {"i", "me", "myself"}
_RENAMED = {"be": "is", "have": "has"}
_SKIPPED = {"do", "let", "seem", "become", "get"}
# a clause hanging off one of these is a parser slip ("release 3.4: caused by ..."), not a fact
_NOT_MODIFIED = {"version", "date", "ticket", "http_status"}


@dataclass
class Roles:
    """A verb's arguments as entity keys, in active-voice terms."""

    doer: list[str] = field(default_factory=list)
    done_to: list[str] = field(default_factory=list)
    preps: dict[str, list[str]] = field(default_factory=dict)
    passive: bool = False

    def prep(self, *words: str) -> list[str]:
        return [key for w in words for key in self.preps.get(w, [])]

    def instrument(self) -> list[str]:
        return self.prep(*_INSTRUMENTS) or (self.prep("by") if not self.passive else [])


def _with_conjuncts(tokens: list[Token]) -> Iterator[Token]:
    for t in tokens:
        yield t
        yield from t.conjuncts


def _keys(tokens: list[Token], owner: Owner) -> list[str]:
    keys: list[str] = []
    for t in _with_conjuncts(tokens):
        m = owner(t)
        key = m.fact_key if m else None
        if key and key not in keys:
            keys.append(key)
    return keys


def _own_subjects(verb: Token) -> tuple[list[Token], list[Token]]:
    subjects = [c for c in verb.children if c.dep_ in _SUBJECTS]
    passive_subjects = [c for c in verb.children if c.dep_ in _PASSIVE_SUBJECTS]
    return subjects, passive_subjects


def _subjects(verb: Token, owner: Owner) -> tuple[list[Token], list[Token]]:
    """Subjects, borrowed from the governing verb or noun when the verb has none of its own."""
    subjects, passive_subjects = _own_subjects(verb)
    if verb.dep_ in ("relcl", "acl"):
        modified = owner(verb.head)
        if modified is not None and modified.label in _NOT_MODIFIED:
            return [], []
        subjects = [verb.head if s.lower_ in _RELATIVE else s for s in subjects]
        passive_subjects = [verb.head if s.lower_ in _RELATIVE else s for s in passive_subjects]
        if not subjects and not passive_subjects:
            if verb.tag_ == "VBN":
                passive_subjects = [verb.head]
            else:
                subjects = [verb.head]
    head = verb
    while not subjects and not passive_subjects and head.dep_ in ("conj", "xcomp"):
        head = head.head
        borrowed = [t for group in _own_subjects(head) for t in group]
        if any(c.dep_ == "auxpass" for c in verb.children):
            passive_subjects = borrowed
        else:
            subjects = borrowed
    return subjects, passive_subjects


def _preps(verb: Token, owner: Owner) -> dict[str, list[str]]:
    """Prepositional objects of the verb, following chains like "from X to Y"."""
    found: dict[str, list[str]] = {}
    stack = [c for c in verb.children if c.dep_ == "prep"]
    while stack:
        prep = stack.pop(0)
        objects = [c for c in prep.children if c.dep_ in ("pobj", "pcomp")]
        known = found.setdefault(prep.lower_, [])
        known.extend(k for k in _keys(objects, owner) if k not in known)
        stack.extend(c for c in prep.children if c.dep_ == "prep")
        stack.extend(
            c for o in objects for c in o.children if c.dep_ == "prep" and c.lower_ == "to"
        )
    return found


def roles(verb: Token, owner: Owner) -> Roles:
    subjects, passive_subjects = _subjects(verb, owner)
    passive = bool(passive_subjects) or any(c.dep_ == "auxpass" for c in verb.children)
    objects = [c for c in verb.children if c.dep_ in _OBJECTS]
    agents = [o for c in verb.children if c.dep_ == "agent" for o in c.children if o.dep_ == "pobj"]
    if passive:
        return Roles(
            doer=_keys(agents, owner),
            done_to=_keys(passive_subjects + objects, owner),
            preps=_preps(verb, owner),
            passive=True,
        )
    return Roles(
        doer=_keys(subjects, owner), done_to=_keys(objects, owner), preps=_preps(verb, owner)
    )


Rule = Callable[[Roles], Iterator[tuple[str, str, str]]]


def _pairs(left: list[str], predicate: str, right: list[str]) -> Iterator[tuple[str, str, str]]:
    for a in left:
        for b in right:
            yield a, predicate, b


def _uses(r: Roles) -> Iterator[tuple[str, str, str]]:
    yield from _pairs(r.doer, "uses", r.done_to)


def _depends(r: Roles) -> Iterator[tuple[str, str, str]]:
    yield from _pairs(r.doer, "depends_on", r.prep("on", "upon"))


def _causes(r: Roles) -> Iterator[tuple[str, str, str]]:
    yield from _pairs(r.doer, "caused", r.done_to)


def _leads(r: Roles) -> Iterator[tuple[str, str, str]]:
    yield from _pairs(r.doer, "caused", r.prep("to"))


def _results(r: Roles) -> Iterator[tuple[str, str, str]]:
    yield from _pairs(r.doer, "caused", r.prep("in"))


def _fixes(r: Roles) -> Iterator[tuple[str, str, str]]:
    yield from _pairs(r.instrument() or r.doer, "fixed", r.done_to)


def _replaces(r: Roles) -> Iterator[tuple[str, str, str]]:
    yield from _pairs(r.instrument() or r.doer, "replaced", r.done_to)


def _mitigates(r: Roles) -> Iterator[tuple[str, str, str]]:
    yield from _pairs(r.done_to, "mitigated_by", r.instrument() or r.doer)


def _migrates(r: Roles) -> Iterator[tuple[str, str, str]]:
    moved = r.done_to or ([] if r.passive else r.doer)
    yield from _pairs(moved, "migrated_from", r.prep("from"))
    yield from _pairs(moved, "migrated_to", r.prep("to", "onto", "into"))


def _owns(r: Roles) -> Iterator[tuple[str, str, str]]:
    yield from _pairs(r.done_to, "owned_by", r.doer)


def _deploys(r: Roles) -> Iterator[tuple[str, str, str]]:
    deployed = r.done_to or ([] if r.passive else r.doer)
    yield from _pairs(deployed, "deployed_to", r.prep("to", "on", "onto", "into"))


def _breaks(r: Roles) -> Iterator[tuple[str, str, str]]:
    yield from _pairs(r.doer, "broke", r.done_to)


def _blocks(r: Roles) -> Iterator[tuple[str, str, str]]:
    yield from _pairs(r.done_to, "blocked_by", r.doer)


CANONICAL_VERBS: dict[str, Rule] = {
    "use": _uses,
    "utilize": _uses,
    "utilise": _uses,
    "depend": _depends,
    "rely": _depends,
    "cause": _causes,
    "trigger": _causes,
    "lead": _leads,
    "result": _results,
    "fix": _fixes,
    "resolve": _fixes,
    "replace": _replaces,
    "supersede": _replaces,
    "mitigate": _mitigates,
    "migrate": _migrates,
    "move": _migrates,
    "switch": _migrates,
    "port": _migrates,
    "own": _owns,
    "maintain": _owns,
    "deploy": _deploys,
    "ship": _deploys,
    "break": _breaks,
    "block": _blocks,
}


def _generic(lemma: str, r: Roles) -> Iterator[tuple[str, str, str]]:
    if lemma in _SKIPPED:
        return
    predicate = snake_case(_RENAMED.get(lemma, lemma))
    yield from _pairs(r.doer, predicate, r.done_to)
    actors = r.done_to if r.passive else r.doer
    for prep, objects in r.preps.items():
        if prep != "by":
            yield from _pairs(actors, snake_case(f"{predicate}_{prep}"), objects)


def _is_verb(token: Token) -> bool:
    if token.dep_ in ("aux", "auxpass") or token.tag_ == "MD":
        return False
    return token.tag_.startswith("VB")


def possessive_facts(doc: Doc, owner: Owner, table: FactTable) -> None:
    """ "sqlc's prepared statements" -> (sqlc, has, prepared statement): the possessive phrase
    names two entities, and this keeps what tied them."""
    for token in doc:
        if token.dep_ != "poss" or token.tag_ in _PRONOUN_TAGS:
            continue
        owned, owning = owner(token.head), owner(token)
        if owned is not None and owning is not None and owned.fact_key != owning.fact_key:
            table.add(owning.fact_key, "has", owned.fact_key, token.sent.text, GENERIC)


def facts_from_doc(doc: Doc, owner: Owner, lemma: Lemma, table: FactTable) -> None:
    possessive_facts(doc, owner, table)
    for verb in doc:
        if not _is_verb(verb) or any(c.dep_ == "neg" for c in verb.children):
            continue
        verb_lemma = lemma(verb)
        if verb_lemma == "be" and any(c.dep_ == "acomp" for c in verb.children):
            continue  # "deploys were slow on Monday": the phrase qualifies "slow", not a link
        r = roles(verb, owner)
        if not r.doer and not r.done_to:
            continue
        sentence = verb.sent.text
        rule = CANONICAL_VERBS.get(verb_lemma)
        if rule is not None:
            for s, p, o in rule(r):
                table.add(s, p, o, sentence, CANONICAL)
        else:
            particle = next((c.lower_ for c in verb.children if c.dep_ == "prt"), None)
            phrase = f"{verb_lemma}_{particle}" if particle else verb_lemma
            for s, p, o in _generic(phrase, r):
                table.add(s, p, o, sentence, GENERIC)


def owner_map(
    doc: Doc, mentions: list[Mention], speakers: list[Mention] | None = None
) -> list[Mention | None]:
    """The strongest mention covering each token, or None for a pronoun, except that "I" and
    "me" in a chat turn ("Caroline: I went ...") stand for the turn's speaker."""
    owners: list[Mention | None] = [None] * len(doc)
    for m in sorted(mentions, key=lambda m: m.rank):
        span = doc.char_span(m.start, m.end, alignment_mode="expand")
        if span is None:
            continue
        for t in span:
            owners[t.i] = m
    for t in doc:
        if t.tag_ in _PRONOUN_TAGS or t.lower_ in _PRONOUN_WORDS:
            owners[t.i] = None
            if t.lower_ in _FIRST_PERSON and speakers:
                owners[t.i] = next((s for s in reversed(speakers) if s.end <= t.idx), None)
    return owners
