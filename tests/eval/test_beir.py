"""The BEIR loader, corpus slicing and runner, on a tiny BEIR folder written for the test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval import beir
from graphmem.embeddings.hashing import HashEmbedder

DOCS = [
    {"_id": "d1", "title": "Apple orchards", "text": "apples grow on trees in the orchard"},
    {"_id": "d2", "title": "", "text": "rockets fly to orbit on liquid fuel"},
    {"_id": 3, "title": "Boundary layers", "text": "boundary layer flow over a flat plate"},
    {"_id": "d4", "title": "", "text": ""},
]
QUERIES = [
    {"_id": "q1", "text": "boundary layer flow over a plate"},
    {"_id": "q2", "text": "apples"},  # no judgments at all
    {"_id": "q3", "text": "rockets"},  # judged, but nothing relevant
]
QRELS = "query-id\tcorpus-id\tscore\nq1\t3\t2\nq1\td1\t0\nq3\td2\t0\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in DOCS) + "\n")
    (tmp_path / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in QUERIES))
    (tmp_path / "qrels" / "test.tsv").write_text(QRELS)
    return tmp_path


def test_load_reads_the_three_files_with_string_ids(folder: Path) -> None:
    corpus, queries, qrels = beir.load(folder)
    assert [d["_id"] for d in corpus] == ["d1", "d2", "3", "d4"]
    assert [q["_id"] for q in queries] == ["q1", "q2", "q3"]
    assert qrels == {"q1": {"3": 2.0, "d1": 0.0}, "q3": {"d2": 0.0}}


def test_documents_become_memories_and_empty_ones_are_counted(folder: Path) -> None:
    corpus, _, _ = beir.load(folder)
    docs, empty = beir.memories(corpus)
    assert empty == 1
    assert docs[0] == {
        "content": "apples grow on trees in the orchard",
        "title": "Apple orchards",
        "metadata": {"doc": "d1"},
    }
    assert docs[1]["title"] is None


def test_a_slice_keeps_the_relevant_documents_and_a_seeded_sample() -> None:
    corpus = [{"_id": str(i)} for i in range(50)]
    one = beir.slice_corpus(corpus, {"3", "40"}, 5, seed=7)
    assert {"3", "40"} <= {d["_id"] for d in one}
    assert len(one) == 7
    assert one == beir.slice_corpus(corpus, {"3", "40"}, 5, seed=7)
    assert [d["_id"] for d in one] == sorted((d["_id"] for d in one), key=int)  # corpus order


def test_run_scores_only_queries_with_a_relevant_judgment(folder: Path) -> None:
    result = beir.run(folder, ["bm25"], embedder=HashEmbedder())["bm25"]
    assert result["n_queries"] == 1
    assert result["queries_without_relevant_judgments"] == 2
    assert result["metrics"] == {"ndcg@10": 1.0, "recall@100": 1.0}
    assert result["corpus"] == {
        "docs_in_corpus": 4,
        "docs_indexed": 3,
        "docs_without_text": 1,
        "sliced": False,
    }
