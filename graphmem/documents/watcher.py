"""The owner's watch on the indexed documents: a change under their folders re-indexes them.

Only folders that hold indexed documents are watched (recursively), and the project root itself
without its subfolders when documents sit at its top: a recursive watch on a whole repository
would put an inotify watch on every folder of `node_modules`. Changes arrive debounced (watchfiles
groups a burst of saves into one set); a set that touches an indexable file runs the same
incremental indexing as `graphmem index`, so a rename, a deletion or an unchanged save are all
handled as they are there.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from graphmem.documents.ignore import SKIP_DIRS
from graphmem.documents.indexer import indexable

log = logging.getLogger("graphmem")
DEBOUNCE_MS = 1600

Index = Callable[[Sequence[str] | None], Any]


def watched_folders(
    project: Path, rels: Sequence[str], roots: Sequence[str]
) -> tuple[list[Path], bool]:
    """(folders to watch recursively, whether to watch the project root's own files): the top
    folders of the indexed project documents, and the outside roots."""
    tops = {rel.split("/", 1)[0] for rel in rels if "/" in rel}
    folders = [project / top for top in sorted(tops) if (project / top).is_dir()]
    folders += [Path(root) for root in sorted(set(roots)) if root and Path(root).is_dir()]
    return folders, any("/" not in rel for rel in rels)


class DocumentWatcher:
    """Runs `index(None)` when a project document changes, `index([root])` for an outside root."""

    def __init__(self, project: Path, index: Index, *, debounce_ms: int = DEBOUNCE_MS) -> None:
        self.project = project.resolve()
        self.index = index
        self.debounce_ms = debounce_ms
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._roots: list[Path] = []
        self.runs = 0  # index runs started, for status and tests

    def start(self, rels: Sequence[str], roots: Sequence[str]) -> None:
        self._roots = [Path(r) for r in roots if r]
        folders, top = watched_folders(self.project, rels, roots)
        if folders:
            self._spawn(folders, recursive=True)
        if top:
            self._spawn([self.project], recursive=False)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)

    def _spawn(self, folders: list[Path], *, recursive: bool) -> None:
        thread = threading.Thread(
            target=self._watch, args=(folders, recursive), name="graphmem-watch", daemon=True
        )
        thread.start()
        self._threads.append(thread)

    def _watch(self, folders: list[Path], recursive: bool) -> None:
        from watchfiles import watch

        try:
            for changes in watch(
                *folders,
                watch_filter=self._wanted,
                debounce=self.debounce_ms,
                stop_event=self._stop,
                recursive=recursive,
                raise_interrupt=False,
            ):
                self._changed({Path(path) for _, path in changes})
        except Exception:  # the store goes on without its watch; say why
            log.exception("the document watch stopped")

    def _wanted(self, _change: object, path: str) -> bool:
        candidate = Path(path)
        return indexable(candidate) and not SKIP_DIRS.intersection(candidate.parts)

    def _changed(self, paths: set[Path]) -> None:
        outside = sorted({str(r) for p in paths for r in self._roots if p.is_relative_to(r)})
        try:
            if any(p.is_relative_to(self.project) for p in paths):
                self.runs += 1
                self.index(None)
            for root in outside:
                self.runs += 1
                self.index([root])
        except Exception:
            log.exception("re-indexing after a change failed")
