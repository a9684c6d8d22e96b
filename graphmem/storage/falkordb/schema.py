"""The FalkorDB store's schema and its migrations.

FalkorDB has no tables: a label comes with its first node. What a schema is here: exact-match
indexes, unique constraints (each behind its index, built by the server in the background:
PENDING, then OPERATIONAL) and a `_Meta` node holding the schema version. A step is applied
once, recorded as a `_Migration` node, and is safe to apply again after a crash halfway (an
index or constraint already there is left alone). The embedded engines' `schema/*.cypher` are
Kùzu DDL; these steps are this engine's, numbered on their own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from graphmem.errors import SchemaError, StorageError
from graphmem.models import DbStatus, MigrationInfo, utcnow
from graphmem.storage.falkordb.connection import FalkorConnection
from graphmem.storage.falkordb.lease import Lease
from graphmem.storage.falkordb.values import aware, micros

SCHEMA_VERSION = "schema_version"  # _Meta key
CONSTRAINT_TIMEOUT = 60.0  # seconds for the server to build a constraint's check
MIGRATION_LEASE_SECONDS = 120.0  # a migration's lease, and how long another node waits for it


@dataclass(frozen=True)
class Step:
    version: int
    name: str
    indexes: tuple[tuple[str, str], ...] = ()  # (label, property): exact-match indexes
    unique: tuple[tuple[str, str], ...] = ()  # (label, property): unique, behind an index


STEPS: tuple[Step, ...] = (
    Step(
        1,
        "base",
        indexes=(
            ("Memory", "id"),
            ("Memory", "created_at"),
            ("Memory", "session_id"),
            ("StoreKey", "key"),
            ("Pending", "key"),
            ("Pending", "work"),
            ("_Meta", "key"),
            ("_Txn", "id"),
            ("_Txn", "at"),
            ("_Migration", "version"),
            ("StewardRun", "id"),
            ("Finding", "id"),
            ("Finding", "fingerprint"),
            ("Audit", "id"),
            ("Document", "path"),
            ("Document", "uid"),
            ("Section", "key"),
            ("Section", "doc"),
            ("Chunk", "id"),
            ("Chunk", "doc"),
            ("Entity", "id"),
            ("Entity", "key"),
            ("Entity", "label"),
            ("EntityAlias", "norm"),
            ("EntityAlias", "entity"),
            ("Fact", "id"),
            ("Session", "id"),
            ("ReviewItem", "id"),
            ("ReviewItem", "fingerprint"),
            ("ReviewItem", "status"),
        ),
        unique=(
            ("Memory", "id"), ("StoreKey", "key"), ("Pending", "key"), ("_Meta", "key"),
            ("StewardRun", "id"), ("Finding", "id"), ("Audit", "id"),
            ("Document", "path"), ("Section", "key"), ("Chunk", "id"),
            ("Entity", "id"), ("EntityAlias", "norm"), ("Fact", "id"),
            ("Session", "id"), ("ReviewItem", "id"),
        ),
    ),
)  # fmt: skip


def vector_set_index(conn: FalkorConnection, label: str) -> None:
    """A vector set's id index (its vectors stay unindexed: searched in process)."""
    ensure_index(conn, label, "id")


def _indexes(conn: FalkorConnection) -> set[tuple[str, str]]:
    rows = conn.read("CALL db.indexes() YIELD label, properties RETURN label, properties")
    return {(label, prop) for label, props in rows for prop in props}


def ensure_index(conn: FalkorConnection, label: str, prop: str) -> None:
    """The index, made unless there; another node making it at the same moment is fine."""
    if (label, prop) not in _indexes(conn):
        try:
            conn.schema(f"CREATE INDEX FOR (n:{label}) ON (n.{prop})")
        except StorageError as exc:
            if "already indexed" not in exc.message:
                raise


def _constraints(conn: FalkorConnection) -> dict[tuple[str, str], str]:
    rows = conn.read(
        "CALL db.constraints() YIELD type, label, properties, status "
        "RETURN type, label, properties, status"
    )
    return {(label, props[0]): status for kind, label, props, status in rows if kind == "UNIQUE"}


def _ensure_unique(conn: FalkorConnection, label: str, prop: str) -> None:
    if (label, prop) not in _constraints(conn):
        conn.command(
            "GRAPH.CONSTRAINT", "CREATE", conn.url.graph_key, "UNIQUE", "NODE", label,
            "PROPERTIES", 1, prop,
        )  # fmt: skip


def _wait_operational(conn: FalkorConnection, wanted: set[tuple[str, str]]) -> None:
    deadline = time.monotonic() + CONSTRAINT_TIMEOUT
    while True:
        found = _constraints(conn)
        failed = [k for k in wanted if found.get(k) == "FAILED"]
        if failed:
            raise SchemaError(f"the server could not hold unique {failed}: duplicates exist")
        if all(found.get(k) == "OPERATIONAL" for k in wanted):
            return
        if time.monotonic() > deadline:
            raise SchemaError(f"the unique constraints {sorted(wanted)} are still being built")
        time.sleep(0.02)


@contextmanager
def _migration_lease(conn: FalkorConnection) -> Iterator[None]:
    """One node migrates a graph at a time; the others wait, then find the steps applied."""
    lease = Lease(conn, "migrate", ttl=MIGRATION_LEASE_SECONDS)
    deadline = time.monotonic() + MIGRATION_LEASE_SECONDS
    while not lease.acquire():
        if time.monotonic() > deadline:
            raise SchemaError(f"another node has been migrating {conn.url} for too long")
        time.sleep(0.05)
    try:
        yield
    finally:
        lease.release()


def _applied(conn: FalkorConnection) -> dict[int, MigrationInfo]:
    rows = conn.read("MATCH (m:_Migration) RETURN m.version, m.name, m.applied_at")
    return {v: MigrationInfo(version=v, name=n, applied_at=aware(a)) for v, n, a in rows}


def migration_status(conn: FalkorConnection) -> DbStatus:
    applied = _applied(conn)
    latest = STEPS[-1].version
    return DbStatus(
        path=str(conn.url),
        schema_version=max(applied, default=0),
        latest_version=latest,
        applied=[applied[v] for v in sorted(applied)],
        pending=[
            MigrationInfo(version=s.version, name=s.name) for s in STEPS if s.version not in applied
        ],
    )


def migrate(conn: FalkorConnection) -> list[MigrationInfo]:
    """Apply the steps not applied yet, in order; SchemaError for a graph newer than this
    graphmem, or a constraint the data already breaks."""
    with conn.writer_paused(), _migration_lease(conn):
        applied = _applied(conn)
        newest = max(applied, default=0)
        if newest > STEPS[-1].version:
            raise SchemaError(
                f"graph {conn.url} has schema version {newest}, newer than this graphmem "
                f"understands ({STEPS[-1].version}); upgrade graphmem",
                store_version=newest,
                supported_version=STEPS[-1].version,
            )
        done = []
        for step in STEPS:
            if step.version in applied:
                continue
            for label, prop in step.indexes:
                ensure_index(conn, label, prop)
            for label, prop in step.unique:
                _ensure_unique(conn, label, prop)
            _wait_operational(conn, set(step.unique))
            with conn.transaction():
                conn.write(
                    "MERGE (m:_Migration {version: $v}) SET m.name = $n, m.applied_at = $t",
                    {"v": step.version, "n": step.name, "t": micros(utcnow())},
                )
                conn.meta_set(SCHEMA_VERSION, str(step.version))
            done.append(MigrationInfo(version=step.version, name=step.name))
        return done
