"""Checks shared by the tests of the document-search question files (eval/data/*_questions.json):
each question is well formed, the kinds and phrasings are all there, no document answers too many
questions, and every expected (path, heading) is a heading of a file in the corpus folder."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

KINDS = {"fact", "condition", "two_sections", "set"}
PHRASINGS = {"names", "describes"}
KEYS = {"id", "kind", "phrasing", "question", "expected"}

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_ANCHOR = re.compile(r"\s*\{#[^}]*\}\s*$")
_TITLE = re.compile(r"^title:\s*(.*?)\s*$")


def load(path: Path) -> dict[str, Any]:
    """The whole questions file: {corpus, root, questions, ...}."""
    data: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return data


@cache
def headings(path: Path) -> frozenset[str]:
    """The front matter title and every ATX heading outside code fences, anchors dropped."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = set()
    if lines and lines[0].strip() == "---":
        end = next(i for i, line in enumerate(lines[1:], 1) if line.strip() == "---")
        for line in lines[1:end]:
            if match := _TITLE.match(line):
                title = match.group(1)
                if len(title) >= 2 and title[0] == title[-1] and title[0] in "'\"":
                    title = title[1:-1]
                found.add(title)
        lines = lines[end + 1 :]
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (match := _HEADING.match(line)):
            found.add(_ANCHOR.sub("", match.group(1)).strip())
    return frozenset(found)


def check_well_formed(questions: Iterable[Mapping[str, Any]]) -> None:
    """Unique ids, the five keys, a known kind and phrasing, relative expected paths, and at
    least two distinct expected sections for a two_sections question."""
    questions = list(questions)
    ids = [q["id"] for q in questions]
    assert len(ids) == len(set(ids))
    for q in questions:
        assert set(q) == KEYS, q["id"]
        assert q["kind"] in KINDS and q["phrasing"] in PHRASINGS, q["id"]
        assert q["question"].strip() and q["expected"], q["id"]
        for expected in q["expected"]:
            assert set(expected) == {"path", "heading"}, q["id"]
            assert not expected["path"].startswith("/") and "\\" not in expected["path"]
        if q["kind"] == "two_sections":
            assert len({(e["path"], e["heading"]) for e in q["expected"]}) >= 2, q["id"]


def check_coverage(
    questions: Iterable[Mapping[str, Any]],
    *,
    at_least: int,
    per_kind: int = 15,
    per_document: Callable[[str], int],
) -> None:
    """At least `at_least` questions, `per_kind` of every kind, both phrasings, and no document
    expected by more than `per_document(path)` questions."""
    questions = list(questions)
    assert len(questions) >= at_least
    kinds = Counter(q["kind"] for q in questions)
    assert set(kinds) == KINDS and min(kinds.values()) >= per_kind, kinds
    assert set(Counter(q["phrasing"] for q in questions)) == PHRASINGS
    per_doc = Counter(path for q in questions for path in {e["path"] for e in q["expected"]})
    over = {path: n for path, n in per_doc.items() if n > per_document(path)}
    assert not over, over


def missing_sections(questions: Iterable[Mapping[str, Any]], corpus: Path) -> list[tuple[str, ...]]:
    """Every expected file that is not in `corpus`, or heading that is not one of its headings."""
    missing: list[tuple[str, ...]] = []
    for q in questions:
        for expected in q["expected"]:
            path = corpus / expected["path"]
            if not path.is_file():
                missing.append((q["id"], expected["path"]))
            elif expected["heading"] not in headings(path.resolve()):
                missing.append((q["id"], expected["path"], expected["heading"]))
    return missing
