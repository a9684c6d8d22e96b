"""The address of a store on a server (the `store_url` setting): `falkordb://[user:password@]
host:port/GRAPH`, or `falkordbs://` for TLS. The data dir still holds the settings and tokens;
the graph holds the memories. One graph per project (docs/adr/0011-falkordb-engine.md).

Parsed once, when the settings are built, into a `StoreUrl`; anything else is InvalidInput
that names what is wrong and never echoes the password. A server off loopback needs a user and
a password: an open FalkorDB on a network is anyone's memory.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from urllib.parse import quote, unquote, urlsplit

from graphmem.errors import InvalidInput

SCHEMES = {"falkordb": False, "falkordbs": True}  # scheme -> TLS
DEFAULT_PORT = 6379
LOOPBACK_NAMES = frozenset({"localhost"})
# a graph name is a Redis key of graphmem's making ({name}, {name}:changes): no braces, no
# colons, no spaces, nothing a shell or a URL would need to quote
GRAPH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
USAGE = "falkordb://[user:password@]host:port/GRAPH (falkordbs:// for TLS)"


@dataclass(frozen=True)
class StoreUrl:
    """Where a store's graph lives. `password` is kept out of repr and str."""

    host: str
    port: int
    graph: str
    tls: bool = False
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def scheme(self) -> str:
        return "falkordbs" if self.tls else "falkordb"

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    @property
    def graph_key(self) -> str:
        """The graph's Redis key: the name as a hash tag, so that its change stream and its
        leases land on the same slot of a cluster."""
        return f"{{{self.graph}}}"

    def key(self, suffix: str) -> str:
        """A key of this graph's, on its slot: `{GRAPH}:suffix`."""
        return f"{self.graph_key}:{suffix}"

    def secret_text(self) -> str:
        """The address with its password, percent-encoded: for a config file, never a
        message or a log."""
        user = ""
        if self.username:
            user = quote(self.username, safe="")
            user += f":{quote(self.password, safe='')}@" if self.password else "@"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{user}{host}:{self.port}/{self.graph}"

    def __str__(self) -> str:
        """The address without its password: safe for messages and logs."""
        user = f"{self.username}@" if self.username else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{user}{host}:{self.port}/{self.graph}"


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_store_url(text: str) -> StoreUrl:
    """The `StoreUrl` that `text` names; InvalidInput for any other scheme, a missing host or
    graph, a bad port or graph name, a query or fragment, or a server off loopback without a
    user and a password."""

    def invalid(why: str) -> InvalidInput:
        return InvalidInput(f"store_url: {why}; expected {USAGE}", field="store_url")

    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError as exc:
        # the message names the part (a port, a bracket) and never the password
        raise invalid(f"not a URL ({exc})") from None
    if parts.scheme not in SCHEMES:
        raise invalid(f"unknown scheme {parts.scheme + '://' if parts.scheme else '(none)'}")
    host = parts.hostname
    if not host:
        raise invalid("no host")
    if parts.query or parts.fragment:
        raise invalid("no query or fragment is read")
    if port == 0:
        raise invalid("port 0")
    graph = unquote(parts.path.removeprefix("/"))
    if not graph:
        raise invalid("no graph name (the path: /GRAPH)")
    if not GRAPH_NAME.fullmatch(graph):
        raise invalid(
            "a graph name is 1 to 100 letters, digits, '_', '.' or '-', starting with a letter "
            "or digit"
        )
    username = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    if password and not username:
        username = "default"  # redis://:password@host, the `default` user's password
    found = StoreUrl(
        host=host, port=port or DEFAULT_PORT, graph=graph, tls=SCHEMES[parts.scheme],
        username=username, password=password,
    )  # fmt: skip
    if not found.loopback and not (username and password):
        raise InvalidInput(
            f"store_url: a server off loopback ({host}) needs a user and a password: "
            f"falkordb://user:password@{host}:{found.port}/{graph}",
            field="store_url",
        )
    return found
