"""CI's retrieval-quality gate: the quick slice of every benchmark against eval/baseline_quick.json.

Fails when a headline metric (LoCoMo R@10 overall and per category, LongMemEval recall_all@5 and
ndcg_any@5, Cranfield nDCG@10 and R@100, for hybrid, bm25 and vector) drops more than TOLERANCE
below its baseline. A deliberate change of quality re-measures the baseline with
`python -m eval all --quick --out eval/baseline_quick.json`.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from eval import suite
from graphmem.embeddings import parallel
from graphmem.embeddings.config import EmbeddingConfig
from graphmem.embeddings.factory import make_embedder

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT.parent / "shared" / "bench"
BASELINE = ROOT / "eval" / "baseline_quick.json"
TOLERANCE = 0.02

model = pytest.mark.model


@model
@pytest.mark.parametrize("benchmark", suite.BENCHMARKS)
def test_the_quick_slice_holds_the_baseline(benchmark: str) -> None:
    """One benchmark a test, so that the three run side by side on CI's workers."""
    if not BENCH.is_dir():
        pytest.skip(f"evaluation data not found at {BENCH} (the shared bench folder)")
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    assert baseline["slice"] == asdict(suite.QUICK), "the slice changed: re-measure the baseline"
    embedder = make_embedder(EmbeddingConfig(provider="local"))
    assert baseline["embedding_space"] == embedder.space.label
    # One BLAS thread for the one-text query embeds too: on a busy 2-core runner, OpenBLAS's
    # second thread waits for a core and a query takes 100-300 ms instead of 10; scores are equal.
    with parallel.single_threaded_blas():
        results = suite.run_suite(
            suite.Paths.under(BENCH), embedder=embedder, part=suite.QUICK, benchmarks=[benchmark]
        )
    # the baseline's rows of this benchmark alone
    rows = suite.headline({benchmark: baseline[benchmark]})
    assert rows and all(baseline["headline"][key] == row for key, row in rows.items())
    print("now (baseline)\n" + suite.table(results["headline"], rows))
    counts = suite.question_counts(results)
    dropped = suite.regressions(results["headline"], rows, TOLERANCE, counts)
    assert not dropped, "retrieval quality dropped:\n" + "\n".join(dropped)


def test_a_drop_beyond_the_tolerance_or_a_missing_metric_is_a_regression() -> None:
    baseline = {"b/hybrid": {"m": 0.50, "n": 0.80}, "b/bm25": {"m": 0.40}}
    now = {"b/hybrid": {"m": 0.481, "n": 0.70}}
    assert suite.regressions(now, baseline, TOLERANCE) == [
        "b/hybrid n: 0.7000 < baseline 0.8000 - 0.02",
        "b/bm25 m: missing (baseline 0.4000)",
    ]
    assert "0.4810 (0.5000)" in suite.table(now, baseline)


def test_a_small_category_may_drop_by_one_question_but_not_by_two() -> None:
    baseline = {"b/hybrid": {"few": 0.70, "many": 0.70}}
    counts = {"b/hybrid": {"few": 13, "many": 500}}
    one_flip = {"b/hybrid": {"few": 0.70 - 1 / 13, "many": 0.69}}
    assert suite.regressions(one_flip, baseline, TOLERANCE, counts) == []
    two_flips = {"b/hybrid": {"few": 0.70 - 2 / 13, "many": 0.67}}
    assert suite.regressions(two_flips, baseline, TOLERANCE, counts) == [
        "b/hybrid few: 0.5462 < baseline 0.7000 - 0.07692",
        "b/hybrid many: 0.6700 < baseline 0.7000 - 0.02",
    ]
