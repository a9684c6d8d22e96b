"""The client's link to a store's owner process: start it, stop it, and OwnerLink, one connection
to it that outlives it.

An owner can die under its clients (kill -9, the OOM killer). OwnerLink notices it when the
connection closes during a request, or before one (the owner's pid is gone, or the connection
shows EOF); it then starts a new owner the way the first was started (start_owner, under the
start lock: of many clients that notice at once, one starts it) and sends the request to it. A
request the owner died with is sent again only when that is safe (protocol.resendable): reads,
`update`, and stores, which carry an idempotency key made here when the caller gave none
(`with_keys`), so a second sending returns what the first stored. Any other write may or may
not have been applied: it fails with OutcomeUnknown, and the next request goes to a new owner.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from graphmem.daemon.paths import OwnerInfo, live_owner
from graphmem.daemon.protocol import KEYED_STORES, is_read, resendable
from graphmem.errors import OutcomeUnknown, StoreError
from graphmem.models import MemoryInput
from graphmem.process import pid_alive

log = logging.getLogger("graphmem.client")

LOG_FILE = "owner.log"
START_LOCK = "owner.lock"
RESENDS = 2  # a request whose owner died before answering is sent at most this many more times


@contextmanager
def start_lock(home: Path) -> Iterator[None]:
    """Serialise owner start-ups, and a direct open with them: two clients starting at once must
    not race for the store, and a command that finds no owner must not open the store while
    another client is starting one."""
    home.mkdir(parents=True, exist_ok=True)
    with open(home / START_LOCK, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def start_owner(home: Path, *, timeout: float = 30.0) -> OwnerInfo:
    """Return the running owner of `home`, starting a detached one if none runs."""
    info = live_owner(home)
    if info is not None:
        return info
    with start_lock(home):
        info = live_owner(home)
        if info is not None:
            return info
        with open(home / LOG_FILE, "ab") as log_file:
            process = subprocess.Popen(
                # -P: a graphmem folder in the working directory must not shadow this one
                [sys.executable, "-P", "-m", "graphmem", "daemon", "run", "--home", str(home)],
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
                start_new_session=True,  # outlives the client that started it
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = live_owner(home)
            if info is not None:
                return info
            if process.poll() is not None:
                raise StoreError(
                    f"the owner process for {home} exited at start: {_log_tail(home)}",
                    path=str(home),
                )
            time.sleep(0.05)
        process.terminate()
        raise StoreError(f"the owner process for {home} did not start within {timeout:.0f}s")


def stop_owner(home: Path, *, timeout: float = 30.0) -> OwnerInfo | None:
    """SIGTERM the owner and wait for it to drain and exit; returns what was stopped."""
    info = live_owner(home)
    if info is None:
        return None
    os.kill(info.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(info.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid_alive(info.pid):
        raise StoreError(f"owner {info.pid} did not stop within {timeout:.0f}s", pid=info.pid)
    return info


def _log_tail(home: Path) -> str:
    try:
        lines = (home / LOG_FILE).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "no log"
    return " | ".join(lines[-3:]) or "no log"


class OwnerLink:
    """One connection to the owner of `home`, one request at a time (the caller serialises)."""

    def __init__(self, home: Path, info: OwnerInfo, *, recover: bool = True) -> None:
        """`recover`: when the owner dies, start a new one and go on; without it every request
        after the death fails, as `daemon status` wants."""
        self.home = home
        self.owner = info
        self.recover = recover
        self.restarts = 0  # owners started by this link after the one it used was gone
        self._sock: socket.socket | None = None
        self._file: Any = None

    def _connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.owner.socket)
        except OSError as exc:
            sock.close()
            raise StoreError(f"cannot reach the owner process: {exc}", pid=self.owner.pid) from exc
        self._sock, self._file = sock, sock.makefile("rwb")

    def _connected(self) -> bool:
        """Whether the connection is open at both ends: an owner that died between two requests
        left EOF (or a reset) waiting on it, and a request sent there would be lost unread."""
        if self._sock is None:
            return False
        if not pid_alive(self.owner.pid):  # killed: its threads may hold the socket a while yet
            return False
        try:
            waiting = self._sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return True  # nothing to read: the owner is there, waiting for a request
        except OSError:
            return False
        return waiting != b""  # b"": EOF

    def _reconnect(self) -> None:
        """Connect to the owner, first starting a new one the way `graphmem serve` starts the
        first (start_owner: at most one start at a time) if it is gone."""
        if self._connected():
            return
        self.close()
        if pid_alive(self.owner.pid):  # a dying owner may still accept: never send it anything
            try:
                self._connect()
                return
            except StoreError:
                if not self.recover:
                    raise
        elif not self.recover:
            raise StoreError("the owner process is gone", pid=self.owner.pid)
        started = start_owner(self.home)
        if started.pid != self.owner.pid:
            self.restarts += 1
            log.warning("owner %d is gone; now served by owner %d", self.owner.pid, started.pid)
        self.owner = started
        self._connect()

    def exchange(self, method: str, kwargs: dict[str, Any], data: bytes) -> bytes:
        """Send one request line and return its answer line, reconnecting (to a new owner if
        need be) while the request has not reached an owner, and sending it again after an
        owner died with it only when that is safe (protocol.resendable)."""
        resend = resendable(method, kwargs)
        lost = unsent = 0
        while True:
            self._reconnect()  # no owner could be reached or started: nothing was sent
            try:
                self._file.write(data)
                self._file.flush()
            except OSError as exc:  # the owner closed the connection: it never read the request
                self.close()
                unsent += 1
                if not self.recover or unsent > RESENDS:
                    raise StoreError(
                        f"cannot reach the owner process: {exc}", pid=self.owner.pid
                    ) from exc
                continue
            try:
                line: bytes = self._file.readline()
            except OSError:
                line = b""
            if line:
                return line
            self.close()  # the owner went away with the request
            lost += 1
            if resend and self.recover and lost <= RESENDS:
                log.warning(
                    "owner %d went away during %s; sending it again", self.owner.pid, method
                )
                continue
            if is_read(method, kwargs):
                raise StoreError(
                    f"the owner process went away during {method}", method=method,
                    pid=self.owner.pid,
                )  # fmt: skip
            raise OutcomeUnknown(
                f"the owner process went away during {method}: it may or may not have been "
                "applied; check the store before repeating it",
                method=method,
                pid=self.owner.pid,
            )

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._file.close()
                self._sock.close()
            finally:
                self._sock = self._file = None


def with_keys(
    method: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A store whose caller gave no idempotency key gets one, made once per call: sent again
    after its owner died, it then returns what the first sending stored instead of storing it
    twice."""
    if method == "remember_many" and args:
        return ([_keyed(item) for item in args[0]], *args[1:]), kwargs
    if method in KEYED_STORES and kwargs.get("idempotency_key") is None:
        return args, {**kwargs, "idempotency_key": _new_key()}
    return args, kwargs


def _keyed(item: Any) -> Any:
    if isinstance(item, MemoryInput) and item.idempotency_key is None:
        return item.model_copy(update={"idempotency_key": _new_key()})
    if isinstance(item, dict) and item.get("idempotency_key") is None:
        return {**item, "idempotency_key": _new_key()}
    return item


def _new_key() -> str:
    return f"call-{uuid.uuid4().hex}"
