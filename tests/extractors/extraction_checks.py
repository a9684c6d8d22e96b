"""Assertions shared by the extractor tests."""

from __future__ import annotations

from graphmem.extractors import Extraction, Extractor, normalise

Triple = tuple[str, str, str]


def triples(extraction: Extraction) -> set[Triple]:
    return {(f.subject, f.predicate, f.object) for f in extraction.facts}


def labels(extraction: Extraction) -> dict[str, str]:
    return {e.norm: e.label for e in extraction.entities}


def assert_well_formed(extraction: Extraction) -> None:
    """The contract every extractor keeps, whatever it found."""
    norms = [e.norm for e in extraction.entities]
    assert len(norms) == len(set(norms)), "one entity per norm"
    assert all(e.norm == normalise(e.name) for e in extraction.entities)
    keys = [(f.subject, f.predicate, f.object) for f in extraction.facts]
    assert len(keys) == len(set(keys)), "one fact per triple"
    for fact in extraction.facts:
        assert fact.subject in norms and fact.object in norms, fact
        assert 0.0 <= fact.confidence <= 1.0
        assert fact.predicate == fact.predicate.lower() and " " not in fact.predicate


# sentences both the model and the rules alone must get exactly right
SHARED_GOLDEN: list[tuple[str, dict[str, str], set[tuple[str, str, str]]]] = [
    (
        "The billing-service depends on Redis and uses PostgreSQL 16.",
        {
            "billing-service": "service",
            "redis": "package",
            "postgresql": "package",
            "postgresql 16": "version",
        },
        {("billing-service", "depends_on", "redis"), ("billing-service", "uses", "postgresql")},
    ),
    (
        "The billing migration caused an index lock on PAY-123.",
        {"billing migration": "concept", "index lock": "concept", "pay-123": "ticket"},
        {("billing migration", "caused", "index lock")},
    ),
    (
        "The index lock was mitigated by the rollback runbook.",
        {"index lock": "concept", "rollback runbook": "concept"},
        {("index lock", "mitigated_by", "rollback runbook")},
    ),
    (
        "We migrated the auth service from MySQL to PostgreSQL.",
        {"auth service": "service", "mysql": "package", "postgresql": "package"},
        {
            ("auth service", "migrated_from", "mysql"),
            ("auth service", "migrated_to", "postgresql"),
        },
    ),
]


# chat turns: greetings, thanks and the speaker's colon name nothing
CHAT_TURNS = [
    ("Tim: Hey John, how are you?", {"tim", "john"}),
    ("Tim: Woohoo, congrats on the new team!", {"tim", "new team"}),
    ("John: Thanks! I'm excited.", {"john"}),
    ("Maria: Sorry to hear that, John. Is there anything on your mind?", {"maria", "john", "mind"}),
]


def assert_chat_turns_name_people_not_greetings(extractor: Extractor) -> None:
    extractions = extractor.extract([text for text, _ in CHAT_TURNS])
    assert [set(labels(x)) for x in extractions] == [names for _, names in CHAT_TURNS]
    assert not [e.name for x in extractions for e in x.entities if ":" in e.name]
