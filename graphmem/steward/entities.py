"""Resolution's likely mistakes, for a person (or an agent) to decide: two entities that are
probably one thing, and a name one entity took in that probably names another.

Resolution without an LLM merges only on spelling it can trust (graph/resolution.py); what is
left needs knowledge the text does not spell out ("Duncan" is William Duncan, "Marsuhl" is a
typo of Marksuhl, "NYC" is New York City). The steward ranks the candidates by the evidence a
person would look at, and accepting one merges (or splits) through the audited corrections, so
the name resolves the same way in every later text; a dismissed suggestion is never filed again.

A pair is a candidate when one name ends or starts the other, begins alike with as many words,
or is the other's initials. Its confidence is how alike the names are, times how much their
texts agree:

- the names: the shorter is the end of the longer ("Duncan", "William Duncan": English puts a
  name's head last, so "Slack channel" is another thing than Slack, and only a person's first
  name starts the full name), its initials, or each word of one spelt nearly as a word of the
  other ("Johann Ernst", "John Ernest"); after a preposition ("Cleopatra of Jerusalem") or in
  plain lower-case words ("acoustic guitar", a kind of guitar) an end says less;
- the texts: named in one text (a text names someone in full, then shortly), or beside the same
  other entities;
- a short name that could end several longer ones ("Duncan": William or Isadora) is less sure,
  and two labels that cannot be one thing (a person and a place) count against it.

A wrong merge is a name an entity was mentioned by whose words say more than the entity's name
(a possessive, a plural or a further word: "data.gov.uk applications" taken in by data.gov.uk),
proposed as a split of the texts that said it.
"""

from __future__ import annotations

import difflib
import functools
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from graphmem.extractors.normalise import normalise
from graphmem.extractors.vocabulary import words as word_set

_WORD = re.compile(r"[^\W_]+")
# digits, or a Roman numeral (regnal: "Henry III"), not a word of its letters ("civil")
_NUMBER = re.compile(r"\d+|(?=[mdclxvi])m*(c[md]|d?c{0,3})(x[cl]|l?x{0,3})(i[xv]|v?i{0,3})")
MAX_BLOCK = 40  # a name more others end or start with is a kind of thing ("service")
MIN_CONFIDENCE = 0.3  # below this a suggestion is noise to a person
SPELLING = 0.8  # two words this alike (difflib's ratio) may be one word misspelt
ALONE = 6  # letters a one-word name needs at least to be another's misspelling
# words that join a name's head to what follows: what ends "University of Alabama" is a place
# the university is named after, not the university
LINKS = word_set("of de del della di da von van zu du des la le at in on for")
ARTICLES = frozenset(("the", "a", "an"))
ADDRESSES = frozenset(("url", "path"))  # where a thing is, spelt exactly: no name to misspell
MIN_SHARED = 2  # neighbours two entities share at least for their company to count
MAX_EXTRA = 3  # more words than this before a name make a title ("how-to-contact-...-engine")
# labels that name things of different sorts: a person is not a place or an organisation
_SORTS = {"person": "person", "gpe": "place", "loc": "place", "fac": "place", "org": "org",
          "norp": "group", "date": "time", "time": "time"}  # fmt: skip


@dataclass
class EntityTexts:
    """The entity graph as suggestions read it: names, labels, and which texts say what."""

    names: dict[str, str]
    labels: dict[str, str]
    sources: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    said: dict[str, dict[str, set[str]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(set))
    )  # entity -> norm of the words a text used -> those texts
    spelt: dict[str, str] = field(default_factory=dict)  # norm of the words -> as first written

    @classmethod
    def read(
        cls, entities: Iterable[tuple[str, str, str]], mentions: Iterable[tuple[str, str, str]]
    ) -> EntityTexts:
        names: dict[str, str] = {}
        labels: dict[str, str] = {}
        for entity_id, name, label in entities:
            if label not in ADDRESSES:
                names[entity_id], labels[entity_id] = name, label
        out = cls(names, labels)
        norms: dict[str, str] = {}  # the same words are said in many texts
        for source, entity_id, words in mentions:
            if entity_id not in names:
                continue
            out.sources[entity_id].add(source)
            if words and words not in norms:
                norms[words] = normalise(words)
            norm = norms[words] if words else entity_id
            out.said[entity_id][norm].add(source)
            out.spelt.setdefault(norm, words)
        return out

    def neighbours(self, entity_id: str, by_source: dict[str, set[str]]) -> set[str]:
        return {e for s in self.sources.get(entity_id, ()) for e in by_source[s]} - {entity_id}


@dataclass(frozen=True)
class Suggestion:
    kind: str  # same_entity | wrong_merge
    keep: str  # the entity kept (same_entity) or split (wrong_merge)
    other: str  # the entity folded in (same_entity) or the words split off (wrong_merge)
    confidence: float
    evidence: dict[str, object]
    summary: str  # one line for the inbox
    texts: list[str] = field(default_factory=list)  # wrong_merge: the texts that move


def words_of(name: str) -> list[str]:
    """A name's words, in lower case, without a leading article."""
    words = _WORD.findall(name.casefold())
    return words[1:] if len(words) > 1 and words[0] in ARTICLES else words


def initials(words: Sequence[str]) -> str:
    return "".join(w[0] for w in words)


def plain(name: str) -> bool:
    """Written in plain lower-case words ("acoustic guitar"): a kind of thing, not a name."""
    return not any(ch.isupper() or ch.isdigit() or ch in "-_./" for ch in name)


def name_likeness(
    short: Sequence[str], long: Sequence[str], written: str, labels: tuple[str, str]
) -> tuple[float, str]:
    """How alike two names are as names of one thing, and why: `short` and `long` are their
    words (shorter first), `written` the longer as written, `labels` theirs (shorter first)."""
    if not short or not long or short == long:
        return 0.0, ""
    extra = len(long) - len(short)
    if 0 < extra <= MAX_EXTRA and tuple(long[-len(short) :]) == tuple(short):
        if not any(ch.isspace() for ch in written.strip()):  # "govuk-docker" is a repository
            return 0.0, ""
        if long[-len(short) - 1] in LINKS:  # "Cleopatra of Jerusalem" is not Jerusalem
            return 0.5, "the end of the other name, after a preposition"
        if plain(written):  # "acoustic guitar" is a kind of guitar
            return 0.3, "the end of the other name, in plain words"
        return max(0.6, 1.0 - 0.1 * extra), "the end of the other name"
    if len(short) == 1 and len(long) >= 2 and len(short[0]) >= 2 and short[0] == initials(long):
        return 0.9, "the other name's initials"
    if extra == 0 and all(respelt(a, b) for a, b in zip(short, long, strict=True)):
        if len(short) == 1 and min(len(short[0]), len(long[0])) < ALONE:
            return 0.0, ""  # "Logit", "login": a letter apart, and two words
        whole = difflib.SequenceMatcher(None, " ".join(short), " ".join(long)).ratio()
        return whole, "spelt nearly alike"
    if extra > 0 and tuple(long[: len(short)]) == tuple(short) and labels == ("person",) * 2:
        return 0.6, "the start of the other name"  # a first name, then the full name
    return 0.0, ""  # "Slack channel" is not Slack: a name's head is its last word


@functools.lru_cache(maxsize=1 << 16)
def respelt(a: str, b: str) -> bool:
    """One word spelt two ways ("Johann", "John"); a number is never another's misspelling
    ("Henry II", "Henry III"; "2019", "2018")."""
    if a == b:
        return True
    if min(len(a), len(b)) < 4 or _NUMBER.fullmatch(a) or _NUMBER.fullmatch(b):
        return False
    if 2 * min(len(a), len(b)) < SPELLING * (len(a) + len(b)):
        return False  # the ratio is at most this: too far apart in length
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return matcher.quick_ratio() >= SPELLING and matcher.ratio() >= SPELLING


def sorts_clash(a: str, b: str) -> bool:
    sa, sb = _SORTS.get(a), _SORTS.get(b)
    return sa is not None and sb is not None and sa != sb


def candidate_pairs(words: dict[str, tuple[str, ...]]) -> Iterator[tuple[str, str]]:
    """Pairs of entities one of whose names starts or ends the other, begins alike with as
    many words, or is the other's initials; each pair once. A name that starts or ends more
    than `MAX_BLOCK` others ("service") is a kind of thing: it pairs with none of them."""
    ends: dict[tuple[str, ...], list[str]] = defaultdict(list)
    starts: dict[tuple[str, ...], list[str]] = defaultdict(list)
    alike: dict[tuple[str, int], list[str]] = defaultdict(list)
    by_initials: dict[str, list[str]] = defaultdict(list)
    for entity_id, w in words.items():
        for k in range(1, len(w)):
            ends[w[-k:]].append(entity_id)
            starts[w[:k]].append(entity_id)
        if w and len(w[0]) >= 4:
            alike[(w[0][:3], len(w))].append(entity_id)
        if len(w) >= 2:
            by_initials[initials(w)].append(entity_id)
    seen: set[tuple[str, str]] = set()
    groups: list[tuple[str | None, list[str]]] = [
        (None, g) for g in alike.values() if 1 < len(g) <= MAX_BLOCK
    ]
    for entity_id, w in words.items():
        initialled = by_initials.get(w[0], ()) if len(w) == 1 else ()
        for block in (ends.get(w, ()), starts.get(w, ()), initialled):
            if 0 < len(block) <= MAX_BLOCK:
                groups.append((entity_id, list(block)))
    for centre, group in groups:
        pairs = (
            ((a, b) for i, a in enumerate(group) for b in group[i + 1 :])
            if centre is None
            else ((centre, b) for b in group)
        )
        for a, b in pairs:
            pair = (a, b) if a < b else (b, a)
            if a != b and pair not in seen:
                seen.add(pair)
                yield pair


def same_entities(graph: EntityTexts) -> list[Suggestion]:
    """Pairs of entities likely one thing, best first."""
    by_source: dict[str, set[str]] = defaultdict(set)
    for entity_id, sources in graph.sources.items():
        for source in sources:
            by_source[source].add(entity_id)
    scored: list[tuple[str, str, float, str]] = []
    endings: Counter[tuple[str, ...]] = Counter()  # how many longer names a short one ends
    words = {e: tuple(words_of(name)) for e, name in graph.names.items()}
    for a, b in candidate_pairs(words):
        wa, wb = words[a], words[b]
        short, long = (a, b) if (len(wa), wa) <= (len(wb), wb) else (b, a)
        likeness, why = name_likeness(
            words[short], words[long], graph.names[long],
            (graph.labels.get(short, ""), graph.labels.get(long, "")),
        )  # fmt: skip
        if likeness <= 0:
            continue
        if why.startswith("the end of the other name"):
            endings[words[short]] += 1
        scored.append((long, short, likeness, why))
    company: dict[str, set[str]] = {}

    def neighbours(entity_id: str) -> set[str]:
        if entity_id not in company:
            company[entity_id] = graph.neighbours(entity_id, by_source)
        return company[entity_id]

    out = []
    for long, short, likeness, why in scored:
        together = len(graph.sources.get(long, set()) & graph.sources.get(short, set()))
        na, nb = neighbours(long), neighbours(short)
        shared = len((na & nb) - {long, short})
        # the share of the rarer one's company the other keeps too: a name seldom written
        # keeps the company of the name it shortens, however often that one is written
        overlap = shared / min(len(na), len(nb)) if shared >= MIN_SHARED else 0.0
        context = min(1.0, 0.5 * min(together, 2) + overlap * 2)
        ambiguous = endings[words[short]] if why.startswith("the end") else 1
        clash = sorts_clash(graph.labels.get(long, ""), graph.labels.get(short, ""))
        confidence = likeness * (0.5 + 0.5 * context) / math.sqrt(ambiguous) * (0.5 if clash else 1)
        if confidence < MIN_CONFIDENCE:
            continue
        keep, other = (long, short)  # the fuller name, unless more texts use the other
        if len(graph.sources.get(short, ())) > len(graph.sources.get(long, ())):
            keep, other = short, long
        out.append(
            Suggestion(
                "same_entity", keep, other, round(confidence, 4),
                {"names": [graph.names[keep], graph.names[other]], "why": why,
                 "named_together": together, "shared_neighbours": shared,
                 "longer_names_it_ends": ambiguous, "labels": [graph.labels.get(keep, ""),
                 graph.labels.get(other, "")]},
                f"{graph.names[keep]!r} and {graph.names[other]!r} are likely one thing "
                f"({why}): merge {other!r} into {keep!r}",
            )
        )  # fmt: skip
    out.sort(key=lambda s: (-s.confidence, s.keep, s.other))
    return out


def wrong_merges(graph: EntityTexts) -> list[Suggestion]:
    """Names an entity took in whose words say more than its name, best first: a possessive
    ("person's line manager"), a plural ("data.gov.uk applications") or a word of its own."""
    out = []
    for entity_id, said in graph.said.items():
        if len(said) < 2:
            continue
        own = words_of(graph.names[entity_id])
        for norm, texts in said.items():
            words = words_of(graph.spelt.get(norm, norm))
            extra = [w for w in words if w not in own]
            if not extra or not set(own) <= set(words):  # another spelling, not more words
                continue
            if norm == entity_id or len(texts) == len(graph.sources[entity_id]):
                continue
            share = len(texts) / len(graph.sources[entity_id])
            confidence = round(0.6 * (1 - share) * min(1.0, 0.5 * len(extra)) + 0.1, 4)
            if confidence < MIN_CONFIDENCE:
                continue
            name = graph.spelt.get(norm, norm)
            out.append(
                Suggestion(
                    "wrong_merge", entity_id, name, confidence,
                    {"entity": graph.names[entity_id], "name": name, "extra_words": extra,
                     "texts_saying_it": len(texts),
                     "texts_of_entity": len(graph.sources[entity_id])},
                    f"{name!r} likely names another thing than {graph.names[entity_id]!r}: "
                    f"split the {len(texts)} texts that say it off",
                    texts=sorted(texts),
                )
            )  # fmt: skip
    out.sort(key=lambda s: (-s.confidence, s.keep, s.other))
    return out
