"""Backups of a FalkorDB store: the graph copied on the server at one instant (GRAPH.COPY, atomic
like any command), its tables exported from the copy, the copy deleted.

The server's own files (its AOF, an RDB) hold every graph of the server and are the operator's
to back up; a backup here is of one store, in the embedded engines' form where it can be: a
directory with `manifest.json` (graphmem.models.BackupInfo, which `read_manifest` reads) and,
in place of their database file, one Parquet file per table (`TableSpec.files`) with
`tables.json` listing the tables and each one's digest, as a migration's manifest does. The
tables are those a migration copies (graphmem.storage.falkordb.tables), so a backup loads into
a FalkorDB graph (`restore_tables`) or, table by table, into an embedded store.

The copy's key shares the graph's hash tag, so in a cluster it is made on the graph's shard.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis
from falkordb import Graph

from graphmem.errors import Conflict, InvalidInput, StorageError
from graphmem.models import BackupInfo, utcnow
from graphmem.storage.falkordb.connection import FalkorConnection
from graphmem.storage.falkordb.lease import Lease
from graphmem.storage.falkordb.tables import FalkorTables, Reader
from graphmem.storage.falkordb.values import stored_params
from graphmem.storage.protocols.tables import TableSpec

if TYPE_CHECKING:
    from graphmem.storage.falkordb.store import FalkorStore

MANIFEST = "manifest.json"  # as the embedded engines' backups name it
TABLES = "tables.json"
ENGINE = "falkordb"
COPYING = "graphmem:copying"  # the lease of the one GRAPH.COPY a server runs at a time
FORK_WAIT = 60.0  # s a backup waits for its turn, and for the server's own forks to end
FORK_POLL = 0.05
# INFO persistence's fields for the children a server may be running
_FORKS = ("rdb_bgsave_in_progress", "aof_rewrite_in_progress", "module_fork_in_progress")


def _wait_for_no_fork(conn: FalkorConnection) -> None:
    """GRAPH.COPY forks the server, and FalkorDB 4.16 stops answering for good when that fork
    fails because a child of the server's runs already (another copy, a snapshot, an AOF
    rewrite, a replica's first sync). Copies take turns (the COPYING lease); this waits out
    the server's own children."""
    deadline = time.monotonic() + FORK_WAIT
    while any(int(conn.server_info("persistence").get(f, 0)) for f in _FORKS):
        if time.monotonic() > deadline:
            raise Conflict(
                f"{conn.url} has been writing a snapshot or syncing a replica for "
                f"{FORK_WAIT:.0f} s; try the backup again when it is done"
            )
        time.sleep(FORK_POLL)


def _prepare_target(dest: Path) -> None:
    if dest.exists() and any(dest.iterdir()):
        raise Conflict(
            f"backup target {dest} exists and is not empty; choose a new path", path=str(dest)
        )
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInput(f"cannot create {dest}: {exc.strerror}", path=str(dest)) from exc


def graph_reader(conn: FalkorConnection, key: str) -> Reader:
    """Read-only queries on another graph of the connection's server."""
    graph = Graph(conn.client, key)

    def read(query: str, params: dict[str, Any]) -> list[list[Any]]:
        try:
            rows: list[list[Any]] = graph.ro_query(query, stored_params(params)).result_set
        except (redis.ResponseError, redis.ConnectionError, redis.TimeoutError) as exc:
            raise StorageError(f"{conn.url} ({key}): {exc}", query=query[:200]) from exc
        return rows

    return read


def take_backup(store: FalkorStore, dest: Path) -> BackupInfo:
    started = time.perf_counter()
    dest = Path(dest).resolve()
    home = store.home.resolve()
    if dest == home or home in dest.parents:
        raise InvalidInput("a backup cannot go inside the store it copies", path=str(dest))
    _prepare_target(dest)
    conn = store.conn
    copy = conn.url.key(f"backup:{uuid.uuid4().hex}")
    with Lease(conn, "copy", key=COPYING).holding(wait=FORK_WAIT) as mine:
        if not mine:
            raise Conflict(
                f"another backup on {conn.url} has held its server for {FORK_WAIT:.0f} s; "
                "try again when it is done"
            )
        _wait_for_no_fork(conn)
        with conn.writer_paused():  # this node's commits wait; the server orders the others'
            conn.command("GRAPH.COPY", conn.url.graph_key, copy)
    try:
        read = graph_reader(conn, copy)
        tables = FalkorTables(conn, store.vectors, store.search, read=read)
        specs = tables.specs()
        exported = {}
        for spec in specs:
            found = tables.export(spec, dest)
            exported[spec.name] = {"rows": found.rows, "sha256": found.sha256}
        memories = read("MATCH (m:Memory) RETURN count(m)", {})
        version = read("MATCH (m:_Migration) RETURN max(m.version)", {})
    finally:
        conn.command("GRAPH.DELETE", copy)
    listing = {
        "engine": ENGINE,
        "source": str(conn.url),
        "tables": [spec.to_json() for spec in specs],
        "exported": exported,
    }
    (dest / TABLES).write_text(json.dumps(listing, indent=1), encoding="utf-8")
    info = BackupInfo(
        path=str(dest),
        source=str(conn.url),
        schema_version=int(version[0][0] or 0) if version else 0,
        memories=int(memories[0][0]) if memories else 0,
        bytes=sum(f.stat().st_size for f in dest.iterdir() if f.is_file()),
        created_at=utcnow(),
        seconds=round(time.perf_counter() - started, 3),
    )
    (dest / MANIFEST).write_text(info.model_dump_json(indent=2), encoding="utf-8")
    return info


def backup_tables(backup: Path) -> tuple[list[TableSpec], dict[str, dict[str, Any]]]:
    """The tables a FalkorDB backup holds, and the digest of each when it was taken."""
    try:
        listing = json.loads((backup / TABLES).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInput(
            f"{backup} is not a backup of a FalkorDB store (no {TABLES})", path=str(backup)
        ) from None
    except ValueError as exc:
        raise InvalidInput(f"{backup}/{TABLES} is damaged: {exc}", path=str(backup)) from exc
    return [TableSpec.from_json(t) for t in listing["tables"]], listing["exported"]


def restore_tables(store: FalkorStore, backup: Path) -> None:
    """Replace every table of the (migrated) store by the backup's, each proved by its digest;
    StorageError naming the first table that differs."""
    specs, exported = backup_tables(backup)
    for spec in specs:
        store.tables.load(spec, backup)
        found = store.tables.digest(spec)
        want = exported[spec.name]
        if (found.rows, found.sha256) != (want["rows"], want["sha256"]):
            raise StorageError(
                f"table {spec.name} restored differs from the backup: {want['rows']} rows "
                f"backed up, {found.rows} restored",
                table=spec.name,
            )
