"""The ids of an in-process table's rows, and the row of each id, with nothing to build at load.

The vector matrix, the keyword index and the memory columns each number their rows. A dict from
id to row took 40 ms to build over 180k ids, and a cold `graphmem recall` built three. Here the
ids are a numpy array in row order plus the permutation that sorts them; the search cache saves
both and a new process maps them, and a batch of lookups is one `searchsorted`. Ids appended later (writes
after the load) sit in a small dict, and a later row of the same id wins over an earlier one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


class RowIds:
    """Ids in row order. Built from a list, lookups use a dict made on the first one; loaded
    from the search cache, they search the mapped ids through the saved sort order."""

    def __init__(self, ids: Iterable[str] = ()) -> None:
        self._base: list[str] | npt.NDArray[np.bytes_ | np.str_] = list(ids)
        self._base_rows: dict[str, int] | None = None  # for a list base, on first lookup
        self._order: I64 | None = None  # for an array base: its rows by ascending id
        self._tail: list[str] = []  # ids appended after the base, rows len(_base) + i
        self._tail_rows: dict[str, int] = {}

    @classmethod
    def load(cls, folder: Path, name: str) -> RowIds:
        """What `save` wrote, mapped; raises OSError or ValueError when unusable."""
        out = cls()
        base = np.load(folder / f"{name}.ids.npy", mmap_mode="r").view(np.ndarray)
        out._order = np.load(folder / f"{name}.order.npy", mmap_mode="r").view(np.ndarray)
        if base.dtype.kind not in "SU" or out._order.shape != base.shape:
            raise ValueError(f"{name}: id files disagree")
        out._base = base
        return out

    def save(self, folder: Path, name: str) -> None:
        """ASCII ids (graphmem's own) as bytes, a quarter of the size of unicode."""
        every = list(self)
        try:
            ids = np.array(every, dtype=np.bytes_) if every else np.zeros(0, "S1")
        except UnicodeEncodeError:
            ids = np.array(every, dtype=np.str_)
        np.save(folder / f"{name}.ids.npy", ids)
        np.save(folder / f"{name}.order.npy", np.argsort(ids, kind="stable").astype(np.int64))

    def extend(self, ids: Iterable[str]) -> None:
        for memory_id in ids:
            self._tail_rows[memory_id] = len(self._base) + len(self._tail)
            self._tail.append(memory_id)

    def subset(self, keep: npt.NDArray[np.bool_]) -> RowIds:
        """The ids of the rows `keep` marks, renumbered in order: numpy work for mapped ids."""
        if isinstance(self._base, list):
            return RowIds(i for i, k in zip(self, keep, strict=True) if k)
        base = self._base
        tail = [i for i, k in zip(self._tail, keep[len(base) :], strict=True) if k]
        kept = base[keep[: len(base)]]
        if tail:
            try:
                kept = np.concatenate([kept, np.array(tail, dtype=base.dtype.type)])
            except UnicodeEncodeError:  # a non-ASCII id among ASCII ones
                return RowIds(i for i, k in zip(self, keep, strict=True) if k)
        out = RowIds()
        out._base, out._order = kept, np.argsort(kept, kind="stable").astype(np.int64)
        return out

    def __len__(self) -> int:
        return len(self._base) + len(self._tail)

    def __getitem__(self, row: int) -> str:
        if row >= len(self._base):
            return self._tail[row - len(self._base)]
        value = self._base[row]
        return value.decode() if isinstance(value, bytes) else str(value)

    def __iter__(self) -> Iterator[str]:
        if isinstance(self._base, list):
            yield from self._base
        elif self._base.dtype.kind == "S":
            yield from (i.decode() for i in self._base.tolist())
        else:
            yield from self._base.tolist()
        yield from self._tail

    def __contains__(self, memory_id: object) -> bool:
        return isinstance(memory_id, str) and self.row(memory_id) >= 0

    def row(self, memory_id: str) -> int:
        """The id's latest row, or -1."""
        return int(self.rows([memory_id])[0])

    def rows(self, ids: Sequence[str]) -> I64:
        """The latest row of each id, -1 where it has none."""
        if isinstance(self._base, list):
            if self._base_rows is None:
                self._base_rows = dict(zip(self._base, range(len(self._base)), strict=True))
            found = self._base_rows
            out = np.fromiter((found.get(i, -1) for i in ids), np.int64, len(ids))
        else:
            out = self._search(ids)
        if self._tail_rows:
            for i, memory_id in enumerate(ids):
                out[i] = self._tail_rows.get(memory_id, out[i])
        return out

    def within(self, ids: Sequence[str], end: int) -> list[tuple[str, int]]:
        """Each id with its latest row, for the ids whose row comes before `end`: the rows of a
        matrix snapshot of `end` rows (rows added since are left out)."""
        rows = self.rows(ids).tolist()
        return [(i, row) for i, row in zip(ids, rows, strict=True) if 0 <= row < end]

    def _search(self, ids: Sequence[str]) -> I64:
        out = np.full(len(ids), -1, np.int64)
        base, order = self._base, self._order
        if not len(ids) or isinstance(base, list) or not len(base) or order is None:
            return out
        if base.dtype.kind == "S":
            wanted = np.array([i.encode() for i in ids], dtype=np.bytes_)
        else:
            wanted = np.array(ids, dtype=np.str_)
        # the last of equal ids in sorted order is the latest row (the sort was stable)
        at = np.maximum(np.searchsorted(base, wanted, side="right", sorter=order) - 1, 0)
        found = base[order[at]] == wanted
        out[found] = order[at[found]]
        return out
