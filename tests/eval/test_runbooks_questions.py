"""The runbooks question set (OpenShift alert runbooks, PagerDuty incident response docs,
architecture decision records) is well formed and every expected section exists in the corpus.
The corpus is not in the repository: GRAPHMEM_RUNBOOKS_CORPUS names its folder, and the checks
that read it skip when that is unset or missing."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path, PurePosixPath

import pytest
from questions_checks import check_coverage, check_well_formed, load, missing_sections

REPO = Path(__file__).parents[2]
QUESTIONS = REPO / "eval" / "data" / "runbooks_questions.json"
CORPUS_ENV = "GRAPHMEM_RUNBOOKS_CORPUS"
# where each source sits in the data folder: (path prefix, at least this many questions, at most
# this many questions expecting any one of its documents)
SOURCES = {
    "github.com/openshift/runbooks": ("openshift/alerts/", 60, 2),
    "github.com/PagerDuty/incident-response-docs": ("pagerduty/docs/", 22, 3),
    "github.com/joelparkerhenderson/architecture-decision-record": ("adr/locales/en/", 18, 2),
}
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def _data() -> dict:
    data = load(QUESTIONS)
    assert data["corpus"] == "runbooks"
    assert isinstance(data["root"], str) and data["root"].strip()
    return data


def _questions() -> list[dict]:
    questions: list[dict] = _data()["questions"]
    return questions


def _prefix(path: str) -> str:
    return next(prefix for prefix, _, _ in SOURCES.values() if path.startswith(prefix))


def _corpus() -> Path:
    folder = os.environ.get(CORPUS_ENV)
    if not folder or not Path(folder).is_dir():
        pytest.skip(f"{CORPUS_ENV} is unset or not a folder (the corpus is not in the repo)")
    return Path(folder)


def test_the_file_names_its_three_sources() -> None:
    sources = _data()["sources"]
    assert [s["repo"] for s in sources] == list(SOURCES)
    for source in sources:
        assert set(source) == {"repo", "commit", "paths", "license"}, source["repo"]
        assert _COMMIT.match(source["commit"]), source["repo"]
        assert source["paths"] and source["license"], source["repo"]


def test_every_question_is_well_formed() -> None:
    check_well_formed(_questions())


def test_every_expected_path_lies_under_one_of_the_sources() -> None:
    prefixes = tuple(prefix for prefix, _, _ in SOURCES.values())
    outside = [
        (q["id"], e["path"])
        for q in _questions()
        for e in q["expected"]
        if not e["path"].startswith(prefixes)
    ]
    assert not outside


def test_enough_questions_of_every_kind_and_source_and_few_per_document() -> None:
    questions = _questions()
    limits = {prefix: most for prefix, _, most in SOURCES.values()}
    check_coverage(questions, at_least=110, per_document=lambda path: limits[_prefix(path)])
    per_source = Counter(_prefix(q["expected"][0]["path"]) for q in questions)
    for prefix, least, _ in SOURCES.values():
        assert per_source[prefix] >= least, per_source


def test_a_describing_question_does_not_name_the_alert() -> None:
    named = [
        (q["id"], stem)
        for q in _questions()
        if q["phrasing"] == "describes"
        for e in q["expected"]
        if e["path"].startswith("openshift/alerts/")
        and (stem := PurePosixPath(e["path"]).stem).casefold() in q["question"].casefold()
    ]
    assert not named


def test_every_expected_section_is_a_heading_of_an_existing_file() -> None:
    assert not missing_sections(_questions(), _corpus())


def test_a_describing_question_does_not_name_the_alert_title() -> None:
    corpus = _corpus()
    named = []
    for q in _questions():
        for e in q["expected"]:
            path = corpus / e["path"]
            if q["phrasing"] != "describes" or not e["path"].startswith("openshift/alerts/"):
                continue
            lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
            title = next((line[2:] for line in lines if line.startswith("# ")), "")
            title = title.split(" [")[0].strip()  # "Name [Deprecated]"
            if title and title.casefold() in q["question"].casefold():
                named.append((q["id"], title))
    assert not named
