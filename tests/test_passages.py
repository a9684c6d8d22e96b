"""Passages: the sentences of a memory that recall scores on their own."""

from __future__ import annotations

import pytest

from graphmem.passages import MAX_PASSAGES, owner, passage_ids, passages


@pytest.mark.parametrize(
    "text",
    [
        "Deploys go through ArgoCD; never kubectl apply to production by hand.",
        "Release 3.4: caused by a stale cache (TICKET-9).",
        "OK. Rolled back.",  # one piece is too short to say anything alone
        "",
    ],
)
def test_one_sentence_has_no_passages(text: str) -> None:
    assert passages(text) == []


def test_sentences_and_lines_become_passages() -> None:
    text = (
        "Can you suggest podcasts for my commute? By the way, I submitted my thesis today.\n- item"
    )
    assert passages(text) == [
        "Can you suggest podcasts for my commute?",
        "By the way, I submitted my thesis today.",
        "- item",
    ]


def test_a_turns_speaker_is_left_out_of_its_passages() -> None:
    text = "Caroline: I went to a pride parade last week. It was so inspiring!"
    assert passages(text) == ["I went to a pride parade last week.", "It was so inspiring!"]


def test_a_long_memory_is_grouped_into_at_most_max_passages_keeping_every_sentence() -> None:
    sentences = [f"Step {n} restarts worker number {n}." for n in range(40)]
    found = passages(" ".join(sentences))
    assert len(found) <= MAX_PASSAGES
    assert " ".join(found) == " ".join(sentences)


def test_passage_ids_name_their_memory_even_when_its_id_has_the_separator() -> None:
    ids = passage_ids("team#notes:1", 3)
    assert ids == ["team#notes:1#0", "team#notes:1#1", "team#notes:1#2"]
    assert {owner(i) for i in ids} == {"team#notes:1"}
