"""LongMemEval protocol pieces on a tiny synthetic sample: dates, relevance, turns to sessions."""

from __future__ import annotations

import gzip
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from eval import longmemeval
from graphmem.embeddings.hashing import HashEmbedder


def turn(role: str, content: str, has_answer: bool = False) -> dict[str, Any]:
    return {"role": role, "content": content, "has_answer": has_answer}


def entry(question_id: str = "q1", **changes: Any) -> dict[str, Any]:
    base = {
        "question_id": question_id,
        "question_type": "multi-session",
        "question": "Which telescope did I buy for stargazing?",
        "question_date": "2023/06/01 (Thu) 10:00",
        "answer": "a refractor",
        "answer_session_ids": ["answer_t_1", "answer_t_2"],
        "haystack_session_ids": ["noise_1", "answer_t_1", "answer_t_2"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023-05-21", "garbled"],
        "haystack_sessions": [
            [turn("user", "Any tips for baking sourdough bread?"), turn("assistant", "Sure.")],
            [
                turn("user", "I bought a refractor telescope for stargazing", has_answer=True),
                turn("assistant", "Nice choice."),
                turn("user", "   "),
                turn("user", "It was cloudy last night"),
            ],
            [turn("user", "What about lenses?"), turn("assistant", "telescope", has_answer=True)],
        ],
    }
    return {**base, **changes}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2023/05/20 (Sat) 02:21", datetime(2023, 5, 20, 2, 21)),
        ("2023/5/2 (Tue) 9:05", datetime(2023, 5, 2, 9, 5)),
        ("2023-05-21", datetime(2023, 5, 21)),
        ("2023/05/20 (Sat)", datetime(2023, 5, 20)),
        ("2023-05-21T08:30:00", datetime(2023, 5, 21, 8, 30)),
        ("garbled", None),
        ("", None),
    ],
)
def test_session_dates_parse_in_every_format_seen(text: str, expected: datetime | None) -> None:
    assert longmemeval.parse_date(text) == expected


def test_a_session_is_relevant_only_with_the_answer_on_the_user_side() -> None:
    assert longmemeval.relevant_sessions(entry()) == {"answer_t_1"}
    assert longmemeval.scorable(entry())
    assert not longmemeval.scorable(entry("q1_abs"))
    assistant_only = entry(haystack_session_ids=["noise_1", "x_1", "answer_t_2"])
    assert not longmemeval.scorable(assistant_only)


def test_every_non_blank_user_turn_is_a_dated_memory_of_its_session() -> None:
    memories = longmemeval.user_turns(entry())
    assert [m["session_id"] for m in memories] == [
        "noise_1",
        "answer_t_1",
        "answer_t_1",
        "answer_t_2",
    ]
    assert [m["metadata"] for m in memories][1] == {"session": "answer_t_1"}
    assert memories[0]["created_at"] == datetime(2023, 5, 20, 2, 21)
    assert memories[1]["created_at"] == datetime(2023, 5, 21)
    assert "created_at" not in memories[3]  # an unreadable date leaves the memory undated
    assert all(m["content"].strip() for m in memories)


def test_the_turn_ranking_folds_into_sessions_by_first_appearance() -> None:
    turns = ["s2", "s2", "answer_a", "", "s1", "answer_a", "s2", "answer_b"]
    assert longmemeval.rank_sessions(turns) == ["s2", "answer_a", "s1", "answer_b"]


def test_session_metrics_at_5_and_10() -> None:
    sessions = ["s1", "answer_a", "s2", "s3", "s4", "s5", "answer_b"]
    got = longmemeval.score(sessions, {"answer_a", "answer_b"})
    assert got["recall_any@5"] == 1.0
    assert got["recall_all@5"] == 0.0
    assert got["recall_all@10"] == 1.0
    # relevant at ranks 2 and 7 against an ideal of ranks 1 and 2
    ideal = 1 + 1 / 1.584963
    assert got["ndcg_any@5"] == pytest.approx((1 / 1.584963) / ideal, abs=1e-6)
    assert got["ndcg_any@10"] == pytest.approx((1 / 1.584963 + 1 / 3) / ideal, abs=1e-6)


def test_select_skips_abstention_and_assistant_only_questions_and_caps_each_type() -> None:
    entries = [
        entry("a"),
        entry("b_abs"),
        entry("c", haystack_session_ids=["n", "m", "answer_x"]),
        entry("d"),
        entry("e", question_type="temporal-reasoning"),
    ]
    chosen, skipped = longmemeval.select(entries, per_type=1)
    assert [e["question_id"] for e in chosen] == ["a", "e"]
    assert skipped == {"abstention": 1, "no_user_side_evidence": 1}
    chosen, _ = longmemeval.select(entries, limit=2)
    assert [e["question_id"] for e in chosen] == ["a"]


def test_run_on_a_gzipped_sample(tmp_path: Path) -> None:
    data = tmp_path / "sample.json.gz"
    data.write_bytes(gzip.compress(json.dumps([entry(), entry("z_abs")]).encode()))
    result = longmemeval.run(data, ["bm25"], embedder=HashEmbedder())["bm25"]
    assert result["n_questions"] == 1
    assert result["skipped"] == {"abstention": 1}
    assert result["turns_stored"] == 4
    assert result["metrics"]["recall_all@5"] == {"overall": 1.0, "multi-session": 1.0}
    assert result["metrics"]["ndcg_any@5"]["overall"] == 1.0
