"""Ids sort by creation time, so pages and exports are stable without a second sort key."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from graphmem.ids import new_id


def test_ids_are_26_crockford_base32_characters() -> None:
    memory_id = new_id()
    assert len(memory_id) == 26
    assert set(memory_id) <= set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")


def test_new_ids_sort_by_creation_time() -> None:
    start = datetime(2020, 1, 1, tzinfo=UTC)
    times = [start + timedelta(milliseconds=3 * i) for i in range(50)]
    times += [start + timedelta(days=400 * i) for i in range(1, 5)]
    ids = [new_id(t) for t in times]
    assert sorted(ids) == ids


def test_naive_times_are_read_as_utc() -> None:
    naive = datetime(2022, 5, 25, 12, 0)
    aware = naive.replace(tzinfo=UTC)
    assert new_id(naive)[:10] == new_id(aware)[:10]


def test_ids_made_in_the_same_millisecond_keep_their_order_and_differ() -> None:
    at = datetime(2023, 10, 13, 9, 30, tzinfo=UTC)
    ids = [new_id(at) for _ in range(200)]
    assert len(set(ids)) == 200
    assert sorted(ids) == ids


def test_an_id_spells_its_millisecond_as_ulid_tools_read_it() -> None:
    at = datetime(2016, 7, 30, 23, 54, 10, 259000, tzinfo=UTC)
    value = 0
    for char in new_id(at):
        value = value * 32 + "0123456789ABCDEFGHJKMNPQRSTVWXYZ".index(char)
    assert value >> 80 == 1469922850259
    assert new_id(datetime(1970, 1, 1, tzinfo=UTC))[:10] == "0000000000"
