"""Candidate spans from every source, and the one rule that decides between them.

A span found by an engineering pattern outranks the statistical NER, which outranks a soft
guess (an acronym, a capitalised run), which outranks a plain noun phrase. Among equals the
longer span wins, then the more specific kind. Noun phrases are special: they may contain
higher-ranked spans ("JWT tokens" holds "JWT") and are kept unless their head word is taken.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .base import ExtractedEntity
from .normalise import normalise
from .vocabulary import CHAT_WORDS, PRONOUNS, TRIM_WORDS, words

PATTERN, NER, SOFT, PHRASE = 4, 3, 2, 1

# tie-break between same-length pattern spans: lower is more specific
KIND_ORDER = {
    "url": 0,
    "path": 1,
    "env_var": 2,
    "ticket": 3,
    "http_status": 4,
    "version": 5,
    "service": 6,
    "package": 7,
    "product": 8,
    "identifier": 9,
}


@dataclass(frozen=True, slots=True)
class Mention:
    start: int
    end: int
    name: str
    label: str
    rank: int
    norm: str
    # facts about this span belong to another entity: "16" in "PostgreSQL 16" -> "postgresql"
    anchor: str | None = None
    # a phrase's head word; the phrase survives only while no stronger span covers it
    head: tuple[int, int] | None = None

    @property
    def fact_key(self) -> str:
        return self.anchor or self.norm

    def overlaps(self, start: int, end: int) -> bool:
        return self.start < end and start < self.end


def mention(
    start: int,
    end: int,
    name: str,
    label: str,
    rank: int,
    *,
    anchor: str | None = None,
    head: tuple[int, int] | None = None,
) -> Mention | None:
    """A mention, or None when the name normalises to nothing worth a node."""
    if "\n" in name.strip():  # a name never runs across a line break (a title, then its text)
        lead = len(name) - len(name.lstrip())
        start, name = start + lead, name[lead:].split("\n", 1)[0]
        end = min(end, start + len(name.rstrip()))
    if rank < PATTERN:
        lead = _chat_lead(name)
        start, name = start + lead, name[lead:].rstrip(" \t:;,")
        end = min(end, start + len(name))
        if all(w.strip(",.!?") in CHAT_WORDS for w in name.lower().split()):
            return None
    norm = normalise(name)
    if not worth_a_node(norm) or tag_fragment(name.strip()):
        return None
    return Mention(start, end, name.strip(), label, rank, norm, anchor, head)


SPEAKER = r"[A-Z][a-z]+(?: [A-Z][a-z]+)?"  # the name before a chat turn's colon ("Tim: ...")
_SPEAKER_LEAD = re.compile(rf"{SPEAKER}:\s+|[\s:;,.!?-]+")
_WORD_LEAD = re.compile(r"([\w']+)[\s,!.]+")


def _chat_lead(name: str) -> int:
    """How much of a name is a chat turn's lead-in: "Tim: Hey John" names John. The small
    model's noun chunks and capitalised runs cross the speaker's colon and the greeting."""
    at = 0
    while True:
        m = _SPEAKER_LEAD.match(name, at) or _WORD_LEAD.match(name, at)
        if m is None or (m.re is _WORD_LEAD and m.group(1).lower() not in CHAT_WORDS):
            return at
        at = m.end()


MAX_NAME = 120  # longer is a pasted blob (a log line, a hash run), not a name


def worth_a_node(norm: str) -> bool:
    if len(norm) > MAX_NAME or (len(norm) < 2 and not norm.isdigit()):
        return False
    if not any(ch.isalnum() for ch in norm):
        return False
    words = norm.split()
    return not all(w in PRONOUNS or w in TRIM_WORDS for w in words)


# elements of the markup agents paste; a single-segment path named like one is its closing tag
HTML_TAGS = words(
    """
    a abbr b big blockquote body br button canvas center dd details div dl dt em embed font
    h1 h2 h3 h4 h5 h6 head hr html i iframe img input li link meta noscript object ol option p
    picture pre q s script select small span strike strong style sub summary sup svg tbody td
    textarea tfoot th thead title tr tt u ul video
    """
)
_TAG_FRAGMENT = re.compile(r"<\s*/?\s*[A-Za-z!][^<>]*>?|/([A-Za-z][A-Za-z0-9]*)>?")


def tag_fragment(name: str) -> bool:
    """A piece of an HTML tag, not the name of a thing: "<svg onload", "</div>", and "/script"
    or "/a", what a closing tag leaves once its brackets are stripped."""
    m = _TAG_FRAGMENT.fullmatch(name)
    return m is not None and (m.group(1) is None or m.group(1).lower() in HTML_TAGS)


def _strength(m: Mention) -> tuple[int, int, int, int]:
    return (-m.rank, -(m.end - m.start), KIND_ORDER.get(m.label, 10), m.start)


def resolve(candidates: Iterable[Mention]) -> list[Mention]:
    """Non-overlapping spans (phrases excepted, see the module doc), in text order."""
    taken: list[Mention] = []
    phrases: list[Mention] = []
    for m in sorted(candidates, key=_strength):
        if m.rank == PHRASE:
            phrases.append(m)
        elif not any(t.overlaps(m.start, m.end) for t in taken):
            taken.append(m)
    kept_phrases: list[Mention] = []
    for p in phrases:
        head_start, head_end = p.head or (p.start, p.end)
        if any(t.overlaps(head_start, head_end) for t in taken):
            continue
        if any(k.overlaps(p.start, p.end) for k in kept_phrases):
            continue
        if any(t.start <= p.start and p.end <= t.end for t in taken):
            continue
        kept_phrases.append(p)
    return sorted(taken + kept_phrases, key=lambda m: (m.start, m.end))


class EntityTable:
    """One entity per norm: first surface form, strongest label, order of first appearance."""

    def __init__(self) -> None:
        self._rows: dict[str, tuple[str, str, int]] = {}

    def add(self, m: Mention) -> None:
        row = self._rows.get(m.norm)
        if row is None:
            self._rows[m.norm] = (m.name, m.label, m.rank)
        elif m.rank > row[2]:
            self._rows[m.norm] = (row[0], m.label, m.rank)

    def add_concept(self, name: str) -> str | None:
        found = mention(0, 0, name, "concept", PHRASE)
        if found is None:
            return None
        self.add(found)
        return found.norm

    def __contains__(self, norm: object) -> bool:
        return norm in self._rows

    def entities(self) -> list[ExtractedEntity]:
        return [
            ExtractedEntity(name=name, norm=norm, label=label)
            for norm, (name, label, _) in self._rows.items()
        ]
