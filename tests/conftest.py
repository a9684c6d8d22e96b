"""Shared fixtures: a temp store with the deterministic hash embedder, and a clean CLI environment."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from graphmem.daemon.client import stop_owner
from graphmem.daemon.paths import OWNER_FILE
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.service import GraphMemory, open_store
from graphmem.settings import load_settings
from graphmem.storage import engines

# real FalkorDB servers (falkordb_server, falkordb_secured, falkordb_replicated, falkordb_cluster)
pytest_plugins = ["tests.servers.fixtures"]

# GRAPHMEM_TEST_ENGINE=ladybug runs the suite's new stores on LadybugDB, in this process and in
# the graphmem processes the tests start (GRAPHMEM_ENGINE); =falkordb runs the `gm` stores on a
# FalkorDB server, a graph per test (the data dir keeps the search cache)
TEST_ENGINE = os.environ.get("GRAPHMEM_TEST_ENGINE", engines.DEFAULT.name)
ON_FALKORDB = TEST_ENGINE == "falkordb"
if not ON_FALKORDB:
    engines.DEFAULT = engines.BY_NAME[TEST_ENGINE]

SESSION_ENV = {
    "GRAPHMEM_ENGINE": engines.DEFAULT.name,
    # an owner process started by a test (through `graphmem serve`, say) exits 5 s after its
    # last client leaves instead of 15 minutes, so no test leaves one behind
    "GRAPHMEM_DAEMON_IDLE_TIMEOUT": "5",
    # extraction on write loads spaCy in a background thread: tests of other parts should not
    # pay for it or race it; tests/graph turns it on where it is what they test
    "GRAPHMEM_EXTRACT_ON_WRITE": "false",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A slow evaluation runs as long as it needs; every other test fails after the run's
    `timeout` (pyproject.toml)."""
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(0))


@pytest.fixture(autouse=True, scope="session")
def _session_env() -> Iterator[None]:
    previous = {key: os.environ.get(key) for key in SESSION_ENV}
    os.environ.update(SESSION_ENV)
    yield
    for key, value in previous.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


_GRAPHS = itertools.count()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture(scope="session")
def new_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new store, migrated and closed, made once per test process: a copy of it opens in a
    third of the time creating one takes (each migration's tables are made one by one)."""
    path = tmp_path_factory.mktemp("new-store") / "store"
    open_store(path, embedder=HashEmbedder()).close()
    return path


@pytest.fixture
def gm(store_path: Path, request: pytest.FixtureRequest) -> Iterator[GraphMemory]:
    """A fresh, migrated store, embedding with the fast offline HashEmbedder: on disk, or a
    graph of its own on a FalkorDB server under GRAPHMEM_TEST_ENGINE=falkordb."""
    if ON_FALKORDB:  # the data dir's config names the graph, as a team node's does
        server = request.getfixturevalue("falkordb_shared")
        from tests.servers.falkordb_servers import node_data_dir

        node_data_dir(store_path, server.store_url(f"t{next(_GRAPHS)}"))
        memory = open_store(store_path, embedder=HashEmbedder())
    else:
        shutil.copytree(request.getfixturevalue("new_store"), store_path)
        memory = open_store(store_path, embedder=HashEmbedder())
    try:
        yield memory
    finally:
        memory.close()


@pytest.fixture
def oneshot(store_path: Path) -> Iterator[GraphMemory]:
    """A one-shot command's store: new memories wait for the `index-triples` backfill."""
    settings = load_settings(store_path, environ={}, overrides={"extract_on_write": False})
    memory = GraphMemory(settings, embedder=HashEmbedder(), extract_in_background=False)
    try:
        yield memory
    finally:
        memory.close()


@pytest.fixture
def reopen(store_path: Path) -> Iterator[Callable[..., GraphMemory]]:
    """Open the same data dir again (after the test closed `gm`); every store opened is closed."""
    opened: list[GraphMemory] = []

    def _open(embedder: HashEmbedder | None = None) -> GraphMemory:
        memory = open_store(store_path, embedder=embedder or HashEmbedder())
        opened.append(memory)
        return memory

    yield _open
    for memory in opened:
        memory.close()


@pytest.fixture
def cli_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Environment for a CLI run: its own store and the hash embedder, no stray GRAPHMEM_* values.
    A writing command starts an owner for its store: every one left under tmp_path is stopped."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    env["GRAPHMEM_HOME"] = str(tmp_path / "cli-store")
    env["GRAPHMEM_EMBEDDING_PROVIDER"] = "hash"
    env["GRAPHMEM_EXTRACT_ON_WRITE"] = SESSION_ENV["GRAPHMEM_EXTRACT_ON_WRITE"]
    env["GRAPHMEM_DAEMON_IDLE_TIMEOUT"] = SESSION_ENV["GRAPHMEM_DAEMON_IDLE_TIMEOUT"]
    env["GRAPHMEM_ENGINE"] = engines.DEFAULT.name
    yield env
    for record in tmp_path.rglob(OWNER_FILE):
        stop_owner(record.parent)
