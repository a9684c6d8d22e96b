"""The in-process vector matrices: rows that grow without disturbing a reader, and drops that
take every row of an id."""

from __future__ import annotations

import numpy as np

from graphmem.indexes.row_ids import RowIds
from graphmem.indexes.vectors import Rows, VectorMatrix


def test_appending_rows_never_changes_what_a_reader_already_holds() -> None:
    rows = Rows(np.ones((3, 4), np.float32))
    held = rows.view(4)
    for i in range(200):  # grows several times, and fills the room it keeps in between
        rows.extend(np.full((1, 4), i, np.float32))
    assert held.shape == (3, 4) and (held == 1).all()
    assert len(rows) == 203 and (rows.view(4)[3:, 0] == np.arange(200)).all()


def test_dropping_an_id_with_two_rows_leaves_neither() -> None:
    matrix = VectorMatrix(RowIds(["a", "b", "c"]), Rows(np.eye(3, dtype=np.float32)))
    matrix.append(["b"], np.full((1, 3), 5, np.float32))  # "b" again, the later row wins
    assert matrix.drop({"b", "absent"}) and not matrix.drop({"absent"})
    assert list(matrix.ids) == ["a", "c"]
    assert matrix.matrix(3).tolist() == [[1, 0, 0], [0, 0, 1]]
