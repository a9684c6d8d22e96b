"""What each format scanner hands to the section builder: headings and block spans by line.

Scanners only find where things are (0-based line indexes); `parse.py` turns that into keyed
sections, so every format gets the same key, nesting and breadcrumb rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Heading:
    level: int
    title: str
    line: int  # the section starts here (0-based)


@dataclass(frozen=True)
class Span:
    kind: str
    start: int  # 0-based, inclusive
    end: int  # 0-based, inclusive


@dataclass
class Outline:
    headings: list[Heading] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    title: str | None = None  # an explicit title (front matter); None: derive it
    title_from_heading: bool = True  # False for config files, whose headings are keys
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Lines:
    """The file's lines split the way CommonMark counts them (\\r\\n, \\r or \\n), with offsets
    back into the original text so block texts are exact substrings of it."""

    text: str
    rows: tuple[str, ...]
    starts: tuple[int, ...]

    @classmethod
    def of(cls, text: str) -> Lines:
        rows: list[str] = []
        starts: list[int] = []
        pos = 0
        for match in _BREAK.finditer(text):
            rows.append(text[pos : match.start()])
            starts.append(pos)
            pos = match.end()
        if pos < len(text):
            rows.append(text[pos:])
            starts.append(pos)
        return cls(text, tuple(rows), tuple(starts))

    def __len__(self) -> int:
        return len(self.rows)

    def slice(self, first: int, last: int) -> str:
        """Lines first..last (inclusive) exactly as they are in the text."""
        return self.text[self.starts[first] : self.starts[last] + len(self.rows[last])]

    def blank(self, index: int) -> bool:
        return not self.rows[index].strip()


def trimmed(lines: Lines, kind: str, start: int, end: int) -> Span | None:
    """A span without its leading and trailing blank lines; None when nothing is left."""
    while start <= end and lines.blank(start):
        start += 1
    while end >= start and lines.blank(end):
        end -= 1
    return Span(kind, start, end) if start <= end else None


def paragraphs(
    lines: Lines,
    start: int,
    end: int,
    kind: str = "paragraph",
    separator: Callable[[str], bool] | None = None,
) -> list[Span]:
    """Runs of non-blank lines in start..end, one span each; `separator` lines also split runs
    and belong to none."""
    spans: list[Span] = []
    first: int | None = None
    for index in range(start, end + 1):
        if lines.blank(index) or (separator is not None and separator(lines.rows[index])):
            if first is not None:
                spans.append(Span(kind, first, index - 1))
                first = None
        elif first is None:
            first = index
    if first is not None:
        spans.append(Span(kind, first, end))
    return spans


def humanise(stem: str) -> str:
    """`db-failover` -> `Db failover`: a readable title for a file with no heading."""
    words = re.sub(r"[-_\s.]+", " ", stem).strip()
    if not words:
        return stem
    return words[0].upper() + words[1:] if words.islower() else words
