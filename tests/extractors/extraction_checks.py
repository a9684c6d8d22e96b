"""Assertions shared by the extractor tests."""

from __future__ import annotations

from graphmem.extractors import Extraction, normalise

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
