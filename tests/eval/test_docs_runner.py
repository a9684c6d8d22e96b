"""The documents runner's arithmetic, on a fake store with canned hits: doc hit@k, MRR and section
matching are checked against values worked out by hand, without the real search."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import eval.__main__ as cli
from eval import docs
from eval.metrics import reciprocal_rank


def hit(path: str, heading: str, *crumbs: str) -> SimpleNamespace:
    return SimpleNamespace(path=path, heading=heading, breadcrumb=list(crumbs), score=1.0)


QUESTIONS = [
    {
        "id": "q1",
        "kind": "fact",
        "phrasing": "names",
        "question": "how do I run it",
        "expected": [{"path": "a.md", "heading": "Steps"}],
    },
    {
        "id": "q2",
        "kind": "condition",
        "phrasing": "describes",
        "question": "it broke after a release",
        "expected": [{"path": "b.md", "heading": "Roll  back"}],
    },
    {
        "id": "q3",
        "kind": "two_sections",
        "phrasing": "names",
        "question": "intro and alerts",
        "expected": [{"path": "a.md", "heading": "Intro"}, {"path": "c.md", "heading": "Alerts"}],
    },
]
OTHERS = [hit(f"x{i}.md", "Other", f"X{i}", "Other") for i in range(5)]
CANNED = {
    # q1: the document at rank 2, inside the expected section (a breadcrumb names it)
    "how do I run it": [OTHERS[0], hit("a.md", "Run it", "A", "Steps", "Run it")],
    # q2: rank 1, the heading differs only in case and spacing
    "it broke after a release": [hit("b.md", "ROLL back ", "B", "roll back")],
    # q3: the first expected document at rank 6, past every cut-off but MRR@10
    "intro and alerts": [*OTHERS, hit("c.md", "Alerts", "C", "Alerts")],
}


class FakeStore:
    """index_documents and search_docs, answering from CANNED for bm25 and nothing otherwise."""

    def __init__(self) -> None:
        self.indexed: list[list[Path]] = []
        self.searches: list[tuple[str, int, str]] = []

    def __enter__(self) -> FakeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def index_documents(self, paths: list[Path]) -> Any:
        self.indexed.append(list(paths))
        return SimpleNamespace(model_dump=lambda mode: {"files": 3, "mode": mode})

    def search_docs(self, query: str, *, limit: int, recipe: str) -> Any:
        self.searches.append((query, limit, recipe))
        return SimpleNamespace(hits=CANNED[query] if recipe == "bm25" else [])


def test_reciprocal_rank_is_one_over_the_first_relevant_rank_within_k() -> None:
    assert reciprocal_rank(["a", "b", "c"], {"c", "b"}, 10) == 0.5
    assert reciprocal_rank(["a", "b", "c"], {"c"}, 2) == 0.0
    assert reciprocal_rank([], {"c"}, 10) == 0.0


def test_a_section_matches_by_heading_breadcrumb_or_document_title() -> None:
    want = {"path": "a.md", "heading": "DNS for the `gov.uk` zone"}
    assert docs.section_matches(hit("a.md", "dns for the gov.uk  zone", "A", "x"), want)
    assert docs.section_matches(hit("a.md", "Deeper {#d}", "A", "DNS for the gov.uk zone"), want)
    assert not docs.section_matches(hit("b.md", "DNS for the gov.uk zone", "B"), want)
    assert not docs.section_matches(hit("a.md", "Other", "DNS for the gov.uk zone", "Other"), want)
    title = {"path": "a.md", "heading": "A runbook"}
    assert docs.section_matches(hit("a.md", "A runbook", "A runbook"), title)
    assert docs.section_matches(hit("a.md", "", "A runbook"), title)
    assert not docs.section_matches(hit("a.md", "Steps", "A runbook", "Steps"), title)


def test_scores_overall_by_kind_and_by_phrasing(tmp_path: Path) -> None:
    store = FakeStore()
    result = docs.evaluate(store, tmp_path, QUESTIONS, ["bm25", "vector"], details=True)
    assert store.indexed == [[tmp_path]]
    assert {(limit, recipe) for _, limit, recipe in store.searches} == {
        (10, "bm25"),
        (10, "vector"),
    }
    assert result["index_report"] == {"files": 3, "mode": "json"}
    bm25 = result["systems"]["bm25"]
    # q1: rank 2, section found; q2: rank 1, found; q3: rank 6, not found
    assert bm25["overall"] == {
        "n": 3,
        "doc_hit@1": 0.3333,
        "doc_hit@5": 0.6667,
        "doc_mrr@10": 0.5556,  # (1/2 + 1 + 1/6) / 3
        "section_hit@5": 0.6667,
    }
    assert bm25["by_kind"]["fact"] == {
        "n": 1,
        "doc_hit@1": 0.0,
        "doc_hit@5": 1.0,
        "doc_mrr@10": 0.5,
        "section_hit@5": 1.0,
    }
    assert bm25["by_kind"]["two_sections"]["doc_mrr@10"] == 0.1667
    assert bm25["by_phrasing"]["names"] == {
        "n": 2,
        "doc_hit@1": 0.0,
        "doc_hit@5": 0.5,
        "doc_mrr@10": 0.3333,
        "section_hit@5": 0.5,
    }
    assert bm25["by_phrasing"]["describes"]["section_hit@5"] == 1.0
    assert set(bm25["search_ms"]) == {"p50", "p95", "mean"}
    assert result["systems"]["vector"]["overall"]["doc_mrr@10"] == 0.0
    third = result["details"]["bm25"][2]
    assert third["id"] == "q3" and len(third["top"]) == 5
    assert third["top"][0] == ["x0.md", "Other"]
    assert result["details"]["vector"][0]["top"] == []


def test_details_are_left_out_unless_asked(tmp_path: Path) -> None:
    result = docs.evaluate(FakeStore(), tmp_path, QUESTIONS, ["bm25"])
    assert "details" not in result


def test_run_docs_opens_a_fresh_store_and_honours_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps({"corpus": "fake", "root": "docs", "questions": QUESTIONS}))
    data = tmp_path / "docs"
    data.mkdir()
    opened: list[dict[str, Any]] = []

    def fake_open(path: str, **kwargs: Any) -> FakeStore:
        opened.append(kwargs)
        return FakeStore()

    monkeypatch.setattr(docs, "open_store", fake_open)
    result = docs.run_docs(data, questions, ["bm25"], "hash", limit=2)
    assert len(opened) == 1 and opened[0]["extract_on_write"] is False
    assert result["corpus"] == "fake" and result["questions"] == 2
    assert result["embedding"] == "hash"
    assert result["systems"]["bm25"]["overall"]["n"] == 2
    assert result["systems"]["bm25"]["overall"]["doc_mrr@10"] == 0.75
    with pytest.raises(FileNotFoundError):
        docs.run_docs(tmp_path / "nowhere", questions, ["bm25"], "hash")


def test_the_cli_passes_its_defaults_and_writes_the_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[Any, ...]] = []

    def fake_run(*args: Any, **kwargs: Any) -> dict[str, Any]:
        calls.append((*args, kwargs["limit"], kwargs["details"]))
        return {"questions": 0}

    monkeypatch.setattr(docs, "run_docs", fake_run)
    out = tmp_path / "docs.json"
    assert cli.main(["docs", "--embedding", "hash", "--limit", "4", "--out", str(out)]) == 0
    assert calls == [
        (
            Path("../shared/bench/docs"),
            Path("eval/data/docs_questions.json"),
            ["hybrid", "bm25", "vector"],
            "hash",
            4,
            False,
        )
    ]
    assert json.loads(out.read_text()) == {"questions": 0}
