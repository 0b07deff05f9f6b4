"""A Pulsar admin REST stand-in over HTTPS on 127.0.0.1 whose certificate names another host.

Certificates are made on the spot with ``cryptography``: a CA, a server certificate for ``SERVER_NAME`` only (so
a client that checks the host name of ``https://127.0.0.1:PORT`` refuses it), and a client certificate. The
server asks for a client certificate (optional) and records, per request, the path, the Authorization header and
the client certificate's common name.
"""

from __future__ import annotations

import datetime as dt
import json
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

SERVER_NAME = "broker-0.pulsar.invalid"
CLIENT_CN = "pulsar-ops-test-client"


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )


def make_certs(d: Path) -> Certs:
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("pulsar-ops test CA"))
        .issuer_name(_name("pulsar-ops test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )  # keyCertSign, cRLSign
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(cn: str, server: bool) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        key = ec.generate_private_key(ec.SECP256R1())
        b = (
            x509.CertificateBuilder()
            .subject_name(_name(cn))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=2))
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [x509.oid.ExtendedKeyUsageOID.SERVER_AUTH if server else x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
        )
        if server:
            b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(cn)]), critical=False)
        return b.sign(ca_key, hashes.SHA256()), key

    server, server_key = leaf(SERVER_NAME, True)
    client, client_key = leaf(CLIENT_CN, False)
    c = Certs(d / "ca.pem", d / "server.pem", d / "server.key", d / "client.pem", d / "client.key")
    c.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    c.server_cert.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    c.client_cert.write_bytes(client.public_bytes(serialization.Encoding.PEM))
    _write_key(server_key, c.server_key)
    _write_key(client_key, c.client_key)
    return c


@dataclass
class Seen:
    """What the server saw: (path, Authorization header, client certificate CN or "")."""

    requests: list[tuple[str, str, str]] = field(default_factory=list)


def _cn(peer: Any) -> str:
    for rdn in (peer or {}).get("subject", ()):
        for k, v in rdn:
            if k == "commonName":
                return str(v)
    return ""


@contextmanager
def https_admin(certs: Certs) -> Iterator[tuple[str, Seen]]:
    """Yield (``https://127.0.0.1:PORT``, what it saw). Serves one cluster ``standalone`` whose one broker is itself
    and has one loaded topic."""
    seen = Seen()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
            path = self.path.split("?")[0]
            seen.requests.append((path, self.headers.get("Authorization", ""), _cn(peer)))
            port = self.server.server_address[1]
            if path == "/admin/v2/clusters":
                body: object = ["standalone"]
            elif path == "/admin/v2/brokers/standalone":
                body = [f"127.0.0.1:{port}"]
            elif path == "/admin/v2/broker-stats/topics":
                body = {
                    "public/default": {"0x00000000_0xffffffff": {"persistent": {"persistent://public/default/t": {}}}}
                }
            else:
                self.send_response(404)
                self.end_headers()
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certs.server_cert, certs.server_key)
    ctx.load_verify_locations(certs.ca)
    ctx.verify_mode = ssl.CERT_OPTIONAL
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
