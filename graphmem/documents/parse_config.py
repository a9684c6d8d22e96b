"""Config files as sections a question can land on: a YAML file's top-level keys (or, for a
multi-document file such as a set of Kubernetes manifests, its documents), a Terraform file's
top-level blocks. Their blocks are `code`, split on blank lines. Comment lines right above a key
or block belong to it, since they usually explain it."""

from __future__ import annotations

import re
from collections.abc import Callable

import yaml

from graphmem.documents.outline import Heading, Lines, Outline, Span, paragraphs

_DOC_MARKER = re.compile(r"(?:---|\.\.\.)(?:[ \t].*)?")
_TF_BLOCK = re.compile(r"([A-Za-z_][\w-]*)((?:[ \t]+(?:\"[^\"\n]*\"|[A-Za-z_][\w-]*))*)[ \t]*\{")
_TF_LABEL = re.compile(r"\"([^\"\n]*)\"|([A-Za-z_][\w-]*)")
_HEREDOC = re.compile(r"<<-?[ \t]*\"?([A-Za-z_]\w*)\"?[ \t]*$")


def scan_config(lines: Lines) -> Outline:
    outline = Outline(title_from_heading=False)
    outline.spans = _code(lines)
    return outline


def _code(lines: Lines, separator: Callable[[str], bool] | None = None) -> list[Span]:
    return paragraphs(lines, 0, len(lines) - 1, "code", separator)


def _is_marker(row: str) -> bool:
    return _DOC_MARKER.fullmatch(row) is not None


def scan_yaml(lines: Lines) -> Outline:
    """Invalid YAML (say a Helm template) still gives one section of code, with a warning."""
    outline = Outline(title_from_heading=False)
    outline.spans = _code(lines, _is_marker)
    documents: list[tuple[int, int, yaml.Node]] = []  # (heading line, first text line, root)
    for marker, first, last in _documents(lines):
        text = "\n".join(lines.rows[first : last + 1])
        try:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
        except Exception as exc:  # PyYAML also raises ValueError, RecursionError on odd input
            mark = getattr(exc, "problem_mark", None)
            line = first + mark.line + 1 if mark is not None else first + 1
            outline.warnings.append(f"line {line}: not valid YAML, kept as one section")
            return outline
        if node is not None:
            documents.append((first if marker is None else marker, first, node))
    if len(documents) > 1:
        for number, (line, _, node) in enumerate(documents, start=1):
            outline.headings.append(Heading(1, _document_title(node, number), line))
    elif documents and isinstance(documents[0][2], yaml.MappingNode):
        _, first, root = documents[0]
        for key, _value in root.value:
            title = key.value if isinstance(key, yaml.ScalarNode) else "key"
            line = first + key.start_mark.line
            floor = outline.headings[-1].line if outline.headings else -1
            outline.headings.append(Heading(1, str(title), _with_comments(lines, line, floor)))
    return outline


def _documents(lines: Lines) -> list[tuple[int | None, int, int]]:
    """(marker line or None, first line, last line) of each `---`-separated document; a marker at
    column 0 always separates documents, even inside what looks like a block scalar."""
    documents: list[tuple[int | None, int, int]] = []
    marker: int | None = None
    first = 0
    for index, row in enumerate(lines.rows):
        if not _is_marker(row):
            continue
        documents.append((marker, first, index - 1))
        if row.startswith("---"):
            marker = index
            first = index if row.strip() != "---" else index + 1
        else:
            marker, first = None, index + 1
    documents.append((marker, first, len(lines) - 1))
    return documents


def _scalar(node: yaml.Node | None) -> str:
    return str(node.value).strip() if isinstance(node, yaml.ScalarNode) else ""


def _field(node: yaml.Node, name: str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if _scalar(key) == name:
                return value
    return None


def _document_title(node: yaml.Node, number: int) -> str:
    """`Deployment billing-api` for a manifest, else the document's number."""
    kind = _scalar(_field(node, "kind"))
    metadata = _field(node, "metadata")
    name = _scalar(_field(metadata, "name")) if metadata is not None else ""
    title = " ".join(part for part in (kind, name) if part)
    return title or f"Document {number}"


def _with_comments(lines: Lines, line: int, floor: int, prefixes: tuple[str, ...] = ("#",)) -> int:
    """Moves a section's start up over the comment lines directly above it."""
    while line - 1 > floor and lines.rows[line - 1].startswith(prefixes):
        line -= 1
    return line


def scan_terraform(lines: Lines) -> Outline:
    """Top-level blocks start at column 0 (as `terraform fmt` writes them); heredoc bodies are
    skipped so their text never starts a block."""
    outline = Outline(title_from_heading=False)
    outline.spans = _code(lines)
    heredoc: str | None = None
    for index, row in enumerate(lines.rows):
        if heredoc is not None:
            if row.strip() == heredoc:
                heredoc = None
            continue
        match = _TF_BLOCK.match(row)
        if match:
            labels = [a or b for a, b in _TF_LABEL.findall(match.group(2))]
            title = match.group(1) + (" " + ".".join(labels) if labels else "")
            floor = outline.headings[-1].line if outline.headings else -1
            start = _with_comments(lines, index, floor, ("#", "//"))
            outline.headings.append(Heading(1, title, start))
        found = _HEREDOC.search(row)
        if found:
            heredoc = found.group(1)
    return outline
