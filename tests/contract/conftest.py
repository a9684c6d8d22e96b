"""Each contract test runs on the embedded engine of the run (Kùzu or LadybugDB) and on FalkorDB,
against a real server on loopback (tests/servers), when it is marked `falkordb`; an unmarked one
holds an embedded engine's own guarantee (a transaction that reads its own writes, a kill -9 of
the process that holds the database, the data dir's database) and is reported skipped there.
FalkorDB's own (a transaction as one query, the change stream, leases, replicas, failover) are
in tests/storage/test_falkordb_*.py.

`contract_store` is a migrated store of the engine under test at the repository level; `gm`
the whole store on it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.service import GraphMemory, open_store

ENGINES = ("embedded", "falkordb")
EMBEDDED_ONLY = "an embedded engine's guarantee"


@pytest.fixture(params=ENGINES, autouse=True)
def engine(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if name == "falkordb" and request.node.get_closest_marker("falkordb") is None:
        pytest.skip(EMBEDDED_ONLY)
    return name


@pytest.fixture
def contract_store(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A migrated store of the engine under test, closed after the test."""
    if engine == "embedded":
        from graphmem.storage import open_store_at

        store: Any = open_store_at(tmp_path / "store")
    else:
        from graphmem.storage.falkordb.store import FalkorStore
        from graphmem.store_url import parse_store_url

        server = request.getfixturevalue("falkordb_server")
        store = FalkorStore.open(parse_store_url(server.store_url("project")), tmp_path / "home")
    try:
        store.migrate()
        yield store
    finally:
        store.close()


@pytest.fixture
def gm(engine: str, store_path: Path, request: pytest.FixtureRequest) -> Iterator[GraphMemory]:
    """The whole store on the engine under test: the data dir's own database, or a graph of
    its own on a FalkorDB server, named in the data dir's config as a team node's is."""
    if engine == "falkordb":
        server = request.getfixturevalue("falkordb_server")
        from tests.servers.falkordb_servers import node_data_dir

        node_data_dir(store_path, server.store_url("contract"))
    else:
        shutil.copytree(request.getfixturevalue("new_store"), store_path)
    memory = open_store(store_path, embedder=HashEmbedder())
    try:
        yield memory
    finally:
        memory.close()
