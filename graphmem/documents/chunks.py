"""Chunks for embedding: whole blocks packed greedily, so a code sample, table or list is never
cut when it fits. A block too big for one chunk is split where a reader would split it, and each
piece stays readable on its own: a table piece repeats the header row, a fenced code piece keeps
its opening fence and is closed again."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

from graphmem.documents.parse import Block, ParsedSection

_BREAK = re.compile(r"\r\n|\r|\n")
_FENCE = re.compile(r"( {0,3})(`{3,}|~{3,})")
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*(?=\s)")
_DELIMITER_ROW = frozenset("|:-+= \t")
_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class ChunkText:
    text: str
    start_line: int
    end_line: int
    ord: int


@dataclass(frozen=True)
class _Piece:
    text: str
    start_line: int
    end_line: int


def embedding_text(breadcrumb: Sequence[str], chunk_text: str) -> str:
    """The section's place in the document goes first: it is often what a question names."""
    trail = " > ".join(part for part in breadcrumb if part)
    return f"{trail}\n{chunk_text}" if trail else chunk_text


def chunk_section(section: ParsedSection, *, max_chars: int = 1500) -> list[ChunkText]:
    if max_chars < 1:
        raise ValueError("max_chars must be positive")
    pieces = [piece for block in section.blocks for piece in _pieces(block, max_chars)]
    chunks: list[ChunkText] = []
    current: list[_Piece] = []
    size = 0
    for piece in pieces:
        if current and size + len(_SEPARATOR) + len(piece.text) <= max_chars:
            current.append(piece)
            size += len(_SEPARATOR) + len(piece.text)
            continue
        if current:
            chunks.append(_chunk(current, len(chunks)))
        current, size = [piece], len(piece.text)
    if current:
        chunks.append(_chunk(current, len(chunks)))
    return chunks


def _chunk(pieces: list[_Piece], ord_: int) -> ChunkText:
    text = _SEPARATOR.join(piece.text for piece in pieces)
    end = max(piece.end_line for piece in pieces)
    return ChunkText(text, pieces[0].start_line, end, ord_)


def _pieces(block: Block, limit: int) -> list[_Piece]:
    if not block.text.strip():
        return []
    if len(block.text) <= limit:
        return [_Piece(block.text, block.start_line, block.end_line)]
    if block.kind == "paragraph":
        return _prose(block.text, block.start_line, limit)
    rows = _BREAK.split(block.text)
    if block.kind == "code":
        return _code(rows, block.start_line, limit)
    if block.kind == "table":
        return _table(rows, block.start_line, limit)
    return _rows(rows, block.start_line, limit)


def _budget(limit: int, overhead: int) -> int:
    """Room left for a piece's own lines once the repeated lines are added, unless those lines
    would take most of it (then the piece runs over by their length)."""
    return limit - overhead if overhead <= limit // 2 else limit


def _code(rows: list[str], first_line: int, limit: int) -> list[_Piece]:
    opening = _FENCE.match(rows[0])
    if opening is None or len(rows) < 2:
        return _rows(rows, first_line, limit)
    indent, markup = opening.groups()
    last = rows[-1].strip()
    closed = set(last) == {markup[0]} and len(last) >= len(markup)
    body = rows[1:-1] if closed else rows[1:]
    close = rows[-1] if closed else indent + markup
    if not any(row.strip() for row in body):
        return _rows(rows, first_line, limit)
    overhead = len(rows[0]) + len(close) + 2
    pieces = _rows(body, first_line + 1, _budget(limit, overhead))
    last_line = first_line + len(rows) - 1
    return [
        _Piece(
            f"{rows[0]}\n{piece.text}\n{close}",
            first_line if index == 0 else piece.start_line,
            last_line if closed and index == len(pieces) - 1 else piece.end_line,
        )
        for index, piece in enumerate(pieces)
    ]


def _table(rows: list[str], first_line: int, limit: int) -> list[_Piece]:
    is_delimiter = len(rows) > 2 and set(rows[1].strip()) <= _DELIMITER_ROW and "-" in rows[1]
    header = rows[:2] if is_delimiter else rows[:1]
    body = rows[len(header) :]
    if not any(row.strip() for row in body):
        return _rows(rows, first_line, limit)
    head = "\n".join(header)
    pieces = _rows(body, first_line + len(header), _budget(limit, len(head) + 1))
    first = pieces[0]
    # the first piece starts where the table does: its header is its own
    return [_Piece(f"{head}\n{first.text}", first_line, first.end_line)] + [
        _Piece(f"{head}\n{piece.text}", piece.start_line, piece.end_line) for piece in pieces[1:]
    ]


def _rows(rows: list[str], first_line: int, budget: int) -> list[_Piece]:
    """Whole lines packed up to the budget; a single line longer than that is cut like prose."""
    pieces: list[_Piece] = []
    current: list[str] = []
    start = first_line
    size = 0

    def flush() -> None:
        while current and not current[-1].strip():
            current.pop()
        if current:
            pieces.append(_Piece("\n".join(current), start, start + len(current) - 1))

    for offset, row in enumerate(rows):
        line = first_line + offset
        if current and size + 1 + len(row) > budget:
            flush()
            current, size = [], 0
        if not current:
            if not row.strip():
                continue
            if len(row) > budget:
                pieces.extend(_prose(row, line, budget))
                continue
            start = line
            current, size = [row], len(row)
        else:
            current.append(row)
            size += 1 + len(row)
    flush()
    return pieces


def _prose(text: str, first_line: int, limit: int) -> list[_Piece]:
    """Cut at the last sentence end that fits, else the last space, else mid-word."""
    line_starts = [0] + [match.end() for match in _BREAK.finditer(text)]
    pieces: list[_Piece] = []
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            break
        cut = _cut(text, position, limit)
        end = cut
        while text[end - 1].isspace():
            end -= 1
        pieces.append(
            _Piece(
                text[position:end],
                first_line + bisect.bisect_right(line_starts, position) - 1,
                first_line + bisect.bisect_right(line_starts, end - 1) - 1,
            )
        )
        position = cut
    return pieces


def _cut(text: str, position: int, limit: int) -> int:
    """Where the piece starting at `position` ends (exclusive); always past `position`."""
    window = position + limit
    if len(text) <= window:
        return len(text)
    sentence = None
    for match in _SENTENCE_END.finditer(text, position, window + 1):
        if match.end() <= window:
            sentence = match.end()
    if sentence is not None and sentence - position >= limit // 4:
        return sentence
    for index in range(window, position, -1):
        if text[index].isspace():
            return index
    return window
