"""The multi-hop passage retrieval eval (eval/multihop.py): its scoring by titles, repeated
MuSiQue titles included, the published rows against the bench README, and a run on a slice of
2WikiMultihopQA (ten questions, their gold passages and a few others) that builds a store,
extracts entities, asks every system, and reuses the store it kept."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

import eval.__main__ as cli
from eval import multihop
from graphmem.embeddings.hashing import HashEmbedder

BENCH = Path(__file__).parents[2] / ".." / "shared" / "bench"
needs_bench = pytest.mark.skipif(
    not (BENCH / "multihop").is_dir(), reason="../shared/bench/multihop is not here"
)


def write_set(folder: Path, corpus: list[dict[str, Any]], questions: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    (folder / "questions.json").write_text(json.dumps(questions), encoding="utf-8")
    return folder


def test_a_gold_title_among_the_top_k_titles_counts_and_one_below_k_does_not() -> None:
    ranked = ["Teutberga", "Lothair II", "Ermengarde of Tours"]
    gold = ["Lothair II", "Ermengarde of Tours"]
    assert multihop.title_recall(ranked, gold, 2) == 0.5
    assert multihop.title_recall(ranked, gold, 5) == 1.0
    assert multihop.title_recall([], gold, 5) == 0.0


def test_a_repeated_musique_title_is_found_by_any_passage_of_that_title() -> None:
    # two gold passages titled "American Idol": one passage of that title finds both
    gold = ["American Idol", "American Idol", "Kelly Clarkson"]
    assert multihop.title_recall(["American Idol", "Fox"], gold, 2) == pytest.approx(2 / 3)
    assert multihop.title_recall(["American Idol", "American Idol"], gold, 2) == pytest.approx(
        2 / 3
    )


def test_a_passage_is_one_memory_of_title_and_text_with_its_title_kept() -> None:
    assert multihop.memories([{"title": "Port Blair", "text": "Port Blair is a city."}]) == [
        {"content": "Port Blair\nPort Blair is a city.", "metadata": {"title": "Port Blair"}}
    ]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ({"id": "x", "type": "compositional"}, "compositional"),
        ({"id": "2hop__574419_270105"}, "2hop"),
        ({"id": "3hop1__1_2_3"}, "3hop"),
        ({"id": "4hop3__1_2_3_4"}, "4hop"),
        ({"id": "83bf3b5a0bd911eba7f7acde48001122"}, None),
    ],
)
def test_questions_are_grouped_by_2wiki_type_or_musique_hops(
    question: dict[str, Any], expected: str | None
) -> None:
    assert multihop.category(question) == expected


@needs_bench
def test_the_published_rows_are_the_bench_readmes() -> None:
    text = (BENCH / "README.md").read_text(encoding="utf-8")
    section = text.split("## Multi-hop passage retrieval", 1)[1]
    found = {}
    for name, musique, wiki in re.findall(
        r"^\| ([^|]+?) \| ([^|]+?) \| ([^|]+?) \|$", section, re.M
    ):
        if "/" not in musique or name == "retriever":
            continue
        number = lambda s: None if s.strip() == "-" else float(s)  # noqa: E731
        m2, m5 = musique.split("/")
        w2, w5 = wiki.split("/")
        found[name] = {
            "musique": {"R@2": number(m2), "R@5": number(m5)},
            "2wiki": {"R@2": number(w2), "R@5": number(w5)},
        }
    assert found == multihop.PUBLISHED["rows"]


@pytest.fixture(scope="module")
def wiki_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first ten 2Wiki questions, their gold passages and ten others."""
    corpus, questions = multihop.load(BENCH / "multihop" / "2wikimultihopqa")
    chosen = questions[:10]
    gold = {t for q in chosen for t in q["gold_titles"]}
    others = [p for p in corpus if p["title"] not in gold]
    kept = [p for p in corpus if p["title"] in gold] + random.Random(0).sample(others, 10)
    return write_set(tmp_path_factory.mktemp("multihop") / "2wikimultihopqa", kept, chosen)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("stores")


@pytest.fixture(scope="module")
def wiki_run(wiki_slice: Path, stores: Path) -> dict[str, Any]:
    return multihop.run(wiki_slice, "2wiki", embedder=HashEmbedder(), store_dir=stores, walk=True)


@needs_bench
def test_every_system_finds_gold_passages_in_a_corpus_that_holds_them(
    wiki_run: dict[str, Any],
) -> None:
    assert wiki_run["n_questions"] == 10
    assert set(wiki_run["systems"]) == set(multihop.SYSTEMS)
    for system, res in wiki_run["systems"].items():
        assert 0 < res["recall"]["5"]["overall"] <= 1, system
        assert res["recall"]["2"]["overall"] <= res["recall"]["5"]["overall"], system
        assert res["recall_ms_p50"] <= res["recall_ms_p95"]
    # BM25 on the passages of the questions' own names: most gold titles are in its top 5
    assert wiki_run["systems"]["bm25"]["recall"]["5"]["overall"] >= 0.5


@needs_bench
def test_the_result_has_its_ingest_types_comparison_and_published_rows(
    wiki_run: dict[str, Any],
) -> None:
    ingest = wiki_run["ingest"]
    assert ingest["reused_store"] is False
    assert ingest["store_seconds"] > 0 and ingest["extract_seconds"] > 0
    assert ingest["entity_mentions"] > 0 and ingest["extraction_errors"] == 0
    types = wiki_run["per_category_questions"]
    assert sum(types.values()) == 10
    for res in wiki_run["systems"].values():
        assert set(res["recall"]["5"]) == {"overall", *types}
    assert wiki_run["graph_vs_hybrid"]["subgraph_memories_mean"] > 0
    table = wiki_run["table"]
    assert table["graphmem bm25"]["R@5"] == round(
        100 * wiki_run["systems"]["bm25"]["recall"]["5"]["overall"], 1
    )
    assert table["HippoRAG (LLM OpenIE, Contriever) (published)"] == {"R@2": 71.5, "R@5": 89.5}


@needs_bench
def test_the_walk_report_counts_only_gold_titles_recall_left_out(
    wiki_run: dict[str, Any], wiki_slice: Path
) -> None:
    walk = wiki_run["walk"]
    _, questions = multihop.load(wiki_slice)
    assert walk["gold_titles"] == sum(len(q["gold_titles"]) for q in questions)
    hybrid = wiki_run["systems"]["hybrid"]["recall"]["5"]["overall"]
    assert walk["missed"] <= walk["gold_titles"] and (walk["missed"] == 0) == (hybrid == 1.0)
    assert walk["pagerank_top3"] <= walk["pagerank_top10"] <= walk["reached"] <= walk["missed"]
    assert walk["in_pool"] <= walk["missed"]
    assert 0 < walk["walk_memories_mean"] <= 700


@needs_bench
def test_a_kept_store_is_asked_again_without_storing_anything(
    wiki_run: dict[str, Any], wiki_slice: Path, stores: Path
) -> None:
    again = multihop.run(wiki_slice, "2wiki", ["bm25"], embedder=HashEmbedder(), store_dir=stores)
    assert again["ingest"] == {**wiki_run["ingest"], "reused_store": True}
    assert again["systems"]["bm25"]["recall"] == wiki_run["systems"]["bm25"]["recall"]
    fewer = json.loads((wiki_slice / "corpus.json").read_text())[:-1]
    other = write_set(wiki_slice.parent / "fewer", fewer, [])
    with pytest.raises(ValueError, match="another corpus"):
        multihop.run(other, "2wiki", ["bm25"], embedder=HashEmbedder(), store_dir=stores)


def test_musique_through_the_cli_counts_both_passages_of_a_repeated_gold_title(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = [
        {"title": "Van Hook Township", "text": "Van Hook Township lies in Mountrail County."},
        {"title": "Van Hook Township", "text": "The township was named after a settler."},
        {"title": "Mountrail County", "text": "Its seat is Stanley, North Dakota."},
        {"title": "Port Blair", "text": "Port Blair is the capital of the Andaman Islands."},
        {"title": "Eritrea", "text": "Eritrea lies on the Red Sea coast."},
    ]
    questions = [
        {
            "id": "2hop__1_2",
            "question": "Which county is Van Hook Township in?",
            "answer": "Mountrail County",
            "gold_titles": ["Van Hook Township", "Van Hook Township"],
        }
    ]
    write_set(tmp_path / "musique", corpus, questions)
    out = tmp_path / "multihop.json"
    args = ["multihop", "--data", str(tmp_path), "--set", "musique", "--system", "bm25"]
    assert cli.main([*args, "--embedding", "hash", "--out", str(out)]) == 0
    capsys.readouterr()
    result = json.loads(out.read_text())
    assert result["config"]["sets"] == ["musique"] and "2wiki" not in result
    assert result["musique"]["per_category_questions"] == {"2hop": 1}
    assert result["musique"]["systems"]["bm25"]["recall"]["2"] == {"overall": 1.0, "2hop": 1.0}
    assert result["published"]["rows"]["BM25"]["musique"] == {"R@2": 32.3, "R@5": 41.2}
