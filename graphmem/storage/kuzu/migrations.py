"""Schema migrations of a Kùzu-dialect store: `schema/NNNN_*.cypher` applied in order, one
transaction each, recorded in the `_Migration` table."""

from __future__ import annotations

import re

from graphmem.errors import SchemaError, StorageError
from graphmem.models import DbStatus, MigrationInfo, utcnow
from graphmem.schema import Migration, migrations
from graphmem.storage.kuzu.connection import KuzuConnection

_AUTO_TXN_ONLY = re.compile(
    r"^\s*CALL\s+(CREATE|DROP)_(FTS|VECTOR)_INDEX\s*\(\s*'(\w+)'\s*,\s*'(\w+)'", re.I
)


def _applied(conn: KuzuConnection) -> dict[int, MigrationInfo]:
    if "_Migration" not in conn.table_names():
        return {}
    rows = conn.execute("MATCH (m:_Migration) RETURN m.version, m.name, m.applied_at")
    return {v: MigrationInfo(version=v, name=n, applied_at=a) for v, n, a in rows}


def migration_status(conn: KuzuConnection) -> DbStatus:
    applied = _applied(conn)
    known = migrations()
    latest = known[-1].version if known else 0
    return DbStatus(
        path=str(conn.home),
        schema_version=max(applied, default=0),
        latest_version=latest,
        applied=[applied[v] for v in sorted(applied)],
        pending=[
            MigrationInfo(version=m.version, name=m.name) for m in known if m.version not in applied
        ],
    )


def migrate(conn: KuzuConnection) -> list[MigrationInfo]:
    """Apply pending migrations in order, one transaction each; refuse a newer store."""
    with conn.writer_paused():
        conn.schema_changed()
        if "_Migration" not in conn.table_names():
            conn.execute(
                "CREATE NODE TABLE _Migration(version INT64 PRIMARY KEY, name STRING, "
                "applied_at TIMESTAMP)"
            )
            conn.schema_changed()
        applied = _applied(conn)
        known = migrations()
        latest = known[-1].version if known else 0
        newest = max(applied, default=0)
        if newest > latest:
            raise SchemaError(
                f"store {conn.home} has schema version {newest}, newer than this graphmem "
                f"understands ({latest}); upgrade graphmem",
                store_version=newest,
                supported_version=latest,
            )
        done = []
        for migration in known:
            if migration.version not in applied:
                _apply(conn, migration)
                done.append(MigrationInfo(version=migration.version, name=migration.name))
        _ensure_indexes(conn, known)
        if done:
            # Kùzu 0.11.3 cannot replay a dropped FTS index from its WAL after a crash
            # ("Cannot find table catalog entry"): the schema change goes to disk now.
            conn.checkpoint()
        conn.schema_changed()
        return done


def _apply(conn: KuzuConnection, migration: Migration) -> None:
    try:
        with conn.transaction():
            for statement in migration.statements:
                if not _AUTO_TXN_ONLY.match(statement):
                    conn.execute(statement)
            conn.execute(
                "CREATE (:_Migration {version: $v, name: $n, applied_at: $t})",
                {"v": migration.version, "n": migration.name, "t": utcnow()},
            )
    except StorageError as exc:
        raise SchemaError(
            f"migration {migration.version:04d}_{migration.name} failed: {exc.message}",
            version=migration.version,
        ) from exc


def _ensure_indexes(conn: KuzuConnection, applied: list[Migration]) -> None:
    """Index DDL is refused inside a transaction, so it follows the migrations' commits;
    this also finishes the job when a crash came between the two. The last word on an index
    wins: one created by an early migration and dropped by a later one is never created
    (a new store once made it and dropped it again, and a kill -9 in between left Kùzu's
    half-made index tables, on which the next open failed)."""
    existing = {row[0] for row in conn.execute("CALL show_indexes() RETURN index_name")}
    last: dict[str, tuple[bool, str]] = {}
    for migration in applied:
        for statement in migration.statements:
            match = _AUTO_TXN_ONLY.match(statement)
            if match:
                last[match[4]] = (match[1].upper() == "CREATE", statement)
    for name, (create, statement) in last.items():
        if create != (name in existing):
            conn.execute(statement)
