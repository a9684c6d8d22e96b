"""ChangeFollower: keeps one node's search state in step with the writes of the other nodes,
from the graph's change stream (docs/adr/0011-falkordb-engine.md).

One thread per store blocks on XREAD from the last entry it applied. For each batch it reads
which of the entries' markers (`_Txn`) exist (one read): an entry whose commit failed has none
and is skipped. The others' events go to the listeners (the search state) as a commit's would,
under this node's writer lock, and move its write generation, so that answers cached until the
next write are computed again. Its own entries it skips: it took them in at commit.

It starts at the stream's newest entry when the store opens; the search state, read lazily
from the scans, holds whatever landed before. An entry that lands between the two reads is
taken in twice: a memory row written again replaces itself, and a vector appended twice keeps
its latest row (graphmem.indexes.row_ids).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import redis

from graphmem.errors import StorageError
from graphmem.indexes.changes import ChangeListener
from graphmem.storage.falkordb import stream
from graphmem.storage.falkordb.connection import FalkorConnection
from graphmem.storage.falkordb.lease import Lease
from graphmem.storage.falkordb.stream import RESET
from graphmem.storage.falkordb.trim import TRIMMED_SUFFIX, trim

BLOCK_MS = 500  # an XREAD waits this long for an entry before it looks at `stop` again
BATCH = 256  # entries read at once
RETRY_SECONDS = 1.0  # after the server failed a read
TRIM_EVERY_SECONDS = 60.0  # how often a node tries to take the `trim` lease and trim

log = logging.getLogger("graphmem.storage")


class ChangeFollower:
    def __init__(
        self, conn: FalkorConnection, listener: ChangeListener, *, since: str | None = None
    ) -> None:
        """`since`: the entry after which to apply the stream (what the listener holds is
        exact up to it); by default, the newest entry (it holds nothing yet)."""
        self.conn = conn
        self.listener = listener
        self.applied = 0  # entries of other nodes taken in
        self.skipped = 0  # entries whose commit did not land
        self.rebuilt = 0  # times the stream was trimmed past what this node had read
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._client: Any = conn.stream_client()
        if since is None:
            newest = self._client.xrevrange(conn.stream_key, count=1)
            since = _text(newest[0][0]) if newest else "0-0"
        self.last: str = since

    def start(self) -> ChangeFollower:
        self._thread = threading.Thread(target=self._run, name="graphmem-follower", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread; the client stays open for `catch_up`."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(BLOCK_MS / 1000 * 4)
            self._thread = None

    def catch_up(self) -> str | None:
        """Take in what the stream holds now; returns the entry up to which the listener is
        exact (None when the server could not be read). Call it stopped, with the writer
        paused, so that no commit lands after it unread."""
        try:
            while True:
                read = self.last
                self.poll()
                if self.last == read:
                    return read
        except (redis.RedisError, OSError, StorageError):
            return None

    def close(self) -> None:
        self.stop()
        self._client.close()

    def _run(self) -> None:
        next_trim = time.monotonic() + TRIM_EVERY_SECONDS
        while not self._stop.is_set():
            try:
                self.poll(block_ms=BLOCK_MS)
                if time.monotonic() >= next_trim:  # once per store: the `trim` lease's node
                    next_trim = time.monotonic() + TRIM_EVERY_SECONDS
                    if Lease(self.conn, "trim", ttl=TRIM_EVERY_SECONDS).acquire():
                        trim(self.conn)
            except (redis.RedisError, OSError, StorageError) as exc:  # the server is away
                if self._stop.is_set() or self.conn.closed:
                    return
                log.warning("change stream of %s: %s; retrying", self.conn.url, exc)
                self._stop.wait(RETRY_SECONDS)

    def poll(self, *, block_ms: int | None = None) -> int:
        """Read and apply what the stream holds after `last` (waiting up to `block_ms` for
        the first entry); returns how many entries of other nodes were applied."""
        if self._trimmed_past():
            # entries this node never read are gone: what it holds may be behind, for good
            with self.conn.writer_paused():
                self.listener.discard()
                self.conn.others_committed()
            self.rebuilt += 1
        found = self._client.xread({self.conn.stream_key: self.last}, count=BATCH, block=block_ms)
        entries = [(_text(i), fields) for _key, batch in found or [] for i, fields in batch]
        if not entries:
            return 0
        decoded = [
            (entry_id, *stream.decode(fields), stream.entity_part(fields))
            for entry_id, fields in entries
        ]
        theirs = [d for d in decoded if d[2] != self.conn.node_id]
        landed = self._landed([d[1] for d in theirs if d[1] != RESET])
        applied = 0
        with self.conn.writer_paused():
            for _entry_id, txn, _node, changes, (entity_graph, said) in theirs:
                if txn != RESET and txn not in landed:
                    self.skipped += 1
                    continue
                if entity_graph:  # the entity index takes it in, or reads the graph again
                    self.conn.entity_log.committed_elsewhere(said)
                if txn == RESET:  # a caller's query wrote: anything may have changed
                    self.listener.discard()
                    applied += 1
                    continue
                for change in changes:
                    self.listener.changed(change)
                    self.listener.committed(change)
                applied += 1
            if applied:
                self.conn.others_committed()
            self.last = entries[-1][0]
        self.applied += applied
        return applied

    def _trimmed_past(self) -> bool:
        """Whether trimming took an entry after `last` before this node read it: the newest
        entry trimmed is recorded beside the stream (graphmem.storage.falkordb.trim)."""
        trimmed = self._client.get(self.conn.url.key(TRIMMED_SUFFIX))
        if trimmed is None or _id(_text(trimmed)) <= _id(self.last):
            return False
        self.last = _text(trimmed)  # what is left after it is read as usual
        return True

    def _landed(self, txns: list[str]) -> set[str]:
        if not txns:
            return set()
        rows = self.conn.read("UNWIND $ids AS i MATCH (t:_Txn {id: i}) RETURN t.id", {"ids": txns})
        return {row[0] for row in rows}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _id(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)
