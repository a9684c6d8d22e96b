"""Input models: the same bad input is rejected the same way by every transport."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from graphmem.models import MAX_TAGS, MemoryFilter, MemoryInput, MemoryPatch, parse_time


def test_tags_given_as_comma_string_are_split_stripped_and_deduplicated() -> None:
    item = MemoryInput(content="x", tags=" deploy, argocd ,deploy,, ")
    assert item.tags == ["deploy", "argocd"]


def test_more_than_max_tags_is_rejected() -> None:
    with pytest.raises(ValidationError, match="at most"):
        MemoryInput(content="x", tags=[f"t{i}" for i in range(MAX_TAGS + 1)])


def test_metadata_given_as_json_text_becomes_an_object() -> None:
    item = MemoryInput(content="x", metadata='{"pr": 47, "files": ["a.py"]}')
    assert item.metadata == {"pr": 47, "files": ["a.py"]}


@pytest.mark.parametrize("metadata", ["{bad", "[1, 2]", "42", [1, 2]])
def test_metadata_that_is_not_a_json_object_is_rejected(metadata: object) -> None:
    with pytest.raises(ValidationError, match="metadata"):
        MemoryInput(content="x", metadata=metadata)


def test_times_are_read_as_aware_utc_and_a_time_without_an_offset_is_utc() -> None:
    assert parse_time("2024-01-10T10:00:00+02:00") == datetime(2024, 1, 10, 8, 0, tzinfo=UTC)
    assert parse_time("2024-01-10T10:00:00Z") == datetime(2024, 1, 10, 10, 0, tzinfo=UTC)
    assert parse_time("2024-01-10T10:00:00") == datetime(2024, 1, 10, 10, 0, tzinfo=UTC)
    assert parse_time("2024-01-10") == datetime(2024, 1, 10, tzinfo=UTC)
    assert parse_time("") is None
    assert parse_time("2024-01-10T10:00:00+02:00").tzinfo is UTC  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "given", ["2024-01-10T10:00:00", "2024-01-10T11:00:00+01:00", 1704880800, "2024-01-10T10:00Z"]
)
def test_every_datetime_of_a_memory_is_written_in_rfc3339_with_its_offset(given: object) -> None:
    item = MemoryInput(content="x", created_at=given)
    assert item.created_at == datetime(2024, 1, 10, 10, 0, tzinfo=UTC)
    assert json.loads(item.model_dump_json())["created_at"] == "2024-01-10T10:00:00Z"


def test_a_datetime_that_is_not_iso_8601_says_so() -> None:
    with pytest.raises(ValidationError, match="not an ISO 8601 date or time"):
        MemoryInput(content="x", created_at="last tuesday")


def test_unknown_field_is_rejected_rather_than_silently_dropped() -> None:
    with pytest.raises(ValidationError, match="importnace"):
        MemoryInput(content="x", importnace=0.9)  # type: ignore[call-arg]


def test_patch_rejects_blank_content() -> None:
    with pytest.raises(ValidationError, match="content is empty"):
        MemoryPatch(content="   ")


def test_filter_rejects_unknown_lifecycle() -> None:
    with pytest.raises(ValidationError, match="lifecycle"):
        MemoryFilter(lifecycle="deleted")  # type: ignore[arg-type]


def test_empty_filter_reports_itself_empty_and_a_tag_filter_does_not() -> None:
    assert MemoryFilter().is_empty()
    assert not MemoryFilter(tags="auth").is_empty()
