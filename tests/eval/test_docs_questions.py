"""The document-search questions are well formed and every expected section exists in the corpus:
a question naming a missing file or heading would score a miss no system could avoid."""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
QUESTIONS = REPO / "eval" / "data" / "docs_questions.json"
CORPUS = REPO / ".." / "shared" / "bench" / "docs"
KINDS = {"fact", "condition", "two_sections", "set"}
PHRASINGS = {"names", "describes"}
KEYS = {"id", "kind", "phrasing", "question", "expected"}

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_ANCHOR = re.compile(r"\s*\{#[^}]*\}\s*$")
_TITLE = re.compile(r"^title:\s*(.*?)\s*$")


def _questions() -> list[dict]:
    data = json.loads(QUESTIONS.read_text(encoding="utf-8"))
    assert data["corpus"] == "govuk" and data["root"] == "docs"
    questions: list[dict] = data["questions"]
    return questions


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


def test_heading_parser_skips_code_fences_and_reads_the_title(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "---\ntitle: 'A runbook'\n---\n\nIntro.\n\n## Steps {#steps}\n\n"
        "```sh\n# not a heading\n```\n\n    ```\n    # nor this\n    ```\n### Deeper ###\n"
    )
    assert headings(doc) == {"A runbook", "Steps", "Deeper"}


def test_every_question_is_well_formed() -> None:
    questions = _questions()
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


def test_enough_questions_of_every_kind_and_at_most_three_per_document() -> None:
    questions = _questions()
    assert len(questions) >= 80
    kinds = Counter(q["kind"] for q in questions)
    assert set(kinds) == KINDS and min(kinds.values()) >= 15, kinds
    assert set(Counter(q["phrasing"] for q in questions)) == PHRASINGS
    per_doc = Counter(path for q in questions for path in {e["path"] for e in q["expected"]})
    assert max(per_doc.values()) <= 3, per_doc.most_common(3)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/bench/docs is not here")
def test_every_expected_section_is_a_heading_of_an_existing_file() -> None:
    missing = []
    for q in _questions():
        for expected in q["expected"]:
            path = CORPUS / expected["path"]
            if not path.is_file():
                missing.append((q["id"], expected["path"]))
            elif expected["heading"] not in headings(path.resolve()):
                missing.append((q["id"], expected["path"], expected["heading"]))
    assert not missing
