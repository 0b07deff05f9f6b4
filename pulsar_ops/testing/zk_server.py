"""Start a real ZooKeeper server from the jars shipped inside the installed pyspark wheel.

Used by the test suite (one server per session), by ``pulsar-ops demo`` and by the benchmarks. The server binds
to 127.0.0.1 on a free port, has the admin server off, keeps its data in a temporary directory, and is ready
when it answers the ``srvr`` four-letter word.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pulsar_ops.errors import JavaMissingError, PulsarOpsError
from pulsar_ops.testing.zk_tls import TlsMaterial

_JAR_PREFIXES = (
    "zookeeper-",
    "slf4j-api-",
    "log4j-api-",
    "log4j-core-",
    "log4j-slf4j2-impl-",
    "log4j-slf4j-impl-",
    "netty-",
    "commons-io-",
    "commons-cli-",
    "metrics-core-",
    "snappy-java-",
    "jline-",
)


class ZooKeeperStartError(PulsarOpsError):
    code = "zookeeper-start-failed"
    default_hint = "see the server log named in the message; `pulsar-ops demo --debug` shows more"


def pyspark_jars_dir() -> Path:
    """The directory of jars inside the installed pyspark package."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise ZooKeeperStartError(
            "pyspark is not installed, so no ZooKeeper jars are available",
            hint="pip install -e '.[test]'",
        )
    jars = Path(spec.origin).parent / "jars"
    if not any(jars.glob("zookeeper-*.jar")):
        raise ZooKeeperStartError(f"no zookeeper-*.jar in {jars}", hint="reinstall pyspark: pip install pyspark")
    return jars


def classpath(jars: Path) -> str:
    picked = sorted(str(p) for p in jars.iterdir() if p.suffix == ".jar" and p.name.startswith(_JAR_PREFIXES))
    return os.pathsep.join(picked) if picked else str(jars / "*")


def java_executable() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise JavaMissingError("no `java` on PATH and JAVA_HOME is not set; the embedded ZooKeeper needs Java 17")
    return found


BIND_ATTEMPTS = 3  # starts on newly picked ports when another process took a picked one first


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def four_letter_word(host: str, port: int, word: str = "srvr", timeout: float = 2.0) -> str:
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(word.encode())
        chunks = []
        while True:
            b = s.recv(4096)
            if not b:
                break
            chunks.append(b)
    return b"".join(chunks).decode("utf-8", "replace")


@dataclass
class EmbeddedZooKeeper:
    """A real ZooKeeper server process. Use as a context manager or call start()/stop()."""

    port: int = 0
    data_dir: Path | None = None
    host: str = "127.0.0.1"
    heap_mb: int = 512
    startup_timeout: float = 60.0
    # SASL DIGEST-MD5 users (name -> password): a JAAS login for the server, and sessions must authenticate
    sasl_users: dict[str, str] | None = None
    # TLS: a secureClientPort (Netty) with this material, client certificates required; the plain port stays
    # for the readiness probe
    tls: TlsMaterial | None = None
    secure_port: int = 0
    # another ZooKeeper release's jars (every *.jar of the directory), e.g. zk_legacy.legacy_jars_dir() for a
    # 3.4 server without multiRead; None: the jars of the installed pyspark
    jars_dir: Path | None = None
    # transactions between snapshots (upstream snapCount; the server snapshots after snapCount/2 plus a random
    # part of snapCount/2 -- ZooKeeperServer/SyncRequestProcessor), and extra -D system properties, e.g.
    # {"zookeeper.snapshot.compression.method": "gz"} (read by SnapStream, 3.6+)
    snap_count: int = 1000000
    system_properties: dict[str, str] = field(default_factory=dict)
    _proc: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _owns_dir: bool = field(default=False, init=False, repr=False)

    @property
    def hosts(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def secure_hosts(self) -> str:
        return f"{self.host}:{self.secure_port}"

    @property
    def log_path(self) -> Path:
        assert self.data_dir is not None
        return self.data_dir / "zookeeper.log"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def _write_config(self) -> Path:
        assert self.data_dir is not None
        cfg = self.data_dir / "zoo.cfg"
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        cfg.write_text(
            "\n".join(
                [
                    "tickTime=2000",
                    "initLimit=10",
                    "syncLimit=5",
                    f"dataDir={self.data_dir / 'data'}",
                    f"clientPort={self.port}",
                    f"clientPortAddress={self.host}",
                    "maxClientCnxns=0",
                    "admin.enableServer=false",
                    "4lw.commands.whitelist=srvr,stat,ruok,mntr,cons",
                    "autopurge.purgeInterval=0",
                    f"snapCount={self.snap_count}",
                    *self._security_config(),
                    "",
                ]
            )
        )
        return cfg

    def _security_config(self) -> list[str]:
        lines: list[str] = []
        if self.sasl_users:
            lines += [
                "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
                "sessionRequireClientSASLAuth=true",
            ]
        if self.tls is not None:
            t = self.tls
            lines += [
                f"secureClientPort={self.secure_port}",
                f"secureClientPortAddress={self.host}",
                "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
                f"ssl.keyStore.location={t.keystore}",
                f"ssl.keyStore.password={t.password}",
                "ssl.keyStore.type=PKCS12",
                f"ssl.trustStore.location={t.truststore}",
                f"ssl.trustStore.password={t.password}",
                "ssl.trustStore.type=PKCS12",
                "ssl.clientAuth=need",
            ]
        return lines

    def _jvm_security_flags(self) -> list[str]:
        if not self.sasl_users:
            return []
        assert self.data_dir is not None
        jaas = self.data_dir / "jaas.conf"
        users = "\n".join(f'  user_{name}="{pw}"' for name, pw in sorted(self.sasl_users.items()))
        jaas.write_text(f"Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n{users};\n}};\n")
        return [f"-Djava.security.auth.login.config={jaas}"]

    def start(self) -> EmbeddedZooKeeper:
        if self._proc is not None and self._proc.poll() is None:
            return self
        if self.data_dir is None:
            self.data_dir = Path(tempfile.mkdtemp(prefix="pulsar-ops-zk-"))
            self._owns_dir = True
        # A port free_port() picked is free only until it is bound: another process may bind it in between. When
        # the server then cannot bind it, a start on newly picked ports is tried (a port the caller gave is kept).
        picked = not self.port, self.tls is not None and not self.secure_port
        for attempt in range(BIND_ATTEMPTS):
            if picked[0]:
                self.port = free_port()
            if picked[1]:
                self.secure_port = free_port()
            log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
            try:
                return self._start_once()
            except ZooKeeperStartError:
                if not any(picked) or attempt == BIND_ATTEMPTS - 1 or not self._bind_failed(log_start):
                    raise
        raise AssertionError("unreachable")

    def _bind_failed(self, log_start: int) -> bool:
        """Whether the log written since ``log_start`` says a port could not be bound."""
        with open(self.log_path, "rb") as f:
            f.seek(log_start)
            return b"Address already in use" in f.read()

    def _start_once(self) -> EmbeddedZooKeeper:
        java = java_executable()
        jars = self.jars_dir if self.jars_dir is not None else pyspark_jars_dir()
        cfg = self._write_config()
        cmd = [
            java,
            f"-Xmx{self.heap_mb}m",
            "-XX:+UseSerialGC",
            "-Dzookeeper.forceSync=no",
            "-Dzookeeper.admin.enableServer=false",
            "-Djute.maxbuffer=16777216",
            "-Dlog4j2.level=WARN",
            "-Dzookeeper.4lw.commands.whitelist=*",
            *self._jvm_security_flags(),
            *(f"-D{k}={v}" for k, v in sorted(self.system_properties.items())),
            "-cp",
            classpath(jars) if self.jars_dir is None else str(jars / "*"),
            "org.apache.zookeeper.server.ZooKeeperServerMain",
            str(cfg),
        ]
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child process
        try:
            self._proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        finally:
            log.close()
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        last = ""
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise ZooKeeperStartError(
                    f"ZooKeeper exited with code {self._proc.returncode} during start; log: {self.log_path}"
                )
            try:
                out = four_letter_word(self.host, self.port, "srvr", timeout=1.0)
                if "Zookeeper version" in out and "Mode:" in out:
                    return
                last = out
            except OSError as e:
                last = str(e)
            time.sleep(0.1)
        self.stop()
        raise ZooKeeperStartError(
            f"ZooKeeper on {self.hosts} not ready after {self.startup_timeout:.0f}s ({last!r}); log: {self.log_path}"
        )

    def version(self) -> str:
        out = four_letter_word(self.host, self.port, "srvr")
        for line in out.splitlines():
            if line.startswith("Zookeeper version:"):
                return line.split(":", 1)[1].strip().split("-")[0].split(",")[0]
        return "unknown"

    def stop(self, *, kill: bool = False) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)

    def restart(self) -> None:
        """Stop and start again on the same port with the same data (a rolling-restart stand-in)."""
        self.stop()
        self.start()

    def cleanup(self) -> None:
        self.stop()
        if self._owns_dir and self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedZooKeeper:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()
