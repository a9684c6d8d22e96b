"""Which ADRs an ADR says it supersedes, or is superseded by.

ADR tools and templates write it in the status ("Superseded by [ADR-0012](0012-use-kuzu.md)",
"Status: superseded by 12") or in the text ("This supersedes ADR 3"). A link names the other
record's file; a bare number names the record of that number in the same folder. The result is a
`SUPERSEDES` edge from the newer document to the older, which `knowledge_timeline` follows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath

_REFERENCE = re.compile(
    r"\b(?P<verb>superseded\s+by|replaced\s+by|supersedes|replaces)\b[^\n\[\d]{0,40}?"
    r"(?:\[[^\]\n]*\]\((?P<link>[^)\s#]+)[^)]*\)|(?P<prefix>adr|rfc|record|decision)?[-\s#:]*0*(?P<number>\d{1,5})\b)",
    re.IGNORECASE,
)
_LEADING_NUMBER = re.compile(r"^(?:adr[-_]?)?0*(\d{1,5})(?=[-_.\s])", re.IGNORECASE)


def supersessions(rel: str, text: str, known: Iterable[str]) -> list[tuple[str, str]]:
    """(newer rel, older rel) pairs an ADR at `rel` states, among the documents `known` (rels of
    the same root); references that name no known document are left out."""
    folder = PurePosixPath(rel).parent
    by_number: dict[int, str] = {}
    known_set = set(known)
    for other in sorted(known_set):
        other_path = PurePosixPath(other)
        match = _LEADING_NUMBER.match(other_path.name)
        if other_path.parent == folder and match:
            by_number.setdefault(int(match[1]), other)
    pairs: list[tuple[str, str]] = []
    for match in _REFERENCE.finditer(text):
        verb = match["verb"].lower()
        if match["link"]:
            target = _normalise(folder / match["link"])
        elif match["prefix"] or "supersede" in verb:  # "replaces 3 nodes" names no record
            target = by_number.get(int(match["number"]), "")
        else:
            continue
        if not target or target == rel or target not in known_set:
            continue
        newer_is_other = verb.split()[0] in ("superseded", "replaced")
        pair = (target, rel) if newer_is_other else (rel, target)
        if pair not in pairs:
            pairs.append(pair)
    return pairs


def _normalise(path: PurePosixPath) -> str:
    """`a/b/../c.md` as `a/c.md`, without touching the file system."""
    parts: list[str] = []
    for part in path.parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)
