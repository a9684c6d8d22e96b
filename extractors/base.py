"""The shapes every extractor returns, so the store can merge spaCy, rules and LLM output alike.

Entities are keyed by `norm` (see `normalise`): two mentions that differ only in case, article
or plural ending become one node. Facts refer to entities by that key, never by surface text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from .normalise import normalise

__all__ = [
    "LABELS",
    "ExtractedEntity",
    "ExtractedFact",
    "Extraction",
    "ExtractionError",
    "Extractor",
    "normalise",
]

LABELS = frozenset(
    {
        "service",
        "package",
        "identifier",
        "version",
        "ticket",
        "path",
        "url",
        "env_var",
        "http_status",
        "person",
        "org",
        "place",
        "date",
        "product",
        "event",
        "concept",
    }
)


class ExtractionError(Exception):
    """An extractor could not run at all (an endpoint unreachable after its retries)."""


class ExtractedEntity(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    norm: str
    label: str


class ExtractedFact(BaseModel):
    model_config = ConfigDict(frozen=True)

    subject: str
    predicate: str
    object: str
    text: str
    confidence: float = Field(ge=0.0, le=1.0)


class Extraction(BaseModel):
    entities: list[ExtractedEntity] = Field(default_factory=list)
    facts: list[ExtractedFact] = Field(default_factory=list)
    extractor: str


class Extractor(Protocol):
    name: str

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        """One `Extraction` per text, in order; implementations batch internally."""
        ...
