"""The owner process: the only holder of a data dir's Kùzu database, serving GraphMemory on a
unix socket (mode 0600) to every CLI call, stdio MCP server and hook of that store.

Requests are handled on threads; the store itself lets one writer in at a time and reads run on
their own connections. The owner exits after an idle timeout, drains in-flight requests on
SIGTERM, reloads live settings on SIGHUP, and removes its pid/socket record on the way out.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import socketserver
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from graphmem.daemon.paths import OwnerInfo, owner_file, socket_path_for, write_owner_record
from graphmem.daemon.protocol import (
    MAX_LINE,
    METHODS,
    decode,
    dumps,
    encode,
    error_payload,
)
from graphmem.errors import GraphmemError, InvalidInput
from graphmem.foreground import FOREGROUND
from graphmem.registry import OPERATIONS
from graphmem.service import GraphMemory
from graphmem.settings import load_settings

if TYPE_CHECKING:
    from graphmem.documents.watcher import DocumentWatcher
    from graphmem.steward.schedule import StewardSchedule

log = logging.getLogger("graphmem.owner")
# long work nobody waits on line by line: it steps aside for the requests that are waited on
# (graphmem/foreground.py)
BACKGROUND = frozenset(op.name for op in OPERATIONS if op.background)


class _Handler(socketserver.StreamRequestHandler):
    server: _OwnerSocketServer

    def handle(self) -> None:
        owner = self.server.owner
        owner.connected(self.connection, True)
        try:
            while not owner.stopping.is_set():
                line = self.rfile.readline(MAX_LINE + 1)
                if not line:
                    return
                if len(line) > MAX_LINE:  # the rest cannot be told from the next request
                    too_big = InvalidInput(f"request over the {MAX_LINE >> 20} MB limit")
                    with contextlib.suppress(OSError):
                        self.wfile.write(dumps({"id": None, "error": error_payload(too_big)}))
                        self.wfile.flush()
                    return
                response = owner.dispatch(line)
                try:
                    self.wfile.write(dumps(response))
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    return
        finally:
            owner.connected(self.connection, False)


class _OwnerSocketServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = False  # server_close() waits for in-flight requests: nothing acked is lost
    block_on_close = True
    request_queue_size = 128  # many agents and hooks may connect at the same moment

    def __init__(self, path: str, owner: Owner) -> None:
        self.owner = owner
        super().__init__(path, _Handler)


class Owner:
    """Serves one GraphMemory until stopped, idle, or signalled."""

    def __init__(self, gm: GraphMemory) -> None:
        self.gm = gm
        self.home = gm.path
        self.stopping = threading.Event()
        self.jobs = ThreadPoolExecutor(max_workers=2, thread_name_prefix="graphmem-job")
        self._active = 0
        self._served = 0
        self._connections: set[socket.socket] = set()
        self._last_request = time.monotonic()
        self._state = threading.Lock()
        self._started = time.time()
        self.socket_path = socket_path_for(self.home)
        self._server: _OwnerSocketServer | None = None
        self._watch: DocumentWatcher | None = None
        self._steward: StewardSchedule | None = None  # started by serve()

    # -- requests ---------------------------------------------------------------------------

    def dispatch(self, line: bytes) -> dict[str, Any]:
        with self._state:
            self._active += 1
            self._served += 1
            self._last_request = time.monotonic()
        request_id: Any = None
        try:
            request = json.loads(line)
            request_id = request.get("id")
            method = request.get("method")
            if method not in METHODS:
                raise InvalidInput(f"unknown method {method!r}", method=method)
            if method == "ping":
                return {"id": request_id, "result": self.status()}
            args = decode(request.get("args", []))
            kwargs = decode(request.get("kwargs", {}))
            waited_for = nullcontext() if method in BACKGROUND else FOREGROUND.request()
            with waited_for:
                result = getattr(self.gm, method)(*args, **kwargs)
            if method == "index_documents":  # new folders may need watching
                self.jobs.submit(self._watch_documents)
            return {"id": request_id, "result": encode(result)}
        except GraphmemError as exc:
            return {"id": request_id, "error": error_payload(exc)}
        except (ValueError, TypeError) as exc:
            return {"id": request_id, "error": error_payload(InvalidInput(f"bad request: {exc}"))}
        except Exception as exc:  # a bug must not take the owner down with it
            log.exception("request failed")
            return {
                "id": request_id,
                "error": {"type": "StorageError", "message": f"{type(exc).__name__}: {exc}"},
            }
        finally:
            with self._state:
                self._active -= 1
                self._last_request = time.monotonic()

    def connected(self, conn: socket.socket, is_open: bool) -> None:
        with self._state:
            if is_open:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)
            self._last_request = time.monotonic()

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "home": str(self.home),
            "socket": self.socket_path,
            "uptime_s": round(time.time() - self._started, 1),
            "requests": self._served,
            "clients": len(self._connections),
            "idle_timeout_s": self.gm.settings.daemon_idle_timeout,
        }

    # -- lifecycle --------------------------------------------------------------------------

    def serve(self) -> None:
        """Bind, record, serve until stopped; always cleans up its record and socket."""
        path = Path(self.socket_path)
        path.unlink(missing_ok=True)
        old_umask = os.umask(0o177)  # the socket is born 0600: only this user can connect
        try:
            self._server = _OwnerSocketServer(str(path), self)
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        info = OwnerInfo(pid=os.getpid(), socket=str(path), started=self._started)
        write_owner_record(self.home, info)
        self._install_signals()
        self._steward = self.gm.start_steward_schedule(self.stopping)
        threading.Thread(target=self._watch_idle, name="graphmem-idle", daemon=True).start()
        self.jobs.submit(self._warm_up)
        try:
            self._server.serve_forever(poll_interval=0.2)
        finally:
            with self._state:
                waiting = list(self._connections)
            for conn in waiting:  # idle readers see EOF; a request in flight still completes
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RD)
            self._server.server_close()  # joins handler threads: queued writes finish
            if self._watch is not None:
                self._watch.stop()
            self.jobs.shutdown(wait=True, cancel_futures=True)
            try:
                record = json.loads(owner_file(self.home).read_text(encoding="utf-8"))
                if record.get("pid") == os.getpid():
                    owner_file(self.home).unlink()
            except (OSError, ValueError):
                pass
            path.unlink(missing_ok=True)
            self.gm.close()

    def stop(self) -> None:
        if not self.stopping.is_set():
            self.stopping.set()
            if self._server is not None:
                # shutdown() waits for serve_forever to return, so never call it on that thread
                threading.Thread(target=self._server.shutdown, daemon=True).start()

    def _warm_up(self) -> None:
        """Load the model, the vectors and the passages before the first recall needs them."""
        try:
            self.gm.embedder.embed_query("warm up")
            self.gm.store.vectors.warm(self.gm.embedder.space)
            # memories written while no owner ran (one-shot CLI calls) are still pending, and
            # an owner stopped early may have left an import's passages
            self.gm.schedule_pending_extraction()
            self.gm.schedule_pending_passages()
            self._watch_documents()
        except GraphmemError as exc:
            log.warning("warm-up failed: %s", exc.message)

    def _watch_documents(self) -> None:
        """Watch the folders of the indexed documents (settings docs_watch), anew after each
        indexing run, which may have added folders."""
        if not self.gm.settings.docs_watch or self.stopping.is_set():
            return
        rels, roots = self.gm.store.documents.indexed_locations()
        if not rels:
            return
        from graphmem.documents.watcher import DocumentWatcher

        if self._watch is not None:
            self._watch.stop()
        self._watch = DocumentWatcher(
            self.home.parent, lambda paths: self.gm.index_documents(paths)
        )
        self._watch.start(rels, roots)

    def _watch_idle(self) -> None:
        while not self.stopping.wait(0.5):
            timeout = self.gm.settings.daemon_idle_timeout
            with self._state:
                idle = (
                    self._active == 0
                    and not self._connections
                    and time.monotonic() - self._last_request > timeout
                )
            # background work (extraction, an import's passages, a steward run) is activity
            idle = idle and self.gm.wait_for_extraction(0) and self.gm.wait_for_passages(0)
            idle = idle and not (self._steward is not None and self._steward.busy)
            if timeout > 0 and idle:
                log.info("idle for %.0fs, exiting", timeout)
                self.stop()

    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        def terminate(signum: int, frame: FrameType | None) -> None:
            self.stop()

        def reload(signum: int, frame: FrameType | None) -> None:
            self.reload()

        signal.signal(signal.SIGTERM, terminate)
        signal.signal(signal.SIGINT, terminate)
        signal.signal(signal.SIGHUP, reload)

    def reload(self) -> None:
        """Apply the settings that can change while running; the rest need a restart."""
        try:
            fresh = load_settings(self.home)
        except GraphmemError as exc:
            log.error("reload failed, keeping the old settings: %s", exc.message)
            return
        live = {
            "recall_recipe": fresh.recall_recipe,
            "log_level": fresh.log_level,
            "daemon_idle_timeout": fresh.daemon_idle_timeout,
            "lock_timeout": fresh.lock_timeout,
        }
        self.gm.reload_settings(self.gm.settings.model_copy(update=live))
        logging.getLogger("graphmem").setLevel(fresh.log_level.upper())
        log.info("settings reloaded: %s", live)


def run_owner(gm: GraphMemory) -> None:
    """Serve `gm` as its data dir's owner until idle, SIGTERM or Ctrl-C (blocks)."""
    logging.basicConfig(
        level=gm.settings.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    Owner(gm).serve()
