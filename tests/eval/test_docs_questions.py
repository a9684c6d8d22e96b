"""The document-search questions are well formed and every expected section exists in the corpus:
a question naming a missing file or heading would score a miss no system could avoid."""

from __future__ import annotations

from pathlib import Path

import pytest
from questions_checks import (
    check_coverage,
    check_well_formed,
    headings,
    load,
    missing_sections,
)

REPO = Path(__file__).parents[2]
QUESTIONS = REPO / "eval" / "data" / "docs_questions.json"
CORPUS = REPO / ".." / "shared" / "bench" / "docs"


def _questions() -> list[dict]:
    data = load(QUESTIONS)
    assert data["corpus"] == "govuk" and data["root"] == "docs"
    questions: list[dict] = data["questions"]
    return questions


def test_heading_parser_skips_code_fences_and_reads_the_title(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "---\ntitle: 'A runbook'\n---\n\nIntro.\n\n## Steps {#steps}\n\n"
        "```sh\n# not a heading\n```\n\n    ```\n    # nor this\n    ```\n### Deeper ###\n"
    )
    assert headings(doc) == {"A runbook", "Steps", "Deeper"}


def test_every_question_is_well_formed() -> None:
    check_well_formed(_questions())


def test_enough_questions_of_every_kind_and_at_most_three_per_document() -> None:
    check_coverage(_questions(), at_least=80, per_document=lambda _: 3)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/bench/docs is not here")
def test_every_expected_section_is_a_heading_of_an_existing_file() -> None:
    assert not missing_sections(_questions(), CORPUS)
