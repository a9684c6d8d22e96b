"""The ranking metrics against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from eval.metrics import ndcg, recall_all, recall_any, recall_at


def test_recall_any_needs_one_relevant_id_in_the_top_k() -> None:
    ranked = ["a", "b", "c"]
    assert recall_any(ranked, {"c", "z"}, 2) == 0.0
    assert recall_any(ranked, {"c", "z"}, 3) == 1.0
    assert recall_any(ranked, set(), 3) == 0.0


def test_recall_all_needs_every_relevant_id_in_the_top_k() -> None:
    ranked = ["a", "b", "c"]
    assert recall_all(ranked, {"a", "c"}, 2) == 0.0
    assert recall_all(ranked, {"a", "c"}, 3) == 1.0
    assert recall_all(ranked, {"a", "z"}, 10) == 0.0
    assert recall_all(ranked, set(), 3) == 0.0  # nothing to find is not a success


def test_recall_at_is_the_fraction_found() -> None:
    assert recall_at(["a", "b", "c"], {"a", "c", "d", "e"}, 2) == 0.25
    assert recall_at(["a", "b", "c"], {"a", "c", "d", "e"}, 3) == 0.5
    assert recall_at(["a"], set(), 10) == 0.0


def test_binary_ndcg_puts_every_relevant_id_first_in_the_ideal() -> None:
    # relevant at ranks 2 and 4: DCG = 1/log2(3) + 1/log2(5) = 1.061606;
    # ideal, ranks 1 and 2: 1 + 1/log2(3) = 1.630930
    gains = {"r1": 1.0, "r2": 1.0}
    assert ndcg(["x", "r1", "y", "r2"], gains, 5) == pytest.approx(0.650921, abs=1e-6)
    assert ndcg(["r1", "r2", "x"], gains, 5) == pytest.approx(1.0)
    assert ndcg(["x", "y", "r1"], gains, 2) == 0.0


def test_graded_ndcg_uses_the_scores_as_gains() -> None:
    # DCG = 1/1 + 3/log2(3) = 2.892789; ideal 3, 2, 1: 3 + 2/log2(3) + 1/2 = 4.761860
    gains = {"a": 3.0, "b": 2.0, "c": 1.0}
    assert ndcg(["c", "a", "z"], gains, 10) == pytest.approx(0.607492, abs=1e-6)


def test_ndcg_ignores_judgments_of_zero_or_less() -> None:
    gains = {"a": 0.0, "n": -1.0, "b": 1.0}
    assert ndcg(["a", "b"], gains, 10) == pytest.approx(1 / math.log2(3))
    assert ndcg(["a", "n"], {"a": 0.0, "n": -1.0}, 10) == 0.0


def test_ndcg_cuts_the_ideal_at_k_too() -> None:
    assert ndcg(["a"], {"a": 1.0, "b": 1.0, "c": 1.0}, 1) == 1.0
