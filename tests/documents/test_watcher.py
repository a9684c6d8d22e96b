"""The owner's watch: a saved, added or deleted document is indexed again without being asked."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from pathlib import Path

import pytest

from graphmem.documents.watcher import DocumentWatcher, watched_folders


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_only_the_folders_of_indexed_documents_are_watched(tmp_path: Path) -> None:
    (tmp_path / "docs" / "adr").mkdir(parents=True)
    (tmp_path / "node_modules").mkdir()
    outside = tmp_path.parent / "shared-docs"
    outside.mkdir(exist_ok=True)

    folders, top = watched_folders(
        tmp_path, ["docs/adr/1.md", "docs/index.md", "README.md"], [str(outside)]
    )

    assert folders == [tmp_path / "docs", outside]
    assert top  # README.md sits at the top: the root is watched without its subfolders


@pytest.fixture
def watching(tmp_path: Path) -> Iterator[tuple[DocumentWatcher, list[Sequence[str] | None]]]:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n")
    calls: list[Sequence[str] | None] = []
    watcher = DocumentWatcher(tmp_path, calls.append, debounce_ms=100)
    watcher.start(["docs/a.md"], [])
    time.sleep(0.5)  # the watch is set up in its thread
    try:
        yield watcher, calls
    finally:
        watcher.stop()


def test_a_saved_document_is_indexed_again(
    watching: tuple[DocumentWatcher, list[Sequence[str] | None]], tmp_path: Path
) -> None:
    _, calls = watching

    (tmp_path / "docs" / "a.md").write_text("# A\n\nchanged\n")

    assert wait_for(lambda: calls == [None])


def test_files_that_are_not_documents_are_not_noticed(
    watching: tuple[DocumentWatcher, list[Sequence[str] | None]], tmp_path: Path
) -> None:
    _, calls = watching

    (tmp_path / "docs" / "image.png").write_bytes(b"\x89PNG")
    (tmp_path / "docs" / "node_modules").mkdir()
    (tmp_path / "docs" / "node_modules" / "x.md").write_text("# vendored\n")
    time.sleep(1.0)

    assert calls == []


def test_the_owner_reindexes_a_changed_document_by_itself(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    doc = tmp_path / "docs" / "oncall.md"
    doc.write_text("# On call\n\nPage the platform team.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    env.update(
        GRAPHMEM_HOME=str(tmp_path / ".graphmem"),
        GRAPHMEM_EMBEDDING_PROVIDER="hash",
        GRAPHMEM_DAEMON_IDLE_TIMEOUT="30",
    )

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "graphmem", *args],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    assert cli("index").returncode == 0
    started = cli("daemon", "start", "--json")
    assert started.returncode == 0, started.stderr
    pid = json.loads(started.stdout)["pid"]
    try:

        def found(words: str) -> bool:
            result = json.loads(cli("search", words, "--recipe", "bm25", "--json").stdout)
            return any(words in hit["snippet"] for hit in result["hits"])

        time.sleep(2.5)  # warm-up starts the watch
        doc.write_text("# On call\n\nPage the database team.\n")
        assert wait_for(lambda: found("database team"), timeout=30)
        doc.unlink()
        assert wait_for(lambda: not found("database team"), timeout=30)
    finally:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
