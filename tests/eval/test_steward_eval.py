"""The steward benchmark's generator makes what it says, the same way for the same seed; its
rewordings stay restatements; its scorer's arithmetic holds on a hand-made case. The last tests
run the steward itself (`steward_run`) on a small store: they fail when it is broken."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from graphmem.extractors import get_extractor

import eval.__main__ as cli
from eval import locomo
from eval.paraphrase import content_words, exact_variant, normalised, paraphrase
from eval.steward import KNOWLEDGE_KINDS, Corpus, Truth, build, generate
from eval.steward_load import queries_from, run_load
from eval.steward_run import results_name, run_pollution
from eval.steward_score import duplicates_by_source, score, wrong_automatic
from graphmem import open_store
from graphmem.daemon.client import live_owner
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.steward.models import FINDING_KINDS, StewardPolicy

BENCH = Path(__file__).parents[2] / ".." / "shared" / "bench"
pytestmark = pytest.mark.skipif(not BENCH.is_dir(), reason="../shared/bench is not here")
NOW = datetime(2025, 3, 1, 12, tzinfo=UTC)


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return generate(BENCH, 200, rate=0.2, seed=3, now=NOW)


def _items(corpus: Corpus) -> dict[str, dict[str, Any]]:
    return {item["id"]: item for item in corpus.items}


def _when(value: str) -> datetime:
    return datetime.fromisoformat(value)


# -- the generator ----------------------------------------------------------------------------


def test_the_same_seed_gives_the_same_store_and_another_seed_another(corpus: Corpus) -> None:
    again = generate(BENCH, 200, rate=0.2, seed=3, now=NOW)
    other = generate(BENCH, 200, rate=0.2, seed=4, now=NOW)

    assert again.items == corpus.items and again.truth == corpus.truth
    assert (again.files, again.citations, again.changes) == (
        corpus.files, corpus.citations, corpus.changes
    )  # fmt: skip
    assert {i["content"] for i in other.items} != {i["content"] for i in corpus.items}


def test_it_injects_what_the_plan_says_and_every_id_is_in_the_store(corpus: Corpus) -> None:
    plan, truth, items = corpus.plan, corpus.truth, _items(corpus)
    tiers = Counter(truth.duplicates.values())

    assert len(corpus.items) == len(items) == 200  # ids are unique
    assert tiers == {"exact_duplicate": plan.exact, "near_duplicate": plan.near,
                     "similar": plan.similar}  # fmt: skip
    assert len(truth.conflicts) == plan.conflicts
    assert len(truth.conflict_negatives) == plan.conflict_negatives
    # as many as the sampled texts hold: a small store has few texts of one session or document
    assert 0 < len(truth.hard_negatives) <= plan.hard_negatives
    stale = Counter(truth.stale.values())
    fresh = Counter(truth.fresh.values())
    assert stale["expired_working"] == plan.expired_working == fresh["fresh_working"]
    assert stale["unverified"] == plan.unverified == fresh["verified_knowledge"]
    assert fresh["old_episode"] == plan.old_episodes
    cited = stale["drifted_citation"] + fresh["intact_citation"] + fresh["reverified_citation"]
    assert cited == len(corpus.citations) == plan.cited
    assert stale["drifted_citation"] > 0 and fresh["reverified_citation"] > 0
    assert truth.injected() <= set(items)
    assert set(truth.counts()) <= set(FINDING_KINDS)
    assert sum(truth.counts().values()) == len(truth.duplicates) + len(truth.conflicts) + len(
        truth.stale
    )


def test_duplicates_keep_kind_type_and_context_and_are_restated(corpus: Corpus) -> None:
    items = _items(corpus)
    kept = []
    for pair, kind in corpus.truth.duplicates.items():
        first, second = (items[i] for i in sorted(pair))
        assert (first["kind"], first["type"], first["context"]) == (
            second["kind"], second["type"], second["context"]
        )  # fmt: skip
        assert first["content"] != second["content"]
        same = normalised(first["content"]) == normalised(second["content"])
        assert same == (kind == "exact_duplicate")
        if kind != "exact_duplicate":
            words = content_words(first["content"])
            kept.append(len(words & content_words(second["content"])) / len(words))
    assert min(kept) >= 0.6 and sum(kept) / len(kept) >= 0.85


def test_hard_negatives_are_on_one_topic_and_never_in_the_truth(corpus: Corpus) -> None:
    items, truth = _items(corpus), corpus.truth
    others = {i for p in [*truth.duplicates, *truth.conflicts] for i in p} | set(truth.stale)

    for pair in truth.hard_negatives:
        a, b = (items[i] for i in sorted(pair))
        assert pair not in truth.duplicates and not pair & others
        assert a["context"] == b["context"] and a["kind"] == b["kind"]
        assert normalised(a["content"]) != normalised(b["content"])
        assert content_words(a["content"]) & content_words(b["content"])  # one topic
    assert not set(truth.conflicts) & truth.conflict_negatives


def test_the_extractor_reads_each_conflict_as_one_subject_with_two_objects(
    corpus: Corpus,
) -> None:
    items = _items(corpus)
    extractor = get_extractor("spacy")

    def facts(memory_id: str) -> dict[tuple[str, str], str]:
        found = extractor.extract([items[memory_id]["content"]])[0].facts
        return {(f.subject, f.predicate): f.object for f in found}

    for pair in corpus.truth.conflicts:
        a, b = (facts(i) for i in sorted(pair))
        shared = a.keys() & b.keys()
        assert len(shared) == 1 and all(a[k] != b[k] for k in shared), (a, b)
    for pair in corpus.truth.conflict_negatives:
        a, b = (facts(i) for i in sorted(pair))
        assert a and b and not a.keys() & b.keys()  # one service, two different predicates


def test_stale_and_fresh_memories_are_dated_as_planned(corpus: Corpus) -> None:
    items, truth, policy = _items(corpus), corpus.truth, StewardPolicy()
    ttl, stale = timedelta(hours=policy.working_ttl_hours), timedelta(days=policy.stale_days)

    for memory_id, kind in [*truth.stale.items(), *truth.fresh.items()]:
        item = items[memory_id]
        age = NOW - _when(item["created_at"])
        if kind in ("expired_working", "fresh_working"):
            assert item["type"] == "working" and (age > ttl) == (kind == "expired_working")
        elif kind in ("unverified", "verified_knowledge"):
            assert item["kind"] in KNOWLEDGE_KINDS and NOW - _when(item["updated_at"]) > stale
            assert ("verified_at" in item) == (kind == "verified_knowledge")
            if "verified_at" in item:
                assert NOW - _when(item["verified_at"]) < stale
        elif kind == "old_episode":
            assert item["type"] == "episodic" and age > stale
        else:  # citing a file
            assert age < stale and item["type"] != "working"
    others = set(items) - set(truth.stale) - set(truth.fresh)
    assert all(NOW - _when(items[i]["created_at"]) < stale / 2 for i in others)
    assert all(items[i]["type"] != "working" for i in others)


def test_the_built_store_holds_every_memory_and_the_files_drifted_as_planned(
    corpus: Corpus, tmp_path: Path
) -> None:
    drifted = {i for i, kind in corpus.truth.stale.items() if kind == "drifted_citation"}

    with open_store(tmp_path / ".graphmem", embedder=HashEmbedder(), extract_on_write=False) as gm:
        seconds = build(gm, corpus)

        assert gm.stats().total == 200
        assert all(gm.get(i).id == i for i in corpus.truth.injected())
        assert {item.memory_id for item in gm.drift_scan().items} == drifted
        assert set(seconds) == {"import", "extract", "citations"}


# -- rewordings -------------------------------------------------------------------------------

TEXTS = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "We rolled back the deploy because the index was missing. It is fixed now, and the 3 "
    "replicas serve 12000 requests a minute.",
    "Run the script in production to delete the stale assets, and check the logs and metrics.",
]


@pytest.mark.parametrize("text", TEXTS)
def test_rewordings_differ_keep_the_speaker_and_follow_the_seed(text: str) -> None:
    for heavy in (False, True):
        first = paraphrase(text, random.Random(1), heavy=heavy)
        assert first == paraphrase(text, random.Random(1), heavy=heavy)
        assert normalised(first) != normalised(text)
        assert first.startswith("Caroline: ") == text.startswith("Caroline: ")
        words = content_words(text)
        assert len(words & content_words(first)) / len(words) >= 0.6
    exact = exact_variant(text, random.Random(2))
    assert exact != text and normalised(exact) == normalised(text)


def test_a_heavy_rewording_moves_a_clause_or_a_sentence() -> None:
    heavy = {paraphrase(TEXTS[1], random.Random(seed), heavy=True) for seed in range(20)}

    assert any(text.startswith(("Because", "Since", "It is fixed", "It's fixed")) for text in heavy)


# -- the scorer -------------------------------------------------------------------------------


def finding(kind: str, *targets: str, applied: bool = False) -> SimpleNamespace:
    return SimpleNamespace(kind=kind, targets=list(targets), confidence=0.9, auto=applied,
                           status="applied" if applied else "proposed", evidence={})  # fmt: skip


def test_the_scorer_counts_right_wrong_outside_and_traps() -> None:
    truth = Truth(
        duplicates={frozenset({"a", "a2"}): "exact_duplicate",
                    frozenset({"b", "b2"}): "near_duplicate"},
        conflicts={frozenset({"c1", "c2"}): "fact_conflict"},
        stale={"s1": "drifted_citation", "s2": "expired_working"},
        hard_negatives={frozenset({"h1", "h2"})},
        fresh={"f1": "fresh_working"},
    )  # fmt: skip
    findings = [
        finding("exact_duplicate", "a", "a2", applied=True),  # right
        finding("similar", "b2", "b"),  # right: any duplicate kind, either order
        finding("near_duplicate", "h1", "h2"),  # a hard negative
        finding("similar", "x", "y"),  # outside anything injected
        finding("fact_conflict", "c1", "c2"),  # right
        finding("fact_conflict", "c1", "a"),  # wrong, on injected memories
        finding("drifted_citation", "s1"),  # right
        finding("unverified", "s2"),  # the wrong kind of staleness
        finding("expired_working", "f1", applied=True),  # a fresh one, archived
        finding("orphan_entity", "e1"),
    ]

    scored = score(findings, truth)
    dup, con, stale = (scored["families"][f] for f in ("duplicates", "conflicts", "stale"))

    assert (dup["findings"], dup["judged"], dup["right"], dup["outside"]) == (4, 3, 2, 1)
    assert dup["precision"] == 0.6667 and dup["precision_all"] == 0.5 and dup["recall"] == 1.0
    assert dup["traps_reported"] == 1 and dup["wrong_on_injected"] == 1
    assert dup["by_truth"]["near_duplicate"] == {
        "n": 1, "found": 1, "recall": 1.0, "reported_as": {"similar": 1}
    }  # fmt: skip
    assert dup["by_kind"]["similar"] == {
        "findings": 2, "right": 1, "judged": 1, "outside": 1, "precision": 1.0
    }  # fmt: skip
    assert (con["precision"], con["recall"], con["wrong_on_injected"]) == (0.5, 1.0, 1)
    assert (stale["precision"], stale["recall"], stale["traps_reported"]) == (0.3333, 0.5, 1)
    assert stale["by_truth"]["expired_working"]["found"] == 0
    assert scored["other_findings"] == {"orphan_entity": 1}
    assert scored["targets"]["duplicates_recall"] == {"target": 0.8, "value": 1.0, "met": True}
    assert not scored["targets"]["stale_precision"]["met"]

    automatic = wrong_automatic(findings, truth)
    assert automatic["applied"] == 2 and automatic["wrong"] == 1
    chat, docs = ("a", "a2", "x", "y"), ("b", "b2", "h1", "h2")
    source_of = {i: "chat" for i in chat} | {i: "docs" for i in docs}
    assert duplicates_by_source(findings, truth, source_of) == {
        "chat": {"findings": 2, "precision": 1.0, "injected": 1, "recall": 1.0},
        "docs": {"findings": 2, "precision": 0.5, "injected": 1, "recall": 1.0},
    }
    assert automatic["wrong_by_kind"] == {"expired_working": 1}


def test_results_are_named_by_size() -> None:
    assert results_name(10_000) == "steward_10k.json"
    assert results_name(100_000) == "steward_100k.json"
    assert results_name(2_500) == "steward_2500.json"


# -- the steward itself (steward_run) ---------------------------------------------------------


def test_steward_run_end_to_end_on_a_small_store(tmp_path: Path) -> None:
    out = tmp_path / "steward.json"

    assert cli.main(["steward", "--memories", "200", "--rate", "0.2", "--seed", "3",
                     "--embedding", "hash", "--out", str(out)]) == 0  # fmt: skip

    result = json.loads(out.read_text())
    assert result["store"]["memories"] == 200
    assert set(result["families"]) == {"duplicates", "conflicts", "stale"}
    assert result["families"]["duplicates"]["findings"] > 0
    assert result["steward"]["dry_run_seconds"] >= 0
    assert result["automatic"]["applied"] >= 0
    assert set(result["targets"]) == {
        "duplicates_precision", "duplicates_recall", "conflicts_precision",
        "conflicts_recall", "stale_precision", "wrong_automatic_actions",
    }  # fmt: skip


@pytest.mark.slow  # ~70 s; `python -m eval steward --load` runs it at scale
def test_recall_is_timed_through_the_owner_idle_and_while_the_steward_runs(
    tmp_path: Path,
) -> None:
    home = tmp_path / ".graphmem"
    texts = [f"The {area} service is deployed to eu-west-{i % 3 + 1} by the platform team"
             for i, area in enumerate(("billing", "orders", "search", "ledger", "mailer") * 8)]  # fmt: skip
    with open_store(home, embedder=HashEmbedder(), extract_on_write=False) as gm:
        gm.remember_many([{"content": text, "context": "platform"} for text in texts])

    load = run_load(home, "hash", queries_from(texts, 10, seed=1), max_runs=1)

    assert load["steward_runs"] == 1 and load["found"] > 0  # the copies are duplicates
    assert load["recall_idle"]["n"] == 200
    assert load["steward_run_seconds"] >= 0 and load["recall_during_run"]["n"] >= 0
    assert live_owner(home) is None  # stopped


def test_steward_run_merges_a_polluted_conversation() -> None:
    sample = json.loads((BENCH / "locomo" / "locomo_dev.json").read_text())[0]
    turns = len(locomo.turns(sample))

    result = run_pollution(BENCH, HashEmbedder(), conversations=1, questions=10)

    assert result["duplicates_added"] == round(0.3 * turns)
    assert result["questions"] == 10
    assert set(result["recall@10"]) == {"clean", "polluted", "after_steward"}
    assert all(0 <= value <= 1 for value in result["recall@10"].values())
    assert result["merged"] == result["merged_right"] + result["merged_wrong"]
    assert result["merged"] > 0
