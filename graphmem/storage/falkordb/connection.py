"""FalkorConnection: one graph on a FalkorDB server (`store_url`), its transactions and the
change events its writers emit. Every repository of the FalkorDB store holds this one.

FalkorDB is atomic per query and has nothing across queries (docs/adr/0011-falkordb-engine.md,
each claim probed in tests/servers/test_falkordb_transactions.py). So:

- A transaction buffers its thread's write statements (which return nothing) and, at its end,
  chains them into one query, each followed by `WITH count(*) AS _<n>`: all of them or none.
- When the transaction emitted change events, the query also moves the content stamp and
  creates a marker node `(:_Txn {id})`, and one MULTI/EXEC sends it with the XADD of the
  events to the graph's change stream (graphmem.storage.falkordb.stream). A follower applies
  an entry only once it has read its marker, so an entry whose query failed is never applied.
- Reads go to the server through GRAPH.RO_QUERY and see committed data. A read from a thread
  whose transaction has buffered writes raises StorageError: it would not see them.
- One writer per node (a lock); the server orders the nodes' commits.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import redis
from falkordb import FalkorDB
from falkordb.helpers import stringify_param_value
from falkordb.query_result import QueryResult
from redis.cluster import RedisCluster

from graphmem.errors import Conflict, InvalidInput, StorageError
from graphmem.indexes.changes import Change, ChangeListener
from graphmem.indexes.entity_index import EntityChange
from graphmem.indexes.entity_log import EntityLog
from graphmem.models import CypherResult, utcnow
from graphmem.storage import locking
from graphmem.storage.falkordb import stream
from graphmem.storage.falkordb.values import micros, renamed, stored, stored_params
from graphmem.store_url import StoreUrl

CONTENT_STAMP = "content_stamp"  # _Meta key, changed by every write to memory text or vectors
STREAM_SUFFIX = "changes"
STREAM_MAXLEN = 100_000  # entries kept at most (approximate); trimming by age is the lease's
CONNECT_TIMEOUT = 5.0
WAIT_MS = 5000  # how long a commit waits for its replicas (durability = "replicated")
EMPTY_KEY = "empty key"  # what a read of a graph that does not exist yet answers
_T = TypeVar("_T")

log = logging.getLogger("graphmem.storage")


@dataclass
class _Transaction:
    thread: int
    statements: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    stamps: bool = False
    after: list[Callable[[], None]] = field(default_factory=list)


def _header(params: dict[str, Any]) -> str:
    """FalkorDB's parameters: a `CYPHER name=value ...` prefix of the query text."""
    if not params:
        return ""
    return "CYPHER " + " ".join(f"{k}={stringify_param_value(v)}" for k, v in params.items()) + " "


class FalkorConnection:
    """One graph of one server; every method is safe to call from several threads."""

    def __init__(
        self, url: StoreUrl, home: Path, db: FalkorDB, open_lock: int, *, replicas: int = 0
    ) -> None:
        self.url = url
        self.home = home
        self.replicas = replicas  # a commit is acknowledged once this many replicas have it
        self._open_lock = open_lock  # the data dir's (graphmem.storage.locking), till close
        self.node_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._db: FalkorDB | None = db
        self._graph = db.select_graph(url.graph_key)
        self.stream_key = url.key(STREAM_SUFFIX)
        self._lock = threading.RLock()  # the writer
        self._txn: _Transaction | None = None
        self.write_generation = 0
        self.entity_log = EntityLog()
        self._memo: dict[str, tuple[tuple[Any, ...], Any]] = {}
        self._listeners: list[ChangeListener] = []
        self._labels: frozenset[str] | None = None

    @classmethod
    def open(
        cls, url: StoreUrl, home: Path, *, lock_timeout: float = 5.0, replicas: int = 0
    ) -> FalkorConnection:
        """Connect and check that the server answers and has FalkorDB; StorageError naming the
        address (never the password) otherwise. The data dir is this process's while open, as
        an embedded store's is: its search cache has one writer, and the owner process model
        (one process serves a data dir, the others reach it through that one) holds as is."""
        open_lock = locking.take_open_lock(home, time.monotonic() + lock_timeout)
        try:
            db = cls._connect(url)
        except BaseException:
            os.close(open_lock)
            raise
        locking.write_holder(home)
        return cls(url, home, db, open_lock, replicas=replicas)

    @staticmethod
    def _connect(url: StoreUrl) -> FalkorDB:
        try:
            db = FalkorDB(
                host=url.host, port=url.port, username=url.username, password=url.password,
                ssl=url.tls, socket_connect_timeout=CONNECT_TIMEOUT,
            )  # fmt: skip
            db.connection.ping()
            modules = db.connection.execute_command("MODULE", "LIST")
        except redis.AuthenticationError as exc:
            raise StorageError(
                f"{url} refused the user and password: {exc}", store=str(url)
            ) from None
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise StorageError(f"cannot reach {url}: {exc}", store=str(url)) from None
        names = {str(_field(m, "name")).lower() for m in modules or []}
        if "graph" not in names:
            db.connection.close()
            raise StorageError(f"{url} answers but has no FalkorDB module loaded", store=str(url))
        return db

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.connection.close()
                self._db = None
                locking.forget_holder(self.home)
                os.close(self._open_lock)  # only now may another process serve the data dir

    @property
    def closed(self) -> bool:
        return self._db is None

    @property
    def client(self) -> redis.Redis:
        if self._db is None:
            raise StorageError("store is closed", store=str(self.url))
        client: redis.Redis = self._db.connection
        return client

    def stream_client(self) -> redis.Redis:
        """A client of its own that returns bytes (a stream entry's vectors are raw float32),
        for the follower's blocking reads."""
        url = self.url
        options: dict[str, Any] = {
            "host": url.host, "port": url.port, "username": url.username,
            "password": url.password, "ssl": url.tls,
            "socket_connect_timeout": CONNECT_TIMEOUT, "decode_responses": False,
        }  # fmt: skip
        if isinstance(self.client, RedisCluster):  # routed by the key's slot, as the client is
            cluster: redis.Redis = RedisCluster(**options)
            return cluster
        sentinel = getattr(self._db, "sentinel", None)
        if sentinel is not None:  # the primary the sentinel names now, and after a failover
            del options["host"], options["port"]
            master: redis.Redis = sentinel.master_for(self._db.service_name, **options)  # type: ignore[union-attr]
            return master
        return redis.Redis(**options)

    def others_committed(self) -> None:
        """Another node's commits were taken in: answers kept until a write are stale."""
        with self._lock:
            self.write_generation += 1
            self._labels = None

    def buffered(self) -> bool:
        """Whether this thread's transaction holds writes (which its reads would not see)."""
        txn = self._txn
        return txn is not None and txn.thread == threading.get_ident() and bool(txn.statements)

    # -- reads ------------------------------------------------------------------------------

    def read(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """A read-only statement's rows (GRAPH.RO_QUERY), from committed data."""
        if self.buffered():
            raise StorageError(
                "a read inside a transaction that has buffered writes would not see them "
                "(FalkorDB runs a transaction as one query at its end)",
                query=query[:200],
            )
        if self._db is None:
            raise StorageError("store is closed", store=str(self.url))
        try:
            rows: list[list[Any]] = self._graph.ro_query(query, stored_params(params)).result_set
        except redis.ResponseError as exc:
            if EMPTY_KEY in str(exc):  # no graph yet: a store not migrated holds nothing
                return []
            raise StorageError(str(exc), query=query[:200]) from exc
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise StorageError(f"{self.url}: {exc}", query=query[:200]) from exc
        return rows

    def labels(self) -> frozenset[str]:
        """Node labels in the graph, kept until a write may have made one."""
        labels = self._labels
        if labels is None:
            labels = frozenset(row[0] for row in self.read("CALL db.labels()"))
            self._labels = labels
        return labels

    def until_write(self, name: str, compute: Callable[[], _T], *also: Hashable) -> _T:
        """`compute()`, kept until this node's next write (or until `also` changes)."""
        key = (self.write_generation, *also)
        held = self._memo.get(name)
        if held is None or held[0] != key:
            held = self._memo[name] = (key, compute())
        found: _T = held[1]
        return found

    # -- writes and transactions ------------------------------------------------------------

    def write(
        self, query: str, params: dict[str, Any] | None = None, *, entity_graph: bool = False
    ) -> None:
        """Add a write statement to this thread's transaction (one of its own outside of one).
        It returns nothing: its rows would only come at the commit."""
        with self._lock:
            if self._txn is None:
                with self.transaction():
                    self.write(query, params, entity_graph=entity_graph)
                return
            if entity_graph:
                self.entity_log.changing()
            self._txn.statements.append((query, stored_params(params)))

    @contextmanager
    def transaction(self, *, read_only: bool = False) -> Iterator[None]:
        """Buffer this thread's writes and send them as one query when the block ends; nested
        use joins the outer one. A read-only transaction is only the writer's lock: reads see
        committed data either way."""
        with self._lock:
            if self._txn is not None:
                yield
                return
            txn = self._txn = _Transaction(threading.get_ident())
            confirmed = self.replicas
            try:
                yield
                if txn.statements or txn.changes:
                    self.entity_log.statement(commits=True)
                    confirmed = self._commit(txn)
            except BaseException:
                self._txn = None
                self.entity_log.rolled_back()
                self.entity_log.committed()  # a failed commit's changes are unknown
                for listener in self._listeners:
                    listener.discard()
                raise
            self._txn = None
            if txn.statements or txn.changes:
                self.write_generation += 1
                self._labels = None
                self.entity_log.committed()
            for callback in txn.after:
                callback()
            if confirmed < self.replicas:  # committed, and this node's state knows it
                raise StorageError(
                    f"the write is on the primary of {self.url}, but {confirmed} of "
                    f"{self.replicas} replicas confirmed it within {WAIT_MS} ms: it is lost "
                    "if the primary fails before they have it",
                    written=True, confirmed=confirmed, replicas=self.replicas,
                )  # fmt: skip

    def _commit(self, txn: _Transaction) -> int:
        """Send the transaction; returns how many replicas confirmed it (WAIT, when the store
        asks for replicas: on the same connection as the write, which is what WAIT counts)."""
        parts, params = [], {}
        statements = list(txn.statements)
        entry: dict[str, bytes] | None = None
        entity_graph = self.entity_log.this_transaction()
        if txn.changes or entity_graph[0]:  # the other nodes learn of it
            marker = uuid.uuid4().hex
            if txn.stamps:
                statements.append(
                    (
                        "MERGE (m:_Meta {key: $k}) SET m.value = $v",
                        {"k": CONTENT_STAMP, "v": uuid.uuid4().hex},
                    )
                )
            statements.append(
                ("CREATE (:_Txn {id: $id, at: $at})", {"id": marker, "at": micros(utcnow())})
            )
            entry = stream.encode(
                txn.changes, txn=marker, node=self.node_id, entity_graph=entity_graph
            )
        for n, (statement, values) in enumerate(statements):
            if n:
                parts.append(f"WITH count(*) AS _{n - 1}")
            query, named = renamed(statement, values, f"s{n}_")
            parts.append(query)
            params.update(named)
        command = _header(params) + " ".join(parts)
        try:
            return self._send(command, entry)[1]
        except redis.ResponseError as exc:
            if "unique constraint violation" in str(exc):
                raise Conflict(f"the commit met another node's write: {exc}") from exc
            raise StorageError(str(exc), query=command[-300:]) from exc
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise StorageError(
                f"{self.url}: {exc}; the transaction's outcome is unknown", query=command[-300:]
            ) from exc

    def _send(self, command: str, entry: dict[str, bytes] | None) -> tuple[Any, int]:
        """GRAPH.QUERY `command` and XADD `entry` in one MULTI/EXEC; returns the query's reply
        and how many replicas confirmed them (WAIT, when the store asks for replicas: on the
        same connection as the write, which is what WAIT counts). Raises the first error."""
        client: Any = self.client  # redis-py's command methods are untyped
        cluster = isinstance(client, RedisCluster)  # routes a MULTI/EXEC by its key's slot
        if cluster and self.replicas:  # the graph's shard, on a connection WAIT can count
            client = client.get_node_from_key(self.url.graph_key).redis_connection
            cluster = False
        pipe: Any = client.pipeline(transaction=cluster)
        if not cluster:  # MULTI/EXEC by hand, so that a WAIT follows on the connection
            pipe.execute_command("MULTI")
        pipe.execute_command("GRAPH.QUERY", self.url.graph_key, command, "--compact")
        if entry is not None:
            pipe.xadd(self.stream_key, entry, maxlen=STREAM_MAXLEN, approximate=True)
        if not cluster:
            pipe.execute_command("EXEC")
            if self.replicas:
                pipe.execute_command("WAIT", self.replicas, WAIT_MS)
        replies = pipe.execute(raise_on_error=False)
        done = replies if cluster else replies[-2] if self.replicas else replies[-1]
        for reply in (*replies, *(done if isinstance(done, list) else ())):
            if isinstance(reply, Exception):
                raise reply
        return done[0], int(replies[-1]) if self.replicas and not cluster else 0

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run `callback` once this thread's transaction commits (now, outside of one)."""
        with self._lock:
            if self._txn is not None:
                self._txn.after.append(callback)
                return
        callback()

    def listen(self, listener: ChangeListener) -> None:
        self._listeners.append(listener)

    def emit(self, change: Change) -> None:
        """A write's change event, in the transaction that writes it: the listeners take it in
        now and once it commits, and the commit appends it to the change stream."""
        with self._lock:
            if isinstance(change, EntityChange):
                self.entity_log.describe(change)
                return
            if self._txn is None:
                with self.transaction():
                    self.emit(change)
                return
            self._txn.changes.append(change)
            self._txn.stamps = self._txn.stamps or change.stamps
            for listener in self._listeners:
                listener.changed(change)

            def committed() -> None:
                for listener in self._listeners:
                    listener.committed(change)

            self.after_commit(committed)

    @contextmanager
    def described_entity_writes(self) -> Iterator[None]:
        with self.transaction(), self.entity_log.describing():
            yield

    @contextmanager
    def writer_paused(self) -> Iterator[None]:
        """Hold this node's writer; other nodes write on (the server orders them)."""
        with self._lock:
            yield

    @contextmanager
    def background(self) -> Iterator[None]:
        """Queries run on the server: nothing of this process's cores to spare."""
        yield

    def checkpoint(self) -> None:
        """The server persists what it acknowledged (its AOF): nothing to write here."""
        with self._lock:
            if self._txn is not None:
                raise StorageError("cannot checkpoint inside a transaction", store=str(self.url))

    # -- schema and metadata ----------------------------------------------------------------

    def schema(self, query: str) -> None:
        """An index statement, outside any transaction (FalkorDB builds indexes on its own)."""
        client: Any = self.client
        try:
            client.execute_command("GRAPH.QUERY", self.url.graph_key, query)
        except redis.ResponseError as exc:
            raise StorageError(str(exc), query=query) from exc
        self._labels = None

    def command(self, *args: Any) -> Any:
        """A server command on the graph's key (GRAPH.CONSTRAINT, ...)."""
        client: Any = self.client
        try:
            return client.execute_command(*args)
        except redis.ResponseError as exc:
            raise StorageError(str(exc), command=str(args[0])) from exc

    def server_info(self, section: str) -> dict[str, Any]:
        """INFO `section` of the server holding the graph (its shard, in a cluster)."""
        client: Any = self.client
        if isinstance(client, RedisCluster):
            node = client.get_node_from_key(self.url.graph_key)  # type: ignore[no-untyped-call]
            return dict(client.info(section, target_nodes=node))
        return dict(client.info(section))

    def server_version(self) -> str:
        """The FalkorDB module's version, as MODULE LIST gives it (41603 for 4.16.3)."""
        for module in self.command("MODULE", "LIST") or []:
            if str(_field(module, "name")).lower() == "graph":
                return str(_field(module, "ver"))
        return ""

    def content_stamp(self) -> str:
        rows = self.read("MATCH (m:_Meta {key: $k}) RETURN m.value", {"k": CONTENT_STAMP})
        return str(rows[0][0]) if rows else ""

    def meta_get(self, key: str) -> str | None:
        rows = self.read("MATCH (m:_Meta {key: $k}) RETURN m.value", {"k": key})
        return rows[0][0] if rows else None

    def meta_set(self, key: str, value: str) -> None:
        self.write("MERGE (m:_Meta {key: $k}) SET m.value = $v", {"k": key, "v": value})

    def cypher(self, query: str, params: dict[str, Any], *, write: bool) -> CypherResult:
        """A caller's query in FalkorDB's dialect: GRAPH.RO_QUERY unless `write`. A write may
        change anything: this node drops its search state, to be read again, and appends a
        reset entry, in the same MULTI/EXEC, that has every other node do the same."""
        if not query.strip():
            raise InvalidInput("query is empty")
        command = "GRAPH.QUERY" if write else "GRAPH.RO_QUERY"
        with self._lock:
            try:
                if write:
                    self.entity_log.unknown_commit()
                values = {k: stored(v) for k, v in params.items()}
                if write:  # the write and the reset entry the other nodes read, at once
                    reply, _ = self._send(
                        _header(values) + query, stream.reset_entry(node=self.node_id)
                    )
                    result = QueryResult(self._graph, reply)
                else:
                    result = self._graph.ro_query(query, values)
            except redis.ResponseError as exc:
                if "read-only" in str(exc):
                    raise InvalidInput(
                        "this query writes to the store, and writes were not allowed for this call",
                        read_only=True,
                    ) from exc
                raise InvalidInput(f"Cypher error ({command}): {exc}") from exc
            finally:
                if write:
                    self.entity_log.committed()
            if write:
                self.write_generation += 1
                self._labels = None
                for listener in self._listeners:
                    listener.discard()
        columns = [str(c[1]) if isinstance(c, list | tuple) else str(c) for c in result.header]
        return CypherResult(
            columns=columns, rows=[[_plain(v) for v in row] for row in result.result_set]
        )


def _field(module: Any, name: str) -> Any:
    """A field of a MODULE LIST entry (a flat list or a dict, by protocol version)."""
    if isinstance(module, dict):
        return module.get(name) or module.get(name.encode())
    items = list(module)
    for key, value in zip(items[::2], items[1::2], strict=False):
        if (key.decode() if isinstance(key, bytes) else key) == name:
            return value.decode() if isinstance(value, bytes) else value
    return None


def _plain(value: Any) -> Any:
    """A result value as JSON: nodes and edges as their properties."""
    properties = getattr(value, "properties", None)
    if isinstance(properties, dict):
        return {k: _plain(v) for k, v in properties.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
