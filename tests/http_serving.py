"""A real HTTP server for a test: uvicorn on 127.0.0.1 and a free port, in a thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn


@contextmanager
def running(server: uvicorn.Server) -> Iterator[str]:
    """Start `server` (configured with port 0) in a thread and yield its base URL; stop it and
    wait for the thread on the way out."""
    thread = threading.Thread(target=server.run, name="graphmem-http-test", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            assert thread.is_alive(), "the HTTP server stopped during start-up"
            assert time.monotonic() < deadline, "the HTTP server did not start within 20 s"
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(20)
        assert not thread.is_alive(), "the HTTP server did not stop within 20 s"
