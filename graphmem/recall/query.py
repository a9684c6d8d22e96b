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
    return ParsedQuery(text=text, names=parse_names(text), dates=parse_dates(text))
