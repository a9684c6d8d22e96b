"""Golden sentences through the default extractor: spaCy's small model plus engineering patterns.

Versioned names: "PostgreSQL 16" gives the package "postgresql" and the version
"postgresql 16"; facts about it point at the package, so "uses PostgreSQL 16" and
"uses PostgreSQL" land on the same node.
"""

from __future__ import annotations

import functools
import subprocess
import sys

import pytest
import spacy
from extraction_checks import (
    SHARED_GOLDEN,
    assert_chat_turns_name_people_not_greetings,
    assert_well_formed,
    labels,
    triples,
)
from graphmem.extractors import Extraction, get_extractor
from graphmem.extractors.parsed_entities import needs_ner
from graphmem.extractors.patterns import find_patterns
from graphmem.extractors.spacy_extractor import MODEL_NAMES, SpacyExtractor, installed_model
from graphmem.extractors.tagging import set_coarse_tags
from spacy.language import Language

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
        {("api", "return", "http 502")},
    ),
    (
        "Caroline went to the LGBTQ support group yesterday and it was powerful.",
        {
            "caroline": "person",
            "lgbtq": "concept",
            "lgbtq support group": "concept",
            "yesterday": "date",
        },
        {("caroline", "go_to", "lgbtq support group")},
    ),
    (
        "The old cron job was replaced by the scheduler-worker.",
        {"old cron job": "concept", "scheduler-worker": "service"},
        {("scheduler-worker", "replaced", "old cron job")},
    ),
    (
        "We mitigated the outage with a feature flag.",
        {"outage": "concept", "feature flag": "concept"},
        {("outage", "mitigated_by", "feature flag")},
    ),
    (
        "Our CI is blocked by the flaky test in src/app/test_main.py.",
        {"ci": "concept", "flaky test": "concept", "src/app/test_main.py": "path"},
        {("ci", "blocked_by", "flaky test")},
    ),
    (
        "The payments team owns the ledger-api.",
        {"payments team": "concept", "ledger-api": "service"},
        {("ledger-api", "owned_by", "payments team")},
    ),
]


@pytest.fixture(scope="module")
def golden(model_extractor: SpacyExtractor) -> list[Extraction]:
    return model_extractor.extract([text for text, _, _ in GOLDEN])


@pytest.mark.parametrize("case", range(len(GOLDEN)), ids=[t[:40] for t, _, _ in GOLDEN])
def test_golden_sentence_gives_exactly_the_expected_entities_and_facts(
    golden: list[Extraction], case: int
) -> None:
    _, expected_labels, expected_facts = GOLDEN[case]
    extraction = golden[case]
    assert labels(extraction) == expected_labels
    assert triples(extraction) == expected_facts
    assert_well_formed(extraction)


def test_canonical_patterns_are_more_confident_than_generic_verbs(
    golden: list[Extraction],
) -> None:
    canonical = {f.confidence for e in golden for f in e.facts if f.predicate == "depends_on"}
    generic = {f.confidence for e in golden for f in e.facts if f.predicate == "go_to"}
    assert canonical == {0.8}
    assert generic == {0.5}


def test_facts_carry_the_sentence_they_came_from(model_extractor: SpacyExtractor) -> None:
    text = "Deploys were slow on Monday. The checkout-worker depends on Kafka."
    [extraction] = model_extractor.extract([text])
    [fact] = extraction.facts
    assert fact.text == "The checkout-worker depends on Kafka."


@pytest.mark.parametrize("text", ["JWT tokens expire after 15 minutes.", "We rotated the JWTs."])
def test_jwt_spellings_share_one_entity(model_extractor: SpacyExtractor, text: str) -> None:
    [extraction] = model_extractor.extract([text])
    assert "jwt" in labels(extraction)


def test_a_phrase_around_an_acronym_is_kept_beside_it(model_extractor: SpacyExtractor) -> None:
    [extraction] = model_extractor.extract(["JWT tokens expire after 15 minutes."])
    assert {"jwt", "jwt token"} <= set(labels(extraction))


def test_a_name_never_runs_across_a_line_break(model_extractor: SpacyExtractor) -> None:
    """A note whose first line is its title, repeated by the text under it: the tagger read
    "Blood Street\nBlood Street" as one name, and the title's entity was lost."""
    text = "Blood Street\nBlood Street is a 1988 American action film directed by Leo Fong."
    [extraction] = model_extractor.extract([text])
    names = [e.name for e in extraction.entities]
    assert "Blood Street" in names and "Leo Fong" in names
    assert not any("\n" in name for name in names)


def test_engineering_patterns_outrank_the_statistical_ner(
    model_extractor: SpacyExtractor,
) -> None:
    # the small model reads "Redis" as a PERSON and "PostgreSQL 16" as a DATE
    [extraction] = model_extractor.extract(["Redis talks to PostgreSQL 16 via PgBouncer."])
    found = labels(extraction)
    assert found["redis"] == "package"
    assert found["postgresql 16"] == "version"
    assert found["pgbouncer"] == "identifier"


def test_a_quoted_title_outranks_the_statistical_ner(model_extractor: SpacyExtractor) -> None:
    # the small model reads "Alchemist" as an ORG and "Charlotte" as a GPE
    texts = [
        'John: I recently finished rereading "The Alchemist" - it was really inspiring.',
        'Tim: I loved reading "Charlotte\'s Web" as a kid.',
    ]
    first, second = model_extractor.extract(texts)
    assert labels(first)["alchemist"] == "product"
    assert labels(second)["charlotte's web"] == "product" and "charlotte" not in labels(second)


def test_pronouns_and_negated_verbs_give_no_facts(model_extractor: SpacyExtractor) -> None:
    fixed, negated = model_extractor.extract(
        ["We fixed it yesterday.", "The billing-service does not use Redis."]
    )
    assert triples(fixed) == set()
    assert not {"we", "it"} & set(labels(fixed))
    assert triples(negated) == set()
    assert labels(negated) == {"billing-service": "service", "redis": "package"}


def test_passive_voice_gives_the_same_fact_as_active(model_extractor: SpacyExtractor) -> None:
    active, passive = model_extractor.extract(
        ["The deploy broke the checkout flow.", "The checkout flow was broken by the deploy."]
    )
    assert triples(active) == triples(passive) == {("deploy", "broke", "checkout flow")}


def test_a_coordinated_verb_inherits_a_passive_subject(model_extractor: SpacyExtractor) -> None:
    [extraction] = model_extractor.extract(
        ["The notifications service was deployed to the eu-west-1 cluster and uses Kafka."]
    )
    assert triples(extraction) == {
        ("notifications service", "deployed_to", "eu-west-1 cluster"),
        ("notifications service", "uses", "kafka"),
    }


def test_one_extraction_per_text_in_order(model_extractor: SpacyExtractor) -> None:
    texts = ["Kafka replaced RabbitMQ.", "", "The auth-api uses Redis."]
    batch = model_extractor.extract(texts)
    assert [len(e.entities) for e in batch] == [2, 0, 2]
    assert batch == [model_extractor.extract([t])[0] for t in texts]
    assert model_extractor.extract([]) == []


def test_the_extractor_names_the_model_and_version(model_extractor: SpacyExtractor) -> None:
    assert model_extractor.name.startswith("spacy:en_core_web_sm")
    assert model_extractor.name.endswith("-3.8.0")
    [extraction] = model_extractor.extract(["Redis is fast."])
    assert extraction.extractor == model_extractor.name


def test_worker_processes_give_the_same_extractions(model_extractor: SpacyExtractor) -> None:
    texts = [text for text, _, _ in GOLDEN]
    pooled = SpacyExtractor(workers=2, pool_threshold=len(texts))
    try:
        assert pooled.extract(texts) == model_extractor.extract(texts)
        assert pooled._pool is not None, "the batch went to the workers"
    finally:
        pooled.close()


def test_an_unknown_extractor_name_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"unknown extractor 'gpt'.*spacy, rules, llm"):
        get_extractor("gpt")


def test_importing_the_package_loads_neither_spacy_nor_httpx() -> None:
    code = "import sys, graphmem.extractors; print('spacy' in sys.modules, 'httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_i_in_a_chat_turn_is_the_speaker(model_extractor: SpacyExtractor) -> None:
    turn, note = model_extractor.extract(
        [
            "Caroline: I went to the LGBTQ support group yesterday.",
            "Note: I rolled back the billing-service.",
        ]
    )
    assert triples(turn) == {("caroline", "go_to", "lgbtq support group")}
    assert labels(turn)["caroline"] == "person"
    assert triples(note) == set()
    assert "note" not in {norm for norm, label in labels(note).items() if label == "person"}


def test_an_unknown_verb_gets_a_plausible_lemma(model_extractor: SpacyExtractor) -> None:
    [extraction] = model_extractor.extract(["The ledger-api deadlocked the payments-db-primary."])
    assert triples(extraction) == {("ledger-api", "deadlock", "payments-db-primary")}


@pytest.mark.parametrize(
    ("text", "needed"),
    [
        ("payments leaked connections after release 3.4 (TICKET-12); we raised DNS TTLs.", False),
        ("Deploys were slow and the billing-service depends on Redis.", False),
        ("Caroline went to the support group.", True),
        ("The billing-service moved to Frankfurt.", True),
        ("redis timed out yesterday", True),
        ("the cron job runs at 3pm", True),
    ],
)
def test_the_ner_runs_only_where_it_could_add_a_label(text: str, needed: bool) -> None:
    model = installed_model(MODEL_NAMES)
    if model is None:
        pytest.skip("no spaCy English model installed")
    nlp = _parser(model)
    doc = nlp(text)
    set_coarse_tags(doc)
    assert needs_ner(doc, find_patterns(text)) is needed


@functools.cache
def _parser(model: str) -> Language:
    return spacy.load(model, disable=["ner", "attribute_ruler", "lemmatizer"])


def test_places_and_organisations_still_get_their_labels(model_extractor: SpacyExtractor) -> None:
    [extraction] = model_extractor.extract(["Melanie painted a sunrise last year in Paris."])
    assert labels(extraction) == {
        "melanie": "person",
        "sunrise": "concept",
        "last year": "date",
        "paris": "place",
    }


def test_chat_greetings_and_the_speakers_colon_name_nothing(
    model_extractor: SpacyExtractor,
) -> None:
    assert_chat_turns_name_people_not_greetings(model_extractor)


def test_a_possessive_names_its_owner_and_the_owned_thing_apart(
    model_extractor: SpacyExtractor,
) -> None:
    [x] = model_extractor.extract(["sqlc's prepared statements fail behind pgbouncer."])

    assert {"sqlc", "prepared statement"} <= set(labels(x))
    assert not [norm for norm in labels(x) if "'s" in norm]
    assert ("sqlc", "has", "prepared statement") in triples(x)
    assert_well_formed(x)


@pytest.mark.parametrize(
    "turn",
    [
        "Gina: That is really great Jon! Keep going.",
        "Gina: Absolutely Jon, keep going.",
        "Joanna: Sure thing Jon! I will send it.",
        "Joanna: Yo Jon, been a wild week!",
    ],
)
def test_a_greeting_or_adjective_before_a_name_is_not_part_of_it(
    model_extractor: SpacyExtractor, turn: str
) -> None:
    [x] = model_extractor.extract([turn])

    assert "jon" in labels(x)
    assert not [norm for norm in labels(x) if norm.endswith(" jon")]


def test_a_capitalised_adjective_inside_a_sentence_stays_in_the_name(
    model_extractor: SpacyExtractor,
) -> None:
    [x] = model_extractor.extract(["The ferry crossed the Irish Sea at night."])

    assert "irish sea" in labels(x)
