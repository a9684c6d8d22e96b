"""reStructuredText and plain text: titles are text lines with an adornment line under (and
maybe over) them; the level is the order in which each adornment style first appears, as in
docutils. Plain text takes only `===`/`---`/`~~~` underlines, since other punctuation runs in a
.txt file are rarely meant as titles."""

from __future__ import annotations

import re

from graphmem.documents.outline import Heading, Lines, Outline, Span, paragraphs

RST_ADORNMENTS = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
TXT_ADORNMENTS = frozenset("=-~")

_ITEM = re.compile(r"(?:[-*+•‣⁃]|\(?\d+[.)]|#\.|\(?[A-Za-z][.)])[ \t]+\S")
_DIRECTIVE = re.compile(r"\.\.[ \t]+([\w:+.-]+)::")
_SIMPLE_TABLE = re.compile(r"=+(?:[ \t]+=+)+[ \t]*")
_CODE_DIRECTIVES = frozenset({"code", "code-block", "sourcecode", "highlight"})


def scan_rst(lines: Lines) -> Outline:
    headings, used = _titles(lines, RST_ADORNMENTS)
    outline = Outline(headings=headings)
    for start, end in _regions(lines, used):
        outline.spans.extend(_rst_blocks(lines, start, end))
    return outline


def scan_txt(lines: Lines) -> Outline:
    headings, used = _titles(lines, TXT_ADORNMENTS)
    outline = Outline(headings=headings)
    for start, end in _regions(lines, used):
        outline.spans.extend(paragraphs(lines, start, end))
    return outline


def _adornment(row: str, chars: frozenset[str]) -> str | None:
    line = row.rstrip()
    if len(line) >= 3 and line[0] in chars and line == line[0] * len(line):
        return line[0]
    return None


def _titles(lines: Lines, chars: frozenset[str]) -> tuple[list[Heading], set[int]]:
    """Titles must start a text block (first line, or after a blank line or another title)."""
    styles: list[tuple[str, bool]] = []
    headings: list[Heading] = []
    used: set[int] = set()

    def add(style: tuple[str, bool], title: str, line: int) -> None:
        if style not in styles:
            styles.append(style)
        headings.append(Heading(min(styles.index(style) + 1, 6), title, line))

    count = len(lines)
    free = True
    index = 0
    while index < count:
        row = lines.rows[index]
        if lines.blank(index):
            free = True
            index += 1
            continue
        mark = _adornment(row, chars)
        if free and mark and index + 2 < count:
            title, under = lines.rows[index + 1], lines.rows[index + 2]
            if (
                title.strip()
                and _adornment(title, chars) is None
                and _adornment(under, chars) == mark
                and len(under.rstrip()) == len(row.rstrip()) >= len(title.strip())
            ):
                add((mark, True), " ".join(title.split()), index)
                used.update((index, index + 1, index + 2))
                index += 3
                continue
        if free and not mark and not row[0].isspace() and index + 1 < count:
            under_mark = _adornment(lines.rows[index + 1], chars)
            width = len(lines.rows[index + 1].rstrip())
            if under_mark and (width >= len(row.rstrip()) or width >= 4):
                add((under_mark, False), " ".join(row.split()), index)
                used.update((index, index + 1))
                index += 2
                continue
        free = False
        index += 1
    return headings, used


def _regions(lines: Lines, used: set[int]) -> list[tuple[int, int]]:
    """The runs of lines between titles."""
    regions: list[tuple[int, int]] = []
    start: int | None = None
    for index in range(len(lines)):
        if index in used:
            if start is not None:
                regions.append((start, index - 1))
                start = None
        elif start is None:
            start = index
    if start is not None:
        regions.append((start, len(lines) - 1))
    return regions


def _indented(row: str) -> bool:
    return bool(row) and row[0] in " \t"


def _indented_after(lines: Lines, last: int, end: int) -> int:
    """The last line of the indented body that follows line `last` (blank lines may separate)."""
    found = last
    for index in range(last + 1, end + 1):
        if lines.blank(index):
            continue
        if not _indented(lines.rows[index]):
            break
        found = index
    return found


def _rst_blocks(lines: Lines, start: int, end: int) -> list[Span]:
    spans: list[Span] = []
    literal = False  # the previous paragraph ended with "::"
    index = start
    while index <= end:
        if lines.blank(index):
            index += 1
            continue
        row = lines.rows[index]
        if _indented(row):
            last = _indented_after(lines, index, end)
            spans.append(Span("code" if literal else "quote", index, last))
            literal = False
            index = last + 1
            continue
        last = index
        while last + 1 <= end and not lines.blank(last + 1):
            last += 1
        directive = _DIRECTIVE.match(row)
        if last == index and _adornment(row, RST_ADORNMENTS):
            pass  # a transition: a line of punctuation between paragraphs
        elif directive or row.startswith(".."):
            last = _indented_after(lines, last, end)
            name = directive.group(1).lower() if directive else ""
            spans.append(Span("code" if name in _CODE_DIRECTIVES else "other", index, last))
            literal = False
        elif _ITEM.match(row):
            last = _list_end(lines, last, end)
            spans.append(Span("list", index, last))
            literal = False
        elif row.startswith("+-") or _SIMPLE_TABLE.fullmatch(row):
            spans.append(Span("table", index, last))
            literal = False
        else:
            literal = lines.rows[last].rstrip().endswith("::")
            if row.strip() != "::":
                spans.append(Span("paragraph", index, last))
        index = last + 1
    return spans


def _list_end(lines: Lines, last: int, end: int) -> int:
    """Items separated by blank lines, and their indented bodies, form one list."""
    index = last + 1
    while index <= end:
        if lines.blank(index):
            index += 1
            continue
        row = lines.rows[index]
        if not (_indented(row) or _ITEM.match(row)):
            break
        last = index
        index += 1
    return last
