"""KuzuConnection: the one Kùzu Database of a data dir, its lock, its transactions and the change
events its writers emit. It runs LadybugDB, Kùzu's fork, the same way (`engines`): same API,
same Cypher. Every repository of the store (graphmem.storage.kuzu.store) holds this one.

Kùzu 0.11.3 allows one read-write Database per file (a second process gets "Could not set lock") and
one write transaction per Database (a concurrent writer fails at once). So a store opens the file
once (graphmem.storage.locking: one process at a time, waiting briefly for another, naming it when
it gives up) and serialises every use of its connection behind one lock.

Kùzu 0.11.3 deadlocks when it checkpoints while another connection is reading: the checkpoint
waits for the read's transaction, the read waits for the checkpoint, and after 5 s the checkpoint
fails, and with it the commit that triggered it (its rows are lost). So the Database opens with
Kùzu's own checkpoints off, and every checkpoint here first waits for reads in flight and holds new
ones back: when the log passes CHECKPOINT_WAL_BYTES, at a COPY's commit, for a backup and at close.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import uuid
import warnings
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

import pyarrow as pa

from graphmem.errors import InvalidInput, StorageError
from graphmem.indexes.changes import Change, ChangeListener
from graphmem.indexes.entity_index import EntityChange
from graphmem.indexes.entity_log import EntityLog
from graphmem.models import CypherResult
from graphmem.storage import engines
from graphmem.storage.engines import Engine
from graphmem.storage.kuzu.opening import open_database, release
from graphmem.storage.kuzu.values import jsonable, stored_params, type_key

if TYPE_CHECKING:
    import kuzu

READ_CONNECTIONS = 4  # reads run beside the one writer, each on its own connection
ALL_CORES = os.cpu_count() or 1  # what a read may use (Kùzu's own default)
_background = threading.local()  # reads of this thread run on one core (see `background`)


def _threads() -> int:
    """The cores a query of this thread may use."""
    return 1 if getattr(_background, "on", False) else ALL_CORES


CHECKPOINT_WAL_BYTES = 16 * 1024 * 1024  # Kùzu's own default threshold
CONTENT_STAMP = "content_stamp"  # _Meta key, changed by every write to memory text or vectors
_T = TypeVar("_T")
_TXN_CONTROL = re.compile(r"(^|;)\s*(BEGIN|COMMIT|ROLLBACK|CHECKPOINT)\b", re.IGNORECASE)
_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


log = logging.getLogger("graphmem.storage")


class KuzuConnection:
    """One data dir's database; every method is safe to call from several threads."""

    def __init__(
        self,
        home: Path,
        db: kuzu.Database,
        conn: kuzu.Connection,
        open_lock: int,
        engine: Engine = engines.KUZU,
    ) -> None:
        self.home = home
        self.engine = engine
        self._db: kuzu.Database | None = db
        self._open_lock = open_lock  # the fd holding opening.OPEN_LOCK, closed after the Database
        self._conn = conn
        self._lock = threading.RLock()
        self._in_txn = False
        self._txn_thread: int | None = None
        self._prepared: dict[tuple[Any, ...], Any] = {}
        self._tables: frozenset[str] | None = None  # table names, until the schema changes
        self._read_idle: list[kuzu.Connection] = []
        self._read_gate = threading.Condition()  # guards _read_idle and the four fields below
        self._read_tickets = 0  # reads that asked for a pooled connection, in order
        self._reads_done = 0  # reads that finished (ticket t may start once t < done + 4)
        self._reading = 0  # reads in flight on pooled connections
        self._readers_paused_by: int | None = None  # the thread holding new reads back
        self.write_generation = 0  # bumped by every write, so read caches know they are stale
        # commits that changed who mentions what, facts or versions, and what they changed
        self.entity_log = EntityLog()
        self._content_changed = False
        self._stamp: str | None = None  # the committed content stamp, once read
        self._checkpoint_at_commit = False
        self._after_commit: list[Callable[[], None]] = []
        self._memo: dict[str, tuple[tuple[Any, ...], Any]] = {}
        self._listeners: list[ChangeListener] = []  # told of every change event (`emit`)

    def until_write(self, name: str, compute: Callable[[], _T], *also: Hashable) -> _T:
        """`compute()`, kept until the next write (or until `also` changes): for answers that
        every query asks for and only a write can change. The generation is read before
        `compute` runs, so an answer that a write overtook is computed again on the next call."""
        key = (self.write_generation, *also)
        held = self._memo.get(name)
        if held is None or held[0] != key:
            held = self._memo[name] = (key, compute())
        found: _T = held[1]
        return found

    # -- opening and closing ----------------------------------------------------------------

    @classmethod
    def open(cls, home: Path, *, lock_timeout: float = 5.0, engine: str | None = None) -> Self:
        """Open `home` with its own engine; `engine` picks one for a new store, and is refused
        (StorageError naming both) for a store of another engine."""
        home = Path(home)
        chosen = engines.choose(home, engine)
        db, open_lock = open_database(home, lock_timeout, chosen)
        return cls(home, db, chosen.module().Connection(db), open_lock, chosen)

    def close(self) -> None:
        with self._lock:
            if self._db is None:
                return
            with self._readers_paused():  # wait for reads in flight
                # a prepared statement holds its Database: LadybugDB frees the database's
                # address space (1 TiB reserved) only once none is left
                self._prepared.clear()
                for conn in self._read_idle:
                    conn.close()
                self._read_idle.clear()
                self._conn.close()
                db, self._db = self._db, None
                release(self.home, db, self._open_lock)  # only now may another process open it

    @property
    def closed(self) -> bool:
        return self._db is None

    # -- executing --------------------------------------------------------------------------

    def execute(
        self,
        query: str,
        params: dict[str, Any] | None = None,
        *,
        entity_graph: bool = False,
    ) -> list[list[Any]]:
        """Run one statement and return its rows; Kùzu errors become StorageError.

        `entity_graph`: the statement writes the entity graph the multi-hop walk reads
        (mentions, facts and their sources, entities and aliases, versions, or memories deleted
        with their edges), so the in-process entity index must learn of it (`EntityLog`)."""
        with self._lock:
            if self._db is None:
                raise StorageError("store is closed", path=str(self.home))
            if entity_graph:
                self.entity_log.changing()
            self.entity_log.statement(commits=not self._in_txn)
            try:
                result = self._run(self._conn, query, params)
            except RuntimeError as exc:
                raise StorageError(str(exc), query=query[:200]) from exc
            if isinstance(result, list):
                result = result[-1]
            rows = [list(row) for row in result.get_all()]
            if not self._in_txn:
                self._checkpoint_if_due()
                self.entity_log.committed()
            return rows

    def execute_each(
        self,
        query: str,
        rows: Sequence[dict[str, Any]],
        *,
        entity_graph: bool = False,
        **shared: Any,
    ) -> None:
        """Run a write once per row (prepared once), with the row's values and `shared` as
        parameters: for patterns that match several node tables by key, which Kùzu runs from
        an UNWIND as joins over whole tables."""
        for row in rows:
            self.execute(query, {**shared, **row}, entity_graph=entity_graph)

    def _run(self, conn: kuzu.Connection, query: str, params: dict[str, Any] | None) -> Any:
        """Execute with a prepared statement kept per connection: Kùzu spends several
        milliseconds preparing a query, more than most of our reads take to run."""
        if not params:
            return conn.execute(query)
        params = stored_params(params)
        # Kùzu types the parameters when it prepares, so a statement is reused only for values
        # of the same types (a None, an empty list and a list of strings are all different).
        key = (id(conn), query, tuple((k, type_key(v)) for k, v in sorted(params.items())))
        prepared = self._prepared.get(key)
        if prepared is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                prepared = conn.prepare(query, params)
            if len(self._prepared) > 1024:
                self._prepared.clear()
            self._prepared[key] = prepared
        return conn.execute(prepared, params)

    def schema_changed(self) -> None:
        """Prepared statements were planned against the old catalog: drop them."""
        self._prepared.clear()
        self._tables = None

    def read(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """Run a read-only statement on a pooled connection, beside any write in progress.

        Inside this thread's own transaction it uses the writer's connection instead, so a
        transaction sees its own uncommitted rows."""
        if self._txn_thread == threading.get_ident():
            return self.execute(query, params)
        return self._read_pooled(query, params, lambda r: [list(row) for row in r.get_all()])

    def read_tuples(
        self, query: str, params: dict[str, Any] | None = None
    ) -> list[tuple[Any, ...]]:
        """`read` for results of thousands of rows of plain values (ids, names, counts): taken
        through arrow, column by column, in half the time of Kùzu's row iterator."""
        if self._txn_thread == threading.get_ident():
            return [tuple(row) for row in self.execute(query, params)]
        table = self._read_pooled(query, params, lambda r: r.get_as_arrow(chunk_size=100_000))
        return list(zip(*(column.to_pylist() for column in table.columns), strict=True))

    def read_arrow(self, query: str, *, chunk_size: int = 100_000) -> pa.Table:
        """`read` for large results, as one arrow table (no python object per value)."""
        if self._txn_thread == threading.get_ident():
            return self.query_result(query).get_as_arrow(chunk_size=chunk_size)
        return self._read_pooled(query, None, lambda r: r.get_as_arrow(chunk_size=chunk_size))

    def _read_pooled(
        self, query: str, params: dict[str, Any] | None, take: Callable[[Any], _T]
    ) -> _T:
        """Run a read on a pooled connection and `take` what it needs from the result while
        the connection is still held."""
        with self._pooled() as conn:
            try:
                result = self._run(conn, query, params)
                return take(result[-1] if isinstance(result, list) else result)
            except RuntimeError as exc:
                raise StorageError(str(exc), query=query[:200]) from exc

    @contextmanager
    def _pooled(self) -> Iterator[kuzu.Connection]:
        """A pooled connection, in the order reads asked for one: a read that keeps coming back
        cannot take the place of one that waits (with a plain semaphore it could, for good)."""
        with self._read_gate:
            ticket = self._read_tickets
            self._read_tickets += 1
            try:
                while (
                    self._readers_paused_by is not None
                    or ticket >= self._reads_done + READ_CONNECTIONS
                    or self._reading >= READ_CONNECTIONS
                ):
                    self._read_gate.wait()
                if self._db is None:
                    raise StorageError("store is closed", path=str(self.home))
            except BaseException:  # the ticket is spent: it must not hold the ones after it
                self._reads_done += 1
                self._read_gate.notify_all()
                raise
            conn = (
                self._read_idle.pop()
                if self._read_idle
                else self.engine.module().Connection(self._db)
            )
            self._reading += 1
        try:
            conn.set_max_threads_for_exec(_threads())
            yield conn
        finally:
            with self._read_gate:
                self._read_idle.append(conn)
                self._reading -= 1
                self._reads_done += 1
                self._read_gate.notify_all()

    @contextmanager
    def background(self) -> Iterator[None]:
        """The reads and transactions this thread makes meanwhile run on one core: a long scan
        of the steward's leaves the other cores to the recalls an agent waits for (on two
        cores, a recall's query beside a scan using both took 1.2 s instead of 50 ms)."""
        previous = getattr(_background, "on", False)
        _background.on = True
        try:
            yield
        finally:
            _background.on = previous

    def query_result(self, query: str, params: dict[str, Any] | None = None) -> kuzu.QueryResult:
        with self._lock:
            try:
                result = self._conn.execute(query, stored_params(params or {}))
            except RuntimeError as exc:
                raise StorageError(str(exc), query=query[:200]) from exc
            return result[-1] if isinstance(result, list) else result

    @contextmanager
    def transaction(self, *, read_only: bool = False) -> Iterator[None]:
        """One write (or read-only) transaction; nested use joins the outer one."""
        with self._lock:
            if self._in_txn:
                yield
                return
            self._in_txn = True  # first: `execute` checkpoints only outside a transaction
            try:
                self._conn.set_max_threads_for_exec(_threads())
                self.execute("BEGIN TRANSACTION READ ONLY" if read_only else "BEGIN TRANSACTION")
            except BaseException:
                self._in_txn = False
                raise
            self._txn_thread = threading.get_ident()
            try:
                yield
            except BaseException:
                self._in_txn = False
                self._txn_thread = None
                self._content_changed = False
                self.entity_log.rolled_back()
                self._checkpoint_at_commit = False
                self._after_commit.clear()
                # Kùzu may already have rolled back the failed statement's transaction
                with suppress(RuntimeError):
                    self._conn.execute("ROLLBACK")
                self.schema_changed()  # a table created in the transaction is gone
                self._discard()
                raise
            if self._content_changed:
                self._stamp_content()
            self._in_txn = False
            self._txn_thread = None
            if self._checkpoint_at_commit:
                self._checkpoint_at_commit = False
                with self._readers_paused():
                    self.execute("COMMIT")
                    if not self.engine.copy_commit_checkpoints:
                        self._conn.execute("CHECKPOINT")
            else:
                self.execute("COMMIT")
            self.write_generation += 1
            callbacks, self._after_commit = self._after_commit, []
            for callback in callbacks:
                callback()

    @contextmanager
    def described_entity_writes(self) -> Iterator[None]:
        """A transaction whose writes to the entity graph are the `EntityChange`s emitted in
        it; emitting none says they are not described, and an index that meets the commit
        reads the graph again."""
        with self.transaction(), self.entity_log.describing():
            yield

    def listen(self, listener: ChangeListener) -> None:
        """Tell `listener` of every change event, and of every rollback."""
        self._listeners.append(listener)

    def emit(self, change: Change) -> None:
        """A write's change event, in the transaction that writes it (see
        graphmem.indexes.changes): each listener takes it in now and once it commits. An
        `EntityChange` goes to the entity log, which keeps it with its commit."""
        with self._lock:
            if isinstance(change, EntityChange):
                self.entity_log.describe(change)
                return
            if change.stamps:
                self.content_changed()
            for listener in self._listeners:
                listener.changed(change)

            def committed() -> None:
                for listener in self._listeners:
                    listener.committed(change)

            self.after_commit(committed)

    def _discard(self) -> None:
        for listener in self._listeners:
            listener.discard()

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run `callback` once this thread's transaction commits (now, outside of one)."""
        with self._lock:
            if self._in_txn:
                self._after_commit.append(callback)
                return
        callback()

    def checkpoint_at_commit(self) -> None:
        """This transaction ran a COPY: Kùzu checkpoints when it commits, even with its own
        checkpoints off, so the commit waits for reads in flight and holds new ones back."""
        self._checkpoint_at_commit = True

    def checkpoint(self) -> None:
        """Write the log into the database file, with no read in flight (see the module doc)."""
        with self._lock:
            if self._in_txn:
                raise StorageError("cannot checkpoint inside a transaction", path=str(self.home))
            with self._readers_paused():
                try:
                    self._conn.execute("CHECKPOINT")
                except RuntimeError as exc:
                    raise StorageError(str(exc), query="CHECKPOINT") from exc

    def _checkpoint_if_due(self) -> None:
        """After a write has committed: a failure here must not report the write as failed;
        the log stays complete and the next write tries again."""
        try:
            due = (self.home / self.engine.wal_file).stat().st_size > CHECKPOINT_WAL_BYTES
        except OSError:  # no log: nothing written since the last checkpoint
            return
        if due:
            try:
                self.checkpoint()
            except StorageError as exc:
                log.warning("checkpoint of %s failed, will retry: %s", self.home, exc)

    @contextmanager
    def _readers_paused(self) -> Iterator[None]:
        """Wait for reads in flight and hold new ones back; reads that keep coming cannot
        starve the pausing thread."""
        me = threading.get_ident()
        with self._read_gate:
            nested = self._readers_paused_by == me
            if not nested:
                while self._readers_paused_by is not None:
                    self._read_gate.wait()
                self._readers_paused_by = me
                while self._reading:
                    self._read_gate.wait()
        if nested:
            yield
            return
        try:
            yield
        finally:
            with self._read_gate:
                self._readers_paused_by = None
                self._read_gate.notify_all()

    def content_changed(self) -> None:
        """Memories' text or vectors changed: caches saved on disk for an older stamp are stale.
        Inside a transaction the new stamp commits with it."""
        with self._lock:
            if self._in_txn:
                self._content_changed = True
            else:
                self._stamp_content()

    def _stamp_content(self) -> None:
        self._content_changed = False
        self._stamp = None  # read again: a new stamp counts once its transaction commits
        self.meta_set(CONTENT_STAMP, uuid.uuid4().hex)

    def content_stamp(self) -> str:
        """Read once until the next write (this process is the only writer), on a pooled
        connection: callers may hold locks a writer is waiting on."""
        if self._stamp is None:
            rows = self.read("MATCH (m:_Meta {key: $k}) RETURN m.value", {"k": CONTENT_STAMP})
            self._stamp = rows[0][0] if rows else ""
        return self._stamp

    @contextmanager
    def writer_paused(self) -> Iterator[None]:
        """Hold the writer's lock: no write starts or commits meanwhile; reads go on."""
        with self._lock:
            yield

    def cypher(self, query: str, params: dict[str, Any], *, write: bool) -> CypherResult:
        """Run a caller's Cypher; read-only mode runs it in a read-only transaction."""
        if not query.strip():
            raise InvalidInput("query is empty")
        if _TXN_CONTROL.search(_STRING_LITERAL.sub("''", query)):
            raise InvalidInput(
                "transaction control (BEGIN/COMMIT/ROLLBACK/CHECKPOINT) is not allowed here"
            )
        with self._lock:
            try:
                if write:
                    self.entity_log.unknown_commit()
                    result = self._conn.execute(query, stored_params(params))
                    self._checkpoint_if_due()
                    self.write_generation += 1
                    self.entity_log.committed()
                    self._stamp_content()
                    self.schema_changed()  # the caller may have changed tables
                    self._discard()  # a caller's write may touch anything held in process
                else:
                    with self.transaction(read_only=True):
                        result = self._conn.execute(query, stored_params(params))
            except RuntimeError as exc:
                if "read-only transaction" in str(exc):
                    raise InvalidInput(
                        "this query writes to the store, and writes were not allowed for this call",
                        read_only=True,
                    ) from exc
                raise InvalidInput(f"Cypher error: {exc}") from exc
            if isinstance(result, list):
                result = result[-1]
            columns = result.get_column_names()
            rows = [[jsonable(v) for v in row] for row in result.get_all()]
        return CypherResult(columns=columns, rows=rows)

    # -- metadata --------------------------------------------------------------

    def table_names(self) -> frozenset[str]:
        """Kept until the schema changes: recall asks on every query."""
        tables = self._tables
        if tables is None:
            tables = frozenset(row[0] for row in self.execute("CALL show_tables() RETURN name"))
            self._tables = tables
        return tables

    def meta_get(self, key: str) -> str | None:
        rows = self.execute("MATCH (m:_Meta {key: $k}) RETURN m.value", {"k": key})
        return rows[0][0] if rows else None

    def meta_set(self, key: str, value: str) -> None:
        self.execute("MERGE (m:_Meta {key: $k}) SET m.value = $v", {"k": key, "v": value})
