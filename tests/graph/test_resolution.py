"""Entity resolution as a user sees it in `graphmem entities`: one entity per thing however the
notes spell it, two entities for two things however alike their names. Notes go through the real
extractor (spaCy, or its rules when the model is missing) and the `index-triples` backfill."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from graphmem.extractors import ExtractedEntity, Extraction, normalise
from graphmem.extractors.spacy_extractor import MODEL_NAMES, installed_model

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.graph.indexer import TripleIndexer
from graphmem.graph.resolution import ResolutionRules
from graphmem.service import GraphMemory
from graphmem.settings import load_settings

needs_model = pytest.mark.skipif(
    installed_model(MODEL_NAMES) is None, reason="no spaCy English model installed"
)


@pytest.fixture
def gm(tmp_path: Path) -> Iterator[GraphMemory]:
    """A store whose notes wait for the `index-triples` backfill, as a one-shot command's do."""
    settings = load_settings(tmp_path / "store", environ={}, overrides={"extract_on_write": False})
    memory = GraphMemory(settings, embedder=HashEmbedder(), extract_in_background=False)
    yield memory
    memory.close()


def _index(gm: GraphMemory, *notes: str, batch_size: int = 256) -> None:
    gm.remember_many([{"content": note} for note in notes])
    gm.index_triples(batch_size=batch_size)


def _entity(gm: GraphMemory, name: str) -> str | None:
    """The entity a name resolves to, as a later note naming it would find it."""
    norm = normalise(name)
    return gm.store.resolve_norms([norm]).get(norm)


def _memories_naming(gm: GraphMemory, entity: str) -> int:
    return next(e.mentions for e in gm.list_entities(limit=500).entities if e.id == entity)


LEDGER = (
    "The ledger-worker service reads jobs from the ledger queue.",
    "Restart the ledger-worker after every deploy.",
)


@pytest.mark.parametrize("batch_size", [1, 256], ids=["one note a batch", "one batch"])
@pytest.mark.parametrize("notes", [LEDGER, LEDGER[::-1]], ids=["long form first", "name first"])
def test_a_service_noun_after_a_name_is_that_service(
    gm: GraphMemory, notes: Sequence[str], batch_size: int
) -> None:
    _index(gm, *notes, batch_size=batch_size)

    worker = _entity(gm, "ledger-worker")
    assert worker is not None and _entity(gm, "ledger-worker service") == worker
    assert _memories_naming(gm, worker) == 2


def test_a_mode_of_a_tool_is_not_the_tool(gm: GraphMemory) -> None:
    _index(
        gm,
        "pgbouncer sits in front of Postgres.",
        "Session mode needs more connections than the pgbouncer transaction mode.",
    )

    assert _entity(gm, "pgbouncer") not in (None, _entity(gm, "pgbouncer transaction mode"))


@needs_model
def test_a_possessive_names_the_owned_thing_and_links_it_to_its_owner(gm: GraphMemory) -> None:
    _index(
        gm,
        "sqlc's prepared statements do not survive pgbouncer.",
        "We turned off prepared statements for the ledger-worker.",
    )

    statement = _entity(gm, "prepared statements")
    assert statement is not None and _memories_naming(gm, statement) == 2
    assert not [e.id for e in gm.list_entities(limit=500).entities if "'s" in e.id]
    sqlc = _entity(gm, "sqlc")
    assert sqlc is not None
    assert (sqlc, "has", statement) in {f[:3] for f in gm.store.facts_between([sqlc])}


def test_an_app_built_with_a_framework_is_not_the_framework(gm: GraphMemory) -> None:
    _index(gm, "We upgraded Rails last week.", "The Rails app in billing boots slowly.")

    assert _entity(gm, "Rails") not in (None, _entity(gm, "Rails app"))


def test_the_daemon_of_a_tool_is_the_tool(gm: GraphMemory) -> None:
    _index(gm, "Give the scanner access to the Docker daemon.", "Docker restarts the containers.")

    assert _entity(gm, "Docker") is not None
    assert _entity(gm, "Docker daemon") == _entity(gm, "Docker")


def test_spellings_of_one_service_are_one_entity_but_its_code_name_is_another(
    gm: GraphMemory,
) -> None:
    _index(
        gm,
        "We restarted the publishing-api app twice.",
        "Editions are sent to PublishingAPI after review.",
        "Run rake publishing_api:republish in whitehall to send it again.",
    )

    service = _entity(gm, "publishing-api")
    assert service is not None
    assert _entity(gm, "PublishingAPI") == _entity(gm, "publishing-api app") == service
    assert _entity(gm, "publishing_api") not in (None, service)


@needs_model
def test_a_short_form_of_a_first_name_is_that_person(gm: GraphMemory) -> None:
    _index(
        gm,
        "Melanie: Hey Caroline! I painted a lake at sunrise last week.",
        "Caroline: That sounds lovely, Mel! I went to a support group yesterday.",
    )

    melanie = _entity(gm, "Melanie")
    assert melanie is not None and _entity(gm, "Mel") == melanie


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


def _resolve(gm: GraphMemory, rules: ResolutionRules, *names: list[tuple[str, str]]) -> None:
    indexer = TripleIndexer(gm.store, Given(*names), HashEmbedder().embed, rules)
    for i in range(len(names)):
        indexer.index([(f"text-{i}", f"text {i}")], chunks=True)


def test_several_apps_of_a_name_are_not_the_name(gm: GraphMemory) -> None:
    _resolve(
        gm, ResolutionRules(), [("GOV.UK", "identifier")], [("GOV.UK applications", "concept")]
    )

    assert _entity(gm, "GOV.UK applications") != _entity(gm, "GOV.UK")


def test_a_plain_word_before_a_kind_noun_is_not_taken_for_a_name(gm: GraphMemory) -> None:
    _resolve(gm, ResolutionRules(), [("backend", "concept")], [("backend service", "concept")])

    assert _entity(gm, "backend service") != _entity(gm, "backend")


def test_a_short_name_two_people_share_joins_neither(gm: GraphMemory) -> None:
    _resolve(
        gm,
        ResolutionRules(),
        [("Melanie", "person"), ("Melissa", "person")],
        [("Mel", "person")],
    )

    assert _entity(gm, "Mel") not in (_entity(gm, "Melanie"), _entity(gm, "Melissa"))


PLURALS = (
    [("payments-dashboard", "identifier"), ("RetryPolicy", "identifier")],
    [("payments-dashboards", "identifier"), ("RetryPolicies", "identifier")],
    [("Postgres Replicas", "concept"), ("Postgres replica", "concept")],
)


@pytest.mark.parametrize("names", [PLURALS, PLURALS[::-1]], ids=["singular first", "plural first"])
def test_a_plural_code_name_or_title_case_name_is_its_singular(
    gm: GraphMemory, names: Sequence[list[tuple[str, str]]]
) -> None:
    _resolve(gm, ResolutionRules(), *names)

    assert _entity(gm, "payments-dashboard") is not None
    assert _entity(gm, "payments-dashboards") == _entity(gm, "payments-dashboard")
    assert _entity(gm, "RetryPolicies") == _entity(gm, "RetryPolicy")
    assert _entity(gm, "Postgres Replicas") == _entity(gm, "Postgres replica")


def test_a_camel_case_field_is_not_the_thing_it_is_named_after(gm: GraphMemory) -> None:
    _resolve(
        gm,
        ResolutionRules(),
        [("retry-policy", "identifier")],
        [("retryPolicy", "identifier"), ("retryPolicies", "identifier")],
    )

    policy = _entity(gm, "retry-policy")
    assert policy is not None
    assert _entity(gm, "retryPolicy") not in (None, policy)
    assert _entity(gm, "retryPolicies") not in (None, policy)


VENDOR = (
    [("Kinesis", "product"), ("BigQuery", "product")],
    [("Amazon Kinesis", "product"), ("Google BigQuery", "product")],
)


@pytest.mark.parametrize("names", [VENDOR, VENDOR[::-1]], ids=["name first", "vendor first"])
def test_a_cloud_vendor_before_a_name_is_that_name(
    gm: GraphMemory, names: Sequence[list[tuple[str, str]]]
) -> None:
    _resolve(gm, ResolutionRules(), *names)

    assert _entity(gm, "Kinesis") is not None
    assert _entity(gm, "Amazon Kinesis") == _entity(gm, "Kinesis")
    assert _entity(gm, "Google BigQuery") == _entity(gm, "BigQuery")


def test_a_vendor_before_a_plain_word_is_another_thing(gm: GraphMemory) -> None:
    _resolve(
        gm,
        ResolutionRules(),
        [("billing", "concept"), ("DOCS", "concept")],
        [("AWS billing", "concept"), ("Google Docs", "product")],
    )

    assert _entity(gm, "AWS billing") not in (None, _entity(gm, "billing"))
    assert _entity(gm, "Google Docs") not in (None, _entity(gm, "DOCS"))


def test_each_rule_can_be_turned_off(gm: GraphMemory) -> None:
    off = ResolutionRules(kind_nouns=False, nickname_letters=0, plurals=False, vendors=False)
    _resolve(
        gm,
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

    assert _entity(gm, "ledger-worker service") != _entity(gm, "ledger-worker")
    assert _entity(gm, "Mel") != _entity(gm, "Melanie")
    assert _entity(gm, "payments-dashboards") != _entity(gm, "payments-dashboard")
    assert _entity(gm, "Kinesis") != _entity(gm, "Amazon Kinesis")
