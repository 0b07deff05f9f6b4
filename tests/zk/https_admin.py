"""A Pulsar admin REST stand-in over HTTPS on 127.0.0.1 whose certificate names another host.

Certificates are made on the spot with the ``openssl`` CLI: a CA, a server certificate for ``SERVER_NAME`` only (so
a client that checks the host name of ``https://127.0.0.1:PORT`` refuses it), and a client certificate. The
server asks for a client certificate (optional) and records, per request, the path, the Authorization header and
the client certificate's common name.
"""

from __future__ import annotations

import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.json_reply import reply_json

SERVER_NAME = "broker-0.pulsar.invalid"
CLIENT_CN = "pulsar-ops-test-client"


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _openssl(*args: str) -> None:
    r = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {r.stderr.strip()[-400:]}")


def make_certs(d: Path) -> Certs:
    """A CA, a server certificate naming only SERVER_NAME (DNS SAN), a client certificate; EC P-256, 2 days."""
    c = Certs(d / "ca.pem", d / "server.pem", d / "server.key", d / "client.pem", d / "client.key")
    ca_key = d / "ca.key"
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl(
        "req",
        "-x509",
        *ec,
        "-keyout",
        str(ca_key),
        "-out",
        str(c.ca),
        "-days",
        "2",
        "-subj",
        "/CN=pulsar-ops test CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    )
    for cn, cert, key, ext in (
        (SERVER_NAME, c.server_cert, c.server_key, f"subjectAltName=DNS:{SERVER_NAME}\nextendedKeyUsage=serverAuth\n"),
        (CLIENT_CN, c.client_cert, c.client_key, "extendedKeyUsage=clientAuth\n"),
    ):
        csr, extfile = d / f"{key.stem}.csr", d / f"{key.stem}.ext"
        extfile.write_text("basicConstraints=CA:FALSE\n" + ext)
        _openssl("req", "-new", *ec, "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={cn}")
        _openssl(
            "x509",
            "-req",
            "-in",
            str(csr),
            "-CA",
            str(c.ca),
            "-CAkey",
            str(ca_key),
            "-CAcreateserial",
            "-out",
            str(cert),
            "-days",
            "2",
            "-extfile",
            str(extfile),
        )
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
                body = None

            reply_json(self, body)

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
