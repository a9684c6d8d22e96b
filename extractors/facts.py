"""Fact bookkeeping shared by every extractor: predicate spelling and de-duplication."""

from __future__ import annotations

import re

from .base import ExtractedFact

CANONICAL = 0.8  # a verb pattern we know the meaning of ("depends on" -> depends_on)
GENERIC = 0.5  # any other subject-verb-object; the predicate is just the verb's lemma
RULES = 0.6  # a verb pattern matched by regex between two names, without a parse

_NON_WORD = re.compile(r"[^0-9a-z]+")
_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_case(predicate: str) -> str:
    """'Depends On', 'depends-on' and 'dependsOn' all become 'depends_on'."""
    spaced = _CAMEL_HUMP.sub("_", predicate.strip())
    return _NON_WORD.sub("_", spaced.casefold()).strip("_")


class FactTable:
    """Facts unique by (subject, predicate, object), first sentence and best confidence kept."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str, str], ExtractedFact] = {}

    def add(self, subject: str, predicate: str, obj: str, text: str, confidence: float) -> None:
        if not subject or not obj or not predicate or subject == obj:
            return
        key = (subject, predicate, obj)
        old = self._rows.get(key)
        if old is None or confidence > old.confidence:
            text = old.text if old else text.strip()
            self._rows[key] = ExtractedFact(
                subject=subject, predicate=predicate, object=obj, text=text, confidence=confidence
            )

    def facts(self) -> list[ExtractedFact]:
        return list(self._rows.values())
