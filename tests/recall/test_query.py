"""Reading a query: the dates it points at and the names it mentions."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from graphmem.recall.query import (
    DateSpan,
    asked_labels,
    asks_for_many,
    embedding_text,
    parse_dates,
    parse_names,
    parse_query,
    verb_lemmas,
)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("What did Nate do on 25 May, 2022?", datetime(2022, 5, 25), datetime(2022, 5, 26)),
        ("the outage of October 13, 2023", datetime(2023, 10, 13), datetime(2023, 10, 14)),
        ("on the 3rd of nothing, 1st Jan 2021", datetime(2021, 1, 1), datetime(2021, 1, 2)),
        ("what shipped in May 2023", datetime(2023, 5, 1), datetime(2023, 6, 1)),
        ("December 2023 freeze", datetime(2023, 12, 1), datetime(2024, 1, 1)),
        ("anything from 2022", datetime(2022, 1, 1), datetime(2023, 1, 1)),
        ("deploy of 2024-01-10", datetime(2024, 1, 10), datetime(2024, 1, 11)),
    ],
)
def test_parse_dates_finds_the_span_a_query_names(
    text: str, start: datetime, end: datetime
) -> None:
    assert parse_dates(text) == [DateSpan(start, end)]


def test_a_full_date_is_not_also_read_as_its_month_or_year() -> None:
    assert len(parse_dates("on 25 May, 2022")) == 1
    assert len(parse_dates("on 2024-01-10")) == 1


def test_text_without_dates_gives_no_span() -> None:
    assert parse_dates("why did token refresh break?") == []
    assert parse_dates("port 8080 and ticket 502") == []


def test_an_impossible_day_is_not_read_as_a_day() -> None:
    spans = parse_dates("2023-02-30")
    assert all(span.end - span.start > timedelta(days=1) for span in spans)


def test_date_span_distance_is_zero_inside_and_counts_days_outside() -> None:
    span = DateSpan(datetime(2022, 5, 25), datetime(2022, 5, 26))
    assert span.distance_days(datetime(2022, 5, 25, 23, 59)) == 0.0
    assert span.distance_days(datetime(2022, 5, 20)) == 5.0
    assert span.distance_days(datetime(2022, 5, 28)) == 2.0


def test_parse_names_finds_people_but_not_question_words_or_months() -> None:
    names = parse_names("What did Caroline tell Joanna in May? When did Caroline's talk end?")
    assert names == ["caroline", "joanna"]
    assert not {"what", "when", "may"} & set(names)


def test_parse_query_returns_names_and_dates_together() -> None:
    parsed = parse_query("What did Nate do for Joanna on 25 May, 2022?")
    assert parsed.names == ["nate", "joanna"]
    assert parsed.dates == [DateSpan(datetime(2022, 5, 25), datetime(2022, 5, 26))]


def _people() -> frozenset[str]:
    return frozenset({"caroline", "melanie"})


@pytest.mark.parametrize(
    ("query", "embedded"),
    [
        ("What did Caroline research?", "What did someone research?"),
        ("What is Caroline's identity?", "What is someone identity?"),
        ("Did Melanie paint with Caroline?", "Did someone paint with someone?"),
        ("Why did Postgres lock up for Caroline?", "Why did Postgres lock up for someone?"),
        ("Why did Postgres lock up?", "Why did Postgres lock up?"),
        ("Caroline?", "Caroline?"),  # nothing would be left to embed
    ],
)
def test_embedding_text_turns_speakers_into_someone_and_keeps_other_names(
    query: str, embedded: str
) -> None:
    assert embedding_text(query, _people) == embedded


def test_embedding_text_asks_for_speakers_only_when_the_query_names_someone() -> None:
    def fail() -> frozenset[str]:
        raise AssertionError("speakers looked up for a query without names")

    assert embedding_text("why did the deploy fail", fail) == "why did the deploy fail"


@pytest.mark.parametrize(
    ("question", "labels"),
    [
        ("Which cities has John visited?", ["place"]),
        ("Where did Caroline move from?", ["place"]),
        ("What books has Tim read?", ["product"]),
        ("Who did John go to yoga with?", ["person"]),
        ("What authors has Tim read books from?", ["product", "person"]),
        ("What does Melanie do to destress?", []),
    ],
)
def test_asked_labels_name_the_kind_of_thing_a_question_wants(
    question: str, labels: list[str]
) -> None:
    assert asked_labels(question) == labels


@pytest.mark.parametrize(
    ("question", "verbs"),
    [
        ("Which cities has Jon visited?", {"visit"}),
        ("What people has Maria met and helped while volunteering?", {"meet", "help", "volunteer"}),
        ("What movies have both Joanna and Nate seen?", {"see"}),
        ("What places has Joanna submitted her work to?", {"submit", "work"}),
        ("What did Melanie like?", {"like"}),
    ],
)
def test_verb_lemmas_give_the_base_forms_fact_predicates_use(
    question: str, verbs: set[str]
) -> None:
    names = set(parse_names(question))
    forms = verb_lemmas(question, names)
    assert verbs <= set(forms)
    assert not names & set(forms)  # the people are no verbs
    assert not {"have", "do", "did", "has"} & set(forms)


@pytest.mark.parametrize(
    ("question", "many"),
    [
        ("Which cities has John visited?", True),
        ("What are Joanna's hobbies?", True),
        ("What musical artists/bands has Melanie seen?", True),
        ("What do both Joanna and Nate like?", True),
        ("How many children does Melanie have?", True),
        ("What services did the migration break?", True),
        ("How many weeks ago did I attend the sale?", False),  # a span of time, not a count
        ("What motivates Joanna to keep writing?", False),  # the -s word is the verb
        ("What is Caroline's relationship status?", False),
        ("Which book did Tim read in May?", False),
        ("Why did the deploy fail?", False),
        ("", False),
    ],
)
def test_asks_for_many_tells_list_questions_from_single_answers(question: str, many: bool) -> None:
    assert asks_for_many(question) is many
    assert parse_query(question).many is many
