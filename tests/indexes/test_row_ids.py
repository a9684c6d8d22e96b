from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphmem.indexes.row_ids import RowIds

IDS = ["m3", "m1", "m2", "a-long-id-é", "m1"]  # m1 written twice: rows 1 and 4


def _both(tmp_path: Path) -> list[RowIds]:
    """The same ids built from a list and loaded from saved files."""
    RowIds(IDS).save(tmp_path, "t")
    return [RowIds(IDS), RowIds.load(tmp_path, "t")]


def test_rows_give_each_ids_latest_row_and_minus_one_when_absent(tmp_path: Path) -> None:
    for ids in _both(tmp_path):
        assert ids.rows(["m2", "m1", "nope", "a-long-id-é", "m"]).tolist() == [2, 4, -1, 3, -1]
        assert ids.row("m3") == 0
        assert "m2" in ids and "m" not in ids and 3 not in ids
        assert ids.rows([]).tolist() == []


def test_ids_read_back_in_row_order(tmp_path: Path) -> None:
    for ids in _both(tmp_path):
        assert len(ids) == 5
        assert list(ids) == IDS
        assert [ids[r] for r in range(5)] == IDS
        assert all(type(i) is str for i in ids)


def test_appended_ids_follow_the_base_and_win_over_it(tmp_path: Path) -> None:
    for ids in _both(tmp_path):
        ids.extend(["new", "m2"])
        assert len(ids) == 7
        assert ids[5] == "new" and ids[6] == "m2"
        assert ids.rows(["new", "m2", "m3"]).tolist() == [5, 6, 0]
        assert list(ids)[-2:] == ["new", "m2"]


def test_saving_keeps_appended_ids(tmp_path: Path) -> None:
    ids = _both(tmp_path)[1]
    ids.extend(["later"])
    ids.save(tmp_path, "again")
    again = RowIds.load(tmp_path, "again")
    assert list(again) == [*IDS, "later"]
    assert again.row("later") == 5 and again.row("m1") == 4


def test_an_empty_index_saves_and_loads(tmp_path: Path) -> None:
    RowIds().save(tmp_path, "e")
    empty = RowIds.load(tmp_path, "e")
    assert len(empty) == 0 and empty.rows(["x"]).tolist() == [-1]


def test_files_that_disagree_are_refused(tmp_path: Path) -> None:
    RowIds(IDS).save(tmp_path, "t")
    np.save(tmp_path / "t.order.npy", np.arange(3, dtype=np.int64))
    with pytest.raises(ValueError, match="disagree"):
        RowIds.load(tmp_path, "t")
    with pytest.raises(OSError):
        RowIds.load(tmp_path, "missing")


def test_ascii_ids_are_saved_as_bytes_and_read_back_as_text(tmp_path: Path) -> None:
    RowIds(["01ABC", "01ABD"]).save(tmp_path, "a")
    assert np.load(tmp_path / "a.ids.npy").dtype.kind == "S"
    loaded = RowIds.load(tmp_path, "a")
    assert list(loaded) == ["01ABC", "01ABD"] and loaded[1] == "01ABD"
    assert loaded.rows(["01ABD", "é"]).tolist() == [1, -1]


@pytest.mark.parametrize("tail", [["new", "m2"], ["newé"]])
def test_a_subset_keeps_the_marked_rows_in_order_and_renumbers_them(
    tmp_path: Path, tail: list[str]
) -> None:
    for ids in _both(tmp_path):
        ids.extend(tail)
        keep = np.ones(len(ids), bool)
        keep[[1, 5]] = False  # the first "m1", and the first appended id
        kept = ids.subset(keep)
        expected = [i for i, k in zip(list(ids), keep, strict=True) if k]
        assert list(kept) == expected and len(kept) == len(expected)
        assert kept.rows([expected[-1], "m3", tail[0]]).tolist() == [len(expected) - 1, 0, -1]
        assert kept.row("m1") == expected.index("m1")
