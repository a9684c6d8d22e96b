"""The keyword analyzer: digits survive indexing, stopwords do not become query terms."""

from __future__ import annotations

from datetime import datetime

import pytest

from graphmem.text import content_terms, ends_asking, index_text, query_text, tokens


def test_tokens_encode_digits_so_the_index_keeps_them() -> None:
    for text in ("v2", "#47", "502", "PAY-123", "k8s"):
        found = tokens(text)
        assert found, text
        assert not any(ch.isdigit() for token in found for ch in token), found


def test_different_numbers_get_different_tokens() -> None:
    assert tokens("502") != tokens("503")
    assert tokens("v2") != tokens("v3")
    assert tokens("#47") == tokens("47")


def test_compound_keeps_its_joined_form_and_its_parts() -> None:
    joined = tokens("PAY-123")
    assert tokens("pay123")[0] in joined
    assert "pay" in joined
    assert tokens("123")[0] in joined


def test_tokens_are_lowercased_and_drop_one_letter_words() -> None:
    assert tokens("Deploy A Service") == ["deploy", "service"]


def test_content_terms_drop_stopwords_and_repeats() -> None:
    assert content_terms("Why did the v2 gateway return 502 for the gateway?") == [
        *tokens("v2"),
        "gateway",
        "return",
        *tokens("502"),
    ]


def test_content_terms_of_only_stopwords_is_empty() -> None:
    assert content_terms("what is it and why") == []


def test_index_text_spells_the_date_as_words() -> None:
    text = index_text("deploy", when=datetime(2022, 5, 25, 15, 0)).split()
    assert "may" in text
    assert "wednesday" in text
    assert tokens("2022")[0] in text
    assert tokens("25")[0] in text


def test_index_text_counts_the_title_twice_and_includes_tags() -> None:
    text = index_text("body", title="Kuzu", tags=["storage"], service="orders").split()
    assert text.count("kuzu") == 2
    assert "storage" in text
    assert "orders" in text


def test_query_text_uses_the_same_analyzer_as_the_index() -> None:
    assert query_text("Migration #47") == " ".join(tokens("Migration #47"))


@pytest.mark.parametrize(
    ("text", "asking"),
    [
        ("Caroline: What's your best camping memory?", True),
        ("Mel: Did you go? [shares an image: a photo of a lake]", True),
        ("Is the cache warm (after the deploy)?", True),
        ("We rolled back. Why did it fail? Nobody knows yet.", False),
        ("Rolled back the deploy (see PAY-123)", False),
        ("", False),
    ],
)
def test_ends_asking_reads_the_last_sentence_past_bracketed_notes(text: str, asking: bool) -> None:
    assert ends_asking(text) is asking
