"""TLS material for a ZooKeeper ``secureClientPort``, made on the spot with the JDK's ``keytool`` and ``openssl``.

The server gets a PKCS#12 keystore whose certificate names 127.0.0.1 (IP SAN) and a truststore holding the
client's certificate (for ``ssl.clientAuth=need``); the client gets PEM files: the server certificate as CA, its
own certificate and key. Used by the tests of the secured-cluster options and available to anyone who wants to
try them against the embedded ZooKeeper.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pulsar_ops.errors import JavaMissingError, PulsarOpsError

STORE_PASSWORD = "pulsar-ops-test"  # protects throwaway test keystores only


@dataclass(frozen=True)
class TlsMaterial:
    keystore: Path  # server, PKCS#12
    truststore: Path  # server, PKCS#12 holding the client certificate
    ca_pem: Path  # client: the server's certificate
    client_cert: Path
    client_key: Path
    password: str = STORE_PASSWORD


def _run(cmd: list[str]) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise PulsarOpsError(f"`{cmd[0]}` failed: {r.stderr.strip()[-400:]}", hint="check the JDK and openssl")


def make_tls_material(directory: Path, *, days: int = 2) -> TlsMaterial:
    keytool = shutil.which("keytool")
    openssl = shutil.which("openssl")
    if keytool is None:
        raise JavaMissingError("no `keytool` on PATH (it ships with the JDK)", hint="install Java 17 (a JDK)")
    if openssl is None:
        raise PulsarOpsError("no `openssl` on PATH", hint="apt-get install openssl")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    m = TlsMaterial(d / "server.p12", d / "trust.p12", d / "ca.pem", d / "client.pem", d / "client.key")
    pw = m.password
    _run(
        [
            keytool,
            "-genkeypair",
            "-alias",
            "zk",
            "-keyalg",
            "RSA",
            "-keysize",
            "2048",
            "-validity",
            str(days),
            "-dname",
            "CN=127.0.0.1",
            "-ext",
            "SAN=IP:127.0.0.1",
            "-keystore",
            str(m.keystore),
            "-storetype",
            "PKCS12",
            "-storepass",
            pw,
            "-keypass",
            pw,
        ]
    )
    _run(
        [
            keytool,
            "-exportcert",
            "-alias",
            "zk",
            "-keystore",
            str(m.keystore),
            "-storepass",
            pw,
            "-rfc",
            "-file",
            str(m.ca_pem),
        ]
    )
    _run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(m.client_key),
            "-out",
            str(m.client_cert),
            "-days",
            str(days),
            "-subj",
            "/CN=pulsar-ops-client",
        ]
    )
    _run(
        [
            keytool,
            "-importcert",
            "-noprompt",
            "-alias",
            "client",
            "-file",
            str(m.client_cert),
            "-keystore",
            str(m.truststore),
            "-storetype",
            "PKCS12",
            "-storepass",
            pw,
        ]
    )
    return m
