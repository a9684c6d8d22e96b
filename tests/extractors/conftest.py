"""Extractors built once per session: loading the spaCy model is the slow part of these tests."""

from __future__ import annotations

import pytest
from graphmem.extractors.spacy_extractor import MODEL_NAMES, SpacyExtractor, installed_model


@pytest.fixture(scope="session")
def model_extractor() -> SpacyExtractor:
    if installed_model(MODEL_NAMES) is None:
        pytest.skip(f"no spaCy English model installed ({' or '.join(MODEL_NAMES)})")
    return SpacyExtractor(workers=1)


@pytest.fixture(scope="session")
def rules_extractor() -> SpacyExtractor:
    return SpacyExtractor(use_model=False)
