"""Triple extractors behind one protocol (installed as `graphmem.extractors`).

`get_extractor("spacy")` is the default: spaCy's small English model with engineering
patterns, falling back to rules when no model is installed; "rules" never loads a model;
"llm" asks an OpenAI-compatible or Ollama endpoint. spaCy and httpx are imported only when
an extractor is built, so importing this package stays cheap.
"""

from __future__ import annotations

from .base import (
    ExtractedEntity,
    ExtractedFact,
    Extraction,
    ExtractionError,
    Extractor,
    normalise,
)

__all__ = [
    "EXTRACTOR_NAMES",
    "ExtractedEntity",
    "ExtractedFact",
    "Extraction",
    "ExtractionError",
    "Extractor",
    "get_extractor",
    "normalise",
]

EXTRACTOR_NAMES = ("spacy", "rules", "llm")


def get_extractor(
    name: str = "spacy",
    *,
    model: str | None = None,
    url: str | None = None,
    api_key: str | None = None,
    timeout: float = 30.0,
    retries: int = 2,
) -> Extractor:
    """An extractor by name; `model` is a spaCy package for "spacy", a model id for "llm"."""
    key = name.strip().lower()
    if key == "spacy":
        from .spacy_extractor import SpacyExtractor

        return SpacyExtractor(model)
    if key == "rules":
        from .spacy_extractor import SpacyExtractor

        return SpacyExtractor(use_model=False)
    if key == "llm":
        from .llm import LLMExtractor

        return LLMExtractor(model=model, url=url, api_key=api_key, timeout=timeout, retries=retries)
    raise ValueError(f"unknown extractor {name!r}; choose one of: {', '.join(EXTRACTOR_NAMES)}")
