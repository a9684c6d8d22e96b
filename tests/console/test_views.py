"""How the pages spell stored values: times and metadata as a person reads them."""

from __future__ import annotations

from datetime import UTC, datetime

from graphmem.console.views import done_message, metadata_rows, when


def test_a_time_shows_whether_it_came_as_a_datetime_or_as_iso_text() -> None:
    assert when(datetime(2026, 12, 3, 13, 45, tzinfo=UTC)) == "2026-12-03 13:45"
    assert when("2026-12-03T13:45:07.123456+00:00") == "2026-12-03 13:45"  # a document's indexed_at
    assert when("not a time") == "" and when(None) == ""


def test_nested_metadata_becomes_dotted_keys_and_deep_lists_json() -> None:
    rows = metadata_rows({"a": {"b": 1, "c": [True, None]}, "d": [{"e": 1}], "f": {}})
    assert rows[:2] == [("metadata.a.b", "1", False), ("metadata.a.c", "true, null", False)]
    assert rows[2][0] == "metadata.d" and rows[2][2] and '"e": 1' in rows[2][1]
    assert rows[3] == ("metadata.f", "{}", True)
    assert metadata_rows({"cosine": 0.9}, "") == [("cosine", "0.9", False)]


def test_only_known_decisions_are_reported() -> None:
    assert done_message("finding-reject", "F1") == "Dismissed finding F1"
    assert done_message("<b>x</b>", "F1") == "" and done_message("review-accept", "") == ""
