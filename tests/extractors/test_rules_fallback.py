"""Golden sentences without a statistical model: patterns, phrases and verb patterns only."""

from __future__ import annotations

import pytest
from extraction_checks import (
    SHARED_GOLDEN,
    assert_chat_turns_name_people_not_greetings,
    assert_well_formed,
    labels,
    triples,
)
from graphmem.extractors import Extraction, get_extractor
from graphmem.extractors.spacy_extractor import SpacyExtractor

GOLDEN: list[tuple[str, dict[str, str], set[tuple[str, str, str]]]] = [
    *SHARED_GOLDEN,
    (
        "Set DATABASE_URL in ./config/settings.yaml; the API returned HTTP 502.",
        {
            "database_url": "env_var",
            "./config/settings.yaml": "path",
            "api": "concept",
            "http 502": "http_status",
        },
        set(),
    ),
    (
        "Redis was replaced by Valkey in v2.1.3 (see #47).",
        {"redis": "package", "valkey": "package", "v2.1.3": "version", "#47": "ticket"},
        {("valkey", "replaced", "redis")},
    ),
    (
        "The ledger-api is owned by the payments team.",
        {"ledger-api": "service", "payments team": "concept"},
        {("ledger-api", "owned_by", "payments team")},
    ),
    (
        "We mitigated the outage with a feature flag.",
        {"outage": "concept", "feature flag": "concept"},
        {("outage", "mitigated_by", "feature flag")},
    ),
    (
        "Caroline: I went to the LGBTQ support group yesterday.",
        {"caroline": "person", "lgbtq": "concept", "lgbtq support group": "concept"},
        set(),
    ),
]


@pytest.fixture(scope="module")
def golden(rules_extractor: SpacyExtractor) -> list[Extraction]:
    return rules_extractor.extract([text for text, _, _ in GOLDEN])


@pytest.mark.parametrize("case", range(len(GOLDEN)), ids=[t[:40] for t, _, _ in GOLDEN])
def test_golden_sentence_without_a_model(golden: list[Extraction], case: int) -> None:
    _, expected_labels, expected_facts = GOLDEN[case]
    extraction = golden[case]
    assert labels(extraction) == expected_labels
    assert triples(extraction) == expected_facts
    assert_well_formed(extraction)
    assert {f.confidence for f in extraction.facts} <= {0.6}


def test_rules_extractor_never_loads_a_model(rules_extractor: SpacyExtractor) -> None:
    assert rules_extractor.name == "rules"
    assert not rules_extractor.uses_model
    [extraction] = rules_extractor.extract(["Kafka replaced RabbitMQ."])
    assert extraction.extractor == "rules"
    assert get_extractor("rules").name == "rules"


def test_a_missing_model_falls_back_to_rules(caplog: pytest.LogCaptureFixture) -> None:
    extractor = get_extractor("spacy", model="no_such_spacy_model_pkg")
    assert extractor.name == "rules"
    assert "not installed" in caplog.text
    [extraction] = extractor.extract(["The auth-api depends on Redis."])
    assert triples(extraction) == {("auth-api", "depends_on", "redis")}


def test_capitalised_runs_inside_a_sentence_are_entities(rules_extractor: SpacyExtractor) -> None:
    [extraction] = rules_extractor.extract(["We met Maria Lopez at Google Cloud Next."])
    assert {"maria lopez", "google cloud next"} <= set(labels(extraction))
    assert "we" not in labels(extraction)


def test_a_new_sentence_starts_a_new_subject(rules_extractor: SpacyExtractor) -> None:
    [extraction] = rules_extractor.extract(["The auth-api uses Redis. Kafka caused the lag."])
    assert triples(extraction) == {("auth-api", "uses", "redis"), ("kafka", "caused", "lag")}


@pytest.mark.parametrize(
    ("text", "works"),
    [
        ('Tim: Have you read "The Name of the Wind" by Patrick Rothfuss?', {"name of the wind"}),
        ("We watched \u201cLittle Women\u201d on Friday.", {"little women"}),
        ('The log said "connection refused by upstream" again.', set()),  # not title case
        ('John: I saw "That" twice!', set()),  # a lone pronoun is no title
    ],
)
def test_a_quoted_title_is_a_work(
    rules_extractor: SpacyExtractor, text: str, works: set[str]
) -> None:
    [extraction] = rules_extractor.extract([text])
    assert {norm for norm, label in labels(extraction).items() if label == "product"} == works


def test_chat_greetings_and_the_speakers_colon_name_nothing(
    rules_extractor: SpacyExtractor,
) -> None:
    assert_chat_turns_name_people_not_greetings(rules_extractor)
