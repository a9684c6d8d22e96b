"""Reading a query: the names it mentions and the dates it points at.

"What did Nate do for Joanna on 25 May, 2022?" names two people and one day; memories of those
people from around that day should rank first. No model is needed to see either.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from graphmem.text import STOPWORDS, content_terms

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY_MONTH_YEAR = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?,?\s+(\d{{4}})\b", re.I
)
_MONTH_DAY_YEAR = re.compile(
    rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I
)
_MONTH_YEAR = re.compile(rf"\b({_MONTH})\.?,?\s+(\d{{4}})\b", re.I)
_ISO_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")
_NAME = re.compile(r"\b[A-Z][a-z]+(?:'s)?\b")
_QUESTION_WORDS = STOPWORDS | {"would", "should", "does", "did", "has", "have", "is", "are", "was"}


@dataclass(frozen=True)
class DateSpan:
    start: datetime
    end: datetime  # exclusive

    def distance_days(self, when: datetime) -> float:
        if self.start <= when < self.end:
            return 0.0
        gap = self.start - when if when < self.start else when - self.end
        return gap.total_seconds() / 86400


@dataclass
class ParsedQuery:
    text: str
    names: list[str] = field(default_factory=list)
    dates: list[DateSpan] = field(default_factory=list)
    many: bool = False  # asks for several things: see asks_for_many


def _month_span(year: int, month: int) -> DateSpan:
    start = datetime(year, month, 1)
    end = datetime(year + (month == 12), month % 12 + 1, 1)
    return DateSpan(start, end)


def _day_span(year: int, month: int, day: int) -> DateSpan | None:
    try:
        start = datetime(year, month, day)
    except ValueError:
        return None
    return DateSpan(start, start + timedelta(days=1))


def parse_dates(text: str) -> list[DateSpan]:
    spans: list[DateSpan] = []
    taken: list[tuple[int, int]] = []

    def free(match: re.Match[str]) -> bool:
        return all(match.end() <= a or match.start() >= b for a, b in taken)

    def add(match: re.Match[str], span: DateSpan | None) -> None:
        if span is not None:
            spans.append(span)
            taken.append((match.start(), match.end()))

    for m in _ISO_DAY.finditer(text):
        add(m, _day_span(int(m[1]), int(m[2]), int(m[3])))
    for m in _DAY_MONTH_YEAR.finditer(text):
        if free(m):
            add(m, _day_span(int(m[3]), _MONTHS[m[2].lower()], int(m[1])))
    for m in _MONTH_DAY_YEAR.finditer(text):
        if free(m):
            add(m, _day_span(int(m[3]), _MONTHS[m[1].lower()], int(m[2])))
    for m in _MONTH_YEAR.finditer(text):
        if free(m):
            add(m, _month_span(int(m[2]), _MONTHS[m[1].lower()]))
    for m in _YEAR.finditer(text):
        if free(m):
            add(m, DateSpan(datetime(int(m[1]), 1, 1), datetime(int(m[1]) + 1, 1, 1)))
    return spans


def parse_names(text: str) -> list[str]:
    """Capitalised words that are not question words or months: people, places, products."""
    names: list[str] = []
    for match in _NAME.finditer(text):
        word = match.group().removesuffix("'s")
        low = word.lower()
        if low in _QUESTION_WORDS or low in _MONTHS or low in names:
            continue
        names.append(low)
    return names


def embedding_text(text: str, speakers: Callable[[], AbstractSet[str]]) -> str:
    """The query as the embedder should see it: the names of people who speak in the store's
    conversations become "someone". A small embedding model ranks every turn that mentions a
    person about alike, which drowns out what is asked about them; the names themselves are
    matched by words (BM25 and the names and speaker features). Measured on LoCoMo: recall@10
    0.76 -> 0.80. `speakers` is only asked when the query names someone."""
    names = parse_names(text)
    people = set(names) & speakers() if names else set()
    if not people:
        return text
    replaced = _NAME.sub(
        lambda m: "someone" if m.group().removesuffix("'s").lower() in people else m.group(), text
    )
    return replaced if content_terms(replaced.replace("someone", "")) else text


def parse_query(text: str) -> ParsedQuery:
    return ParsedQuery(
        text=text, names=parse_names(text), dates=parse_dates(text), many=asks_for_many(text)
    )


_AUXILIARIES = frozenset({
    "do", "does", "did", "has", "have", "had", "is", "are", "was", "were", "can", "could",
    "will", "would", "should", "might", "may",
})  # fmt: skip
_IRREGULAR_PLURALS = frozenset({"children", "people", "men", "women", "kids", "feet", "teeth"})
_WORD = re.compile(r"[A-Za-z']+")
_TIME_UNITS = frozenset({"seconds", "minutes", "hours", "days", "weeks", "months", "years"})


def _plural(word: str) -> bool:
    low = word.lower()
    if low in _IRREGULAR_PLURALS:
        return True
    return len(low) > 3 and low.endswith("s") and not low.endswith(("ss", "us", "is", "'s"))


def asks_for_many(text: str) -> bool:
    """Whether the question asks for several things: "how many", "both", or a plural asked
    noun before the verb ("Which cities has John visited?", "What are Joanna's hobbies?").

    A plural after "what" counts only once an auxiliary follows it: in "What motivates Tim"
    the -s word is the verb. Recall lends such a question's neighbouring turns less, so that its
    top k holds separate answers; the answer hop gives its clues full strength."""
    words = _WORD.findall(text)
    low = [w.lower() for w in words]
    if low[:2] == ["how", "many"]:  # a count, unless of time ("how many weeks ago")
        return len(low) < 3 or low[2] not in _TIME_UNITS
    if "both" in low:
        return True
    if not low or low[0] not in ("what", "which", "who"):
        return False
    if len(low) > 1 and low[1] in ("are", "were"):  # "What are Joanna's hobbies?"
        return any(_plural(w) for w in words[2:])
    plural = False
    for word in words[1:]:
        if word.lower() in _AUXILIARIES:
            return plural
        plural = plural or _plural(word)
    return False


# the kind of thing a question asks for, as the extractors' entity labels
_ASKED = (
    (
        "place",
        re.compile(
            r"\bwhere\b|\b(?:cit(?:y|ies)|countr(?:y|ies)|places?|locations?|areas?|states?|"
            r"regions?|destinations?)\b",
            re.I,
        ),
    ),
    (
        "product",
        re.compile(
            r"\b(?:books?|novels?|movies?|films?|series|shows?|songs?|albums?|screenplays?)\b",
            re.I,
        ),
    ),
    ("person", re.compile(r"\bwho\b|\b(?:authors?|artists?|bands?|players?)\b", re.I)),
)


def asked_labels(text: str) -> list[str]:
    """Entity labels the question asks for: "Which cities has John visited?" wants places.
    Multi-hop recall walks from the people it names to memories that mention such a thing."""
    return [label for label, pattern in _ASKED if pattern.search(text)]


_IRREGULAR_VERBS = {
    "began": "begin", "begun": "begin", "bought": "buy", "brought": "bring", "built": "build",
    "chose": "choose", "chosen": "choose", "did": "do", "done": "do", "drawn": "draw",
    "drew": "draw", "drove": "drive", "driven": "drive", "ate": "eat", "eaten": "eat",
    "felt": "feel", "found": "find", "flew": "fly", "flown": "fly", "gave": "give",
    "given": "give", "got": "get", "gotten": "get", "went": "go", "gone": "go", "grew": "grow",
    "grown": "grow", "heard": "hear", "held": "hold", "kept": "keep", "knew": "know",
    "known": "know", "left": "leave", "lost": "lose", "made": "make", "met": "meet",
    "paid": "pay", "ran": "run", "said": "say", "saw": "see", "seen": "see", "sold": "sell",
    "sent": "send", "sang": "sing", "sung": "sing", "spent": "spend", "swam": "swim",
    "swum": "swim", "took": "take", "taken": "take", "taught": "teach", "told": "tell",
    "thought": "think", "wore": "wear", "worn": "wear", "won": "win", "wrote": "write",
    "written": "write",
}  # fmt: skip
_LIGHT_VERBS = frozenset({"do", "have", "be", "get"})


def verb_lemmas(text: str, names: AbstractSet[str] = frozenset()) -> list[str]:
    """Every base form the question's words could have as verbs ("visited" -> "visit",
    "volunteering" -> "volunteer", "seen" -> "see"), for matching the extractors' fact
    predicates, which are spaCy lemmas ("visit", "go_to"). Guessing several forms of a word is
    cheaper than a tagger, and a form no predicate has matches nothing."""
    forms: dict[str, None] = {}
    for word in content_terms(text):
        if word in names or not word.isalpha():
            continue
        candidates = [word, _IRREGULAR_VERBS.get(word, word)]
        for suffix in ("ing", "ed", "es", "s", "d"):
            stem = word.removesuffix(suffix)
            if stem == word or len(stem) < 2:
                continue
            candidates.append(stem)
            if suffix in ("ing", "ed"):
                candidates.append(stem + "e")  # "liked" -> "like"
                if len(stem) > 2 and stem[-1] == stem[-2]:
                    candidates.append(stem[:-1])  # "submitted" -> "submit"
        if word.endswith(("ies", "ied")):
            candidates.append(word[:-3] + "y")
        forms.update(dict.fromkeys(c for c in candidates if c not in _LIGHT_VERBS))
    return list(forms)
