"""Recall's in-process structures (vector matrices and their projection, keyword postings, every
memory's fields) saved beside the database.

A new process would otherwise read every vector, text and field from Kùzu and rebuild the keyword
index before its first answer (~2.5 s at 100k memories). The files are written when a store that
is big enough closes, and trusted only while the manifest's stamp equals the store's content stamp,
which every write to memory text, fields or vectors changes; anything else is a miss, never an
error, and deleting the folder is always safe.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.ipc

from graphmem.indexes.keywords import KeywordIndex, load_index, save_index
from graphmem.indexes.row_ids import RowIds

CACHE_DIR = "search-cache"
MANIFEST = "manifest.json"
FORMAT = 3
# (ids, matrix, (basis, projected rows) or None) of one vector table
SavedMatrix = tuple[
    RowIds,
    npt.NDArray[np.float32],
    tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]] | None,
]
MIN_MEMORIES = 2_000  # below this, reading from Kùzu takes no longer than reading these files


class SearchCache:
    def __init__(self, home: Path) -> None:
        self.folder = home / CACHE_DIR
        self._manifest: dict[str, object] | None = None

    def _read_manifest(self) -> dict[str, object]:
        if self._manifest is None:
            try:
                self._manifest = json.loads((self.folder / MANIFEST).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self._manifest = {}
        return self._manifest

    def valid_for(self, stamp: str) -> bool:
        manifest = self._read_manifest()
        return bool(stamp) and manifest.get("format") == FORMAT and manifest.get("stamp") == stamp

    def position(self) -> str | None:
        """Where in the store's change stream the saved structures were exact, if the store
        has one (a server store's nodes): what came after can be replayed onto them."""
        manifest = self._read_manifest()
        position = manifest.get("position")
        return position if manifest.get("format") == FORMAT and isinstance(position, str) else None

    def dim(self, table: str) -> int | None:
        """The width of a saved matrix, read from its file's header."""
        try:
            shape = np.load(self.folder / f"{table}.npy", mmap_mode="r").shape
        except (OSError, ValueError):
            return None
        return int(shape[1]) if len(shape) == 2 else None

    def vector_tables(self) -> list[str]:
        """The vector tables saved last, current or not: a guess for before the store opens."""
        tables = self._read_manifest().get("vectors")
        return [t for t in tables if isinstance(t, str)] if isinstance(tables, list) else []

    def matrix(self, table: str, dim: int) -> tuple[RowIds, npt.NDArray[np.float32]] | None:
        try:
            matrix = np.load(self.folder / f"{table}.npy", mmap_mode="r")
            ids = RowIds.load(self.folder, table)
        except (OSError, ValueError):
            return None
        if matrix.shape != (len(ids), dim) or matrix.dtype != np.float32:
            return None
        return ids, matrix.view(np.ndarray)  # same pages, without memmap's slow indexing

    def projection(
        self, table: str, rows: int
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]] | None:
        """The saved (basis, projected rows) of a big matrix, when they cover its rows."""
        try:
            basis = np.load(self.folder / f"{table}.basis.npy")
            projected = np.load(self.folder / f"{table}.projected.npy", mmap_mode="r")
        except (OSError, ValueError):
            return None
        if len(projected) != rows or projected.shape[1:] != basis.shape[1:]:
            return None
        return basis, projected.view(np.ndarray)

    def columns(self, names: Sequence[str]) -> tuple[pa.Table, RowIds] | None:
        """The memory fields table and its row ids."""
        try:
            with pa.memory_map(str(self.folder / "columns.arrow")) as source:
                table = pa.ipc.open_file(source).read_all()
            ids = RowIds.load(self.folder, "columns")
        except (OSError, ValueError, pa.ArrowInvalid):
            return None
        if table.column_names != list(names) or len(ids) != table.num_rows:
            return None
        return table, ids

    def keywords(self) -> KeywordIndex | None:
        try:
            return load_index(self.folder)
        except (OSError, ValueError, KeyError):
            return None

    def save(
        self,
        stamp: str,
        matrices: dict[str, SavedMatrix],
        keywords: KeywordIndex | None,
        columns: pa.Table | None,
        position: str | None = None,
    ) -> None:
        """Write into a fresh folder, then swap it in: a reader never trusts half a cache."""
        staging = self.folder.with_name(f"{CACHE_DIR}.{os.getpid()}.tmp")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for table, (ids, matrix, projection) in matrices.items():
            np.save(staging / f"{table}.npy", np.ascontiguousarray(matrix, np.float32))
            ids.save(staging, table)
            if projection is not None and len(projection[1]) == len(ids):
                np.save(staging / f"{table}.basis.npy", projection[0])
                np.save(staging / f"{table}.projected.npy", projection[1])
        if keywords is not None:
            save_index(keywords, staging)
        if columns is not None:
            path = str(staging / "columns.arrow")
            with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, columns.schema) as writer:
                writer.write_table(columns)
            RowIds(columns.column(0).to_pylist()).save(staging, "columns")
        manifest: dict[str, object] = {
            "format": FORMAT,
            "stamp": stamp,
            "vectors": sorted(matrices),
        }
        if position is not None:
            manifest["position"] = position
        (staging / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
        shutil.rmtree(self.folder, ignore_errors=True)
        staging.rename(self.folder)
        self._manifest = manifest
