"""Entity resolution as a user sees it in `graphmem entities`: one entity per thing however the
notes spell it, two entities for two things however alike their names. Notes go through the real
extractor (spaCy, or its rules when the model is missing) and the `index-triples` backfill."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from graphmem.extractors import ExtractedEntity, Extraction, normalise
from graphmem.extractors.spacy_extractor import MODEL_NAMES, installed_model

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.graph.indexer import TripleIndexer
from graphmem.graph.resolution import ResolutionRules
from graphmem.service import GraphMemory

needs_model = pytest.mark.skipif(
    installed_model(MODEL_NAMES) is None, reason="no spaCy English model installed"
)


def _index(oneshot: GraphMemory, *notes: str, batch_size: int = 256) -> None:
    oneshot.remember_many([{"content": note} for note in notes])
    oneshot.index_triples(batch_size=batch_size)


def _entity(oneshot: GraphMemory, name: str) -> str | None:
    """The entity a name resolves to, as a later note naming it would find it."""
    norm = normalise(name)
    return oneshot.store.entities.resolve_norms([norm]).get(norm)


def _memories_naming(oneshot: GraphMemory, entity: str) -> int:
    return next(e.mentions for e in oneshot.list_entities(limit=500).entities if e.id == entity)


LEDGER = (
    "The ledger-worker service reads jobs from the ledger queue.",
    "Restart the ledger-worker after every deploy.",
)


@pytest.mark.parametrize("batch_size", [1, 256], ids=["one note a batch", "one batch"])
@pytest.mark.parametrize("notes", [LEDGER, LEDGER[::-1]], ids=["long form first", "name first"])
def test_a_service_noun_after_a_name_is_that_service(
    oneshot: GraphMemory, notes: Sequence[str], batch_size: int
) -> None:
    _index(oneshot, *notes, batch_size=batch_size)

    worker = _entity(oneshot, "ledger-worker")
    assert worker is not None and _entity(oneshot, "ledger-worker service") == worker
    assert _memories_naming(oneshot, worker) == 2


def test_a_mode_of_a_tool_is_not_the_tool(oneshot: GraphMemory) -> None:
    _index(
        oneshot,
        "pgbouncer sits in front of Postgres.",
        "Session mode needs more connections than the pgbouncer transaction mode.",
    )

    assert _entity(oneshot, "pgbouncer") not in (
        None,
        _entity(oneshot, "pgbouncer transaction mode"),
    )


@needs_model
def test_a_possessive_names_the_owned_thing_and_links_it_to_its_owner(oneshot: GraphMemory) -> None:
    _index(
        oneshot,
        "sqlc's prepared statements do not survive pgbouncer.",
        "We turned off prepared statements for the ledger-worker.",
    )

    statement = _entity(oneshot, "prepared statements")
    assert statement is not None and _memories_naming(oneshot, statement) == 2
    assert not [e.id for e in oneshot.list_entities(limit=500).entities if "'s" in e.id]
    sqlc = _entity(oneshot, "sqlc")
    assert sqlc is not None
    assert (sqlc, "has", statement) in {f[:3] for f in oneshot.store.entities.facts_between([sqlc])}


def test_an_app_built_with_a_framework_is_not_the_framework(oneshot: GraphMemory) -> None:
    _index(oneshot, "We upgraded Rails last week.", "The Rails app in billing boots slowly.")

    assert _entity(oneshot, "Rails") not in (None, _entity(oneshot, "Rails app"))


def test_the_daemon_of_a_tool_is_the_tool(oneshot: GraphMemory) -> None:
    _index(
        oneshot, "Give the scanner access to the Docker daemon.", "Docker restarts the containers."
    )

    assert _entity(oneshot, "Docker") is not None
    assert _entity(oneshot, "Docker daemon") == _entity(oneshot, "Docker")


def test_spellings_of_one_service_are_one_entity_but_its_code_name_is_another(
    oneshot: GraphMemory,
) -> None:
    _index(
        oneshot,
        "We restarted the publishing-api app twice.",
        "Editions are sent to PublishingAPI after review.",
        "Run rake publishing_api:republish in whitehall to send it again.",
    )

    service = _entity(oneshot, "publishing-api")
    assert service is not None
    assert _entity(oneshot, "PublishingAPI") == _entity(oneshot, "publishing-api app") == service
    assert _entity(oneshot, "publishing_api") not in (None, service)


@needs_model
def test_a_short_form_of_a_first_name_is_that_person(oneshot: GraphMemory) -> None:
    _index(
        oneshot,
        "Melanie: Hey Caroline! I painted a lake at sunrise last week.",
        "Caroline: That sounds lovely, Mel! I went to a support group yesterday.",
    )

    melanie = _entity(oneshot, "Melanie")
    assert melanie is not None and _entity(oneshot, "Mel") == melanie


# -- the rules one at a time, on names given directly ----------------------------------------


class Given:
    """An extractor that returns the names it is given, one list a text."""

    name = "given"

    def __init__(self, *names: list[tuple[str, str]]) -> None:
        self.names = list(names)

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        out = []
        for _ in texts:
            found = self.names.pop(0)
            out.append(
                Extraction(
                    entities=[
                        ExtractedEntity(name=n, norm=normalise(n), label=label)
                        for n, label in found
                    ],
                    extractor=self.name,
                )
            )
        return out


def _resolve(oneshot: GraphMemory, rules: ResolutionRules, *names: list[tuple[str, str]]) -> None:
    indexer = TripleIndexer(oneshot.store, Given(*names), HashEmbedder().embed, rules)
    for i in range(len(names)):
        indexer.index([(f"text-{i}", f"text {i}")], chunks=True)


def test_several_apps_of_a_name_are_not_the_name(oneshot: GraphMemory) -> None:
    _resolve(
        oneshot, ResolutionRules(), [("GOV.UK", "identifier")], [("GOV.UK applications", "concept")]
    )

    assert _entity(oneshot, "GOV.UK applications") != _entity(oneshot, "GOV.UK")


def test_a_plain_word_before_a_kind_noun_is_not_taken_for_a_name(oneshot: GraphMemory) -> None:
    _resolve(oneshot, ResolutionRules(), [("backend", "concept")], [("backend service", "concept")])

    assert _entity(oneshot, "backend service") != _entity(oneshot, "backend")


def test_a_short_name_two_people_share_joins_neither(oneshot: GraphMemory) -> None:
    _resolve(
        oneshot,
        ResolutionRules(),
        [("Melanie", "person"), ("Melissa", "person")],
        [("Mel", "person")],
    )

    assert _entity(oneshot, "Mel") not in (_entity(oneshot, "Melanie"), _entity(oneshot, "Melissa"))


PLURALS = (
    [("payments-dashboard", "identifier"), ("RetryPolicy", "identifier")],
    [("payments-dashboards", "identifier"), ("RetryPolicies", "identifier")],
    [("Postgres Replicas", "concept"), ("Postgres replica", "concept")],
)


@pytest.mark.parametrize("names", [PLURALS, PLURALS[::-1]], ids=["singular first", "plural first"])
def test_a_plural_code_name_or_title_case_name_is_its_singular(
    oneshot: GraphMemory, names: Sequence[list[tuple[str, str]]]
) -> None:
    _resolve(oneshot, ResolutionRules(), *names)

    assert _entity(oneshot, "payments-dashboard") is not None
    assert _entity(oneshot, "payments-dashboards") == _entity(oneshot, "payments-dashboard")
    assert _entity(oneshot, "RetryPolicies") == _entity(oneshot, "RetryPolicy")
    assert _entity(oneshot, "Postgres Replicas") == _entity(oneshot, "Postgres replica")


def test_a_camel_case_field_is_not_the_thing_it_is_named_after(oneshot: GraphMemory) -> None:
    _resolve(
        oneshot,
        ResolutionRules(),
        [("retry-policy", "identifier")],
        [("retryPolicy", "identifier"), ("retryPolicies", "identifier")],
    )

    policy = _entity(oneshot, "retry-policy")
    assert policy is not None
    assert _entity(oneshot, "retryPolicy") not in (None, policy)
    assert _entity(oneshot, "retryPolicies") not in (None, policy)


VENDOR = (
    [("Kinesis", "product"), ("BigQuery", "product")],
    [("Amazon Kinesis", "product"), ("Google BigQuery", "product")],
)


@pytest.mark.parametrize("names", [VENDOR, VENDOR[::-1]], ids=["name first", "vendor first"])
def test_a_cloud_vendor_before_a_name_is_that_name(
    oneshot: GraphMemory, names: Sequence[list[tuple[str, str]]]
) -> None:
    _resolve(oneshot, ResolutionRules(), *names)

    assert _entity(oneshot, "Kinesis") is not None
    assert _entity(oneshot, "Amazon Kinesis") == _entity(oneshot, "Kinesis")
    assert _entity(oneshot, "Google BigQuery") == _entity(oneshot, "BigQuery")


def test_a_vendor_before_a_plain_word_is_another_thing(oneshot: GraphMemory) -> None:
    _resolve(
        oneshot,
        ResolutionRules(),
        [("billing", "concept"), ("DOCS", "concept")],
        [("AWS billing", "concept"), ("Google Docs", "product")],
    )

    assert _entity(oneshot, "AWS billing") not in (None, _entity(oneshot, "billing"))
    assert _entity(oneshot, "Google Docs") not in (None, _entity(oneshot, "DOCS"))


def test_each_rule_can_be_turned_off(oneshot: GraphMemory) -> None:
    off = ResolutionRules(kind_nouns=False, nickname_letters=0, plurals=False, vendors=False)
    _resolve(
        oneshot,
        off,
        [("ledger-worker", "service"), ("Melanie", "person"), ("payments-dashboard", "service")],
        [
            ("ledger-worker service", "service"),
            ("Mel", "person"),
            ("payments-dashboards", "service"),
            ("Amazon Kinesis", "product"),
        ],
        [("Kinesis", "product")],
    )

    assert _entity(oneshot, "ledger-worker service") != _entity(oneshot, "ledger-worker")
    assert _entity(oneshot, "Mel") != _entity(oneshot, "Melanie")
    assert _entity(oneshot, "payments-dashboards") != _entity(oneshot, "payments-dashboard")
    assert _entity(oneshot, "Kinesis") != _entity(oneshot, "Amazon Kinesis")
