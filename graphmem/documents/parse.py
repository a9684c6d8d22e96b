"""Project documents as a tree of sections, each a run of whole blocks with exact line numbers.

Markdown structure comes from markdown-it's token stream (never from regexes), so a `#` line in a
code fence is code and setext headings count. Other formats are scanned in `parse_other` and
`parse_config`. Every format then goes through one builder, which gives sections their stable
keys: a key is the slug path of the headings above it, so editing text inside a section or adding
a later one never renames it.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Literal

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

from graphmem.documents.outline import Heading, Lines, Outline, Span, humanise, trimmed
from graphmem.documents.parse_config import scan_config, scan_terraform, scan_yaml
from graphmem.documents.parse_other import scan_rst, scan_txt

BlockKind = Literal["paragraph", "code", "table", "list", "quote", "html", "other"]

MARKDOWN_SUFFIXES = frozenset({".md", ".mdx", ".markdown"})


@dataclass(frozen=True)
class Block:
    """A unit that chunking keeps whole when it fits."""

    kind: BlockKind
    text: str
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive


@dataclass(frozen=True)
class ParsedSection:
    key: str
    title: str
    level: int  # 0: the text before the first heading
    parent_key: str | None
    breadcrumb: tuple[str, ...]
    start_line: int
    end_line: int
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class ParsedDocument:
    title: str
    metadata: dict[str, Any]
    sections: tuple[ParsedSection, ...]
    warnings: tuple[str, ...]


def parse_document(path: str, text: str) -> ParsedDocument:
    """Never raises: bad front matter, YAML or fences become warnings, not errors."""
    name = PurePosixPath(path.replace("\\", "/")).name
    suffix = PurePosixPath(name).suffix.lower()
    lines = Lines.of(text)
    if suffix in MARKDOWN_SUFFIXES:
        outline = _scan_markdown(lines, mdx=suffix == ".mdx")
    elif suffix == ".rst":
        outline = scan_rst(lines)
    elif suffix == ".txt":
        outline = scan_txt(lines)
    elif suffix in (".yml", ".yaml"):
        outline = scan_yaml(lines)
    elif suffix == ".tf":
        outline = scan_terraform(lines)
    else:
        outline = scan_config(lines)
    stem = PurePosixPath(name).stem if suffix else name
    return _build(outline, lines, humanise(stem) or name or "Untitled")


# --- the section tree -------------------------------------------------------------------------


def slug(title: str) -> str:
    return re.sub(r"[\W_]+", "-", title.lower()).strip("-") or "section"


def _build(outline: Outline, lines: Lines, fallback_title: str) -> ParsedDocument:
    total = len(lines)
    heads: list[Heading] = []
    for head in sorted(outline.headings, key=lambda h: h.line):
        if 0 <= head.line < total and (not heads or head.line > heads[-1].line):
            heads.append(Heading(min(max(head.level, 1), 6), head.title, head.line))
    title = outline.title
    if title is None and outline.title_from_heading:
        title = next((h.title for h in heads if h.level == 1 and h.title), None)
    title = title or fallback_title

    # ranges: index 0 is the level-0 part, i + 1 the i-th heading's section
    starts = [0] + [h.line for h in heads]
    ends = [h.line - 1 for h in heads] + [total - 1]
    owned: list[list[Block]] = [[] for _ in starts]
    for span in sorted(outline.spans, key=lambda s: s.start):
        first, last = max(span.start, 0), min(span.end, total - 1)
        while first <= last:  # a span that runs into the next section is cut there
            owner = bisect.bisect_right(starts, first) - 1
            stop = min(last, ends[owner])
            piece = trimmed(lines, span.kind, first, stop)
            if piece is not None:
                owned[owner].append(_block(piece, lines))
            first = stop + 1

    parents: list[int | None] = []
    keys: list[str] = []
    stack: list[int] = []
    seen: dict[int | None, dict[str, int]] = {}
    for index, head in enumerate(heads):
        while stack and heads[stack[-1]].level >= head.level:
            stack.pop()
        parent = stack[-1] if stack else None
        base = slug(head.title)
        counts = seen.setdefault(parent, {})
        counts[base] = counts.get(base, 0) + 1
        own = base if counts[base] == 1 else f"{base}-{counts[base]}"
        keys.append(own if parent is None else f"{keys[parent]}/{own}")
        parents.append(parent)
        stack.append(index)

    # a heading with nothing under it is dropped; one whose subsections survive is kept
    kept = [bool(owned[i + 1]) for i in range(len(heads))]
    for index in range(len(heads) - 1, -1, -1):
        parent = parents[index]
        if kept[index] and parent is not None:
            kept[parent] = True
    has_root = bool(owned[0])

    sections: list[ParsedSection] = []
    if has_root:
        sections.append(
            ParsedSection("", title, 0, None, (title,), 1, ends[0] + 1, tuple(owned[0]))
        )
    for index, head in enumerate(heads):
        if not kept[index]:
            continue
        path: list[str] = []
        cursor: int | None = index
        while cursor is not None:
            path.append(heads[cursor].title)
            cursor = parents[cursor]
        path.reverse()
        if path[0] == title:
            path = path[1:]
        parent = parents[index]
        parent_key = keys[parent] if parent is not None else ("" if has_root else None)
        sections.append(
            ParsedSection(
                key=keys[index],
                title=head.title,
                level=head.level,
                parent_key=parent_key,
                breadcrumb=(title, *path),
                start_line=starts[index + 1] + 1,
                end_line=ends[index + 1] + 1,
                blocks=tuple(owned[index + 1]),
            )
        )
    return ParsedDocument(title, dict(outline.metadata), tuple(sections), tuple(outline.warnings))


def _block(span: Span, lines: Lines) -> Block:
    kind = _BLOCK_KINDS.get(span.kind, "other")
    return Block(kind, lines.slice(span.start, span.end), span.start + 1, span.end + 1)


_BLOCK_KINDS: dict[str, BlockKind] = {
    "paragraph": "paragraph",
    "code": "code",
    "table": "table",
    "list": "list",
    "quote": "quote",
    "html": "html",
    "other": "other",
}


# --- markdown ---------------------------------------------------------------------------------

_MD = MarkdownIt("commonmark").enable("table").use(front_matter_plugin)
_MD_REST = MarkdownIt("commonmark").enable("table")  # a re-parse never starts with front matter

_TOKEN_KINDS: dict[str, str] = {
    "paragraph_open": "paragraph",
    "fence": "code",
    "code_block": "code",
    "table_open": "table",
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "blockquote_open": "quote",
    "html_block": "html",
}
_MDX_STATEMENT = re.compile(r"(import|export)\b")


def _scan_markdown(lines: Lines, *, mdx: bool) -> Outline:
    """An unclosed fence runs to the end of the file in CommonMark, which would hide every later
    heading; so the text after its opening line is parsed again and the code ends at the next
    heading found there."""
    outline = Outline()
    unclosed: list[int] = []
    offset = 0
    parser = _MD
    while offset <= len(lines):
        tokens = parser.parse("\n".join(lines.rows[offset:]))
        opening = _walk(tokens, lines, offset, outline, mdx=mdx)
        if opening is None:
            break
        unclosed.append(opening)
        offset, parser = opening + 1, _MD_REST

    heading_lines = sorted(h.line for h in outline.headings)
    covered = -1
    for opening in unclosed:
        if opening <= covered:
            continue  # inside the code of an earlier unclosed fence
        covered = next((line - 1 for line in heading_lines if line > opening), len(lines) - 1)
        outline.warnings.append(f"line {opening + 1}: code fence never closed")
        outline.spans = [s for s in outline.spans if not opening <= s.start <= covered]
        outline.spans.append(Span("code", opening, covered))
    return outline


def _walk(
    tokens: list[Token], lines: Lines, offset: int, outline: Outline, *, mdx: bool
) -> int | None:
    """Records the top-level headings and blocks; returns the line of an unclosed fence, where
    the walk stops (the parser put the rest of the file inside it)."""
    region_end = len(lines) - offset
    for index, token in enumerate(tokens):
        if token.level != 0 or token.map is None or token.nesting == -1:
            continue
        first, stop = token.map[0] + offset, token.map[1] + offset - 1
        if token.type == "front_matter":
            _front_matter(token.content, outline)
        elif token.type == "heading_open" and index + 1 < len(tokens):
            level = int(token.tag[1:]) if token.tag[1:].isdigit() else 1
            outline.headings.append(Heading(level, _plain(tokens[index + 1]), first))
        elif (
            token.type == "fence"
            and token.map[1] == region_end
            and not _closes(token, lines, first, stop)
        ):
            return first
        elif token.type in _TOKEN_KINDS:
            kind = _TOKEN_KINDS[token.type]
            if mdx and kind == "paragraph" and _MDX_STATEMENT.match(lines.rows[first]):
                kind = "other"
            outline.spans.append(Span(kind, first, stop))
    return None


def _closes(token: Token, lines: Lines, first: int, last: int) -> bool:
    """Whether the fence's last line is a closing marker (CommonMark auto-closes at the end)."""
    if last <= first:
        return False
    row = lines.rows[last]
    body = row.lstrip(" ")
    if len(row) - len(body) > 3 or not token.markup:
        return False
    marker = token.markup[0]
    run = len(body) - len(body.lstrip(marker))
    return run >= len(token.markup) and not body[run:].strip(" \t")


def _plain(inline: Token) -> str:
    parts: list[str] = []
    for child in inline.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(_plain(child))
    return " ".join("".join(parts).split())


def _front_matter(content: str, outline: Outline) -> None:
    try:
        data = yaml.safe_load(content)
    except Exception as exc:  # PyYAML also raises ValueError (dates), RecursionError (nesting)
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1
        outline.warnings.append(f"line {line}: front matter is not valid YAML")
        return
    if data is None:
        return
    if not isinstance(data, dict):
        outline.warnings.append("line 1: front matter is not a mapping")
        return
    outline.metadata = {str(key): value for key, value in data.items()}
    title = outline.metadata.get("title")
    if isinstance(title, str) and title.strip():
        outline.title = " ".join(title.split())
