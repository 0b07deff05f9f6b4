"""The one place a kazoo client is built: hosts with chroot, session timeout, retries, and the security Pulsar
clusters use — digest auth, SASL (DIGEST-MD5, GSSAPI) and TLS to ZooKeeper's ``secureClientPort``.

Every command that talks to ZooKeeper (``scrape``, ``apply``, ``restore``, ``seed``, the benches) takes the same
options and builds its clients here, so a secured cluster works the same everywhere:

* ``--zk-auth digest:user:password`` or ``--zk-auth-file PATH`` (the same text in a file): ``addauth`` after
  connecting, as ``zkCli.sh addauth digest user:password`` does;
* ``--zk-sasl DIGEST-MD5:user:password`` / ``--zk-sasl GSSAPI[:service[:principal]]`` or ``--zk-sasl-file PATH``:
  kazoo's ``sasl_options`` (needs the ``pure-sasl`` package; GSSAPI also a Kerberos ticket);
* ``--zk-tls-ca PEM`` (turns TLS on), ``--zk-tls-cert PEM`` and ``--zk-tls-key PEM`` (client certificate, when the
  server sets ``ssl.clientAuth=need``).

Each option also reads ``PULSAR_OPS_<NAME>`` (``PULSAR_OPS_ZK_AUTH`` ...). Secrets live only in
:class:`ZkSecurity`, whose ``repr`` and :meth:`ZkSecurity.describe` never show them; no error message quotes them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError, KazooException, SessionClosedRequireSaslError
from kazoo.handlers.threading import KazooTimeoutError

from pulsar_ops.errors import ConfigError, ZooKeeperAuthError, ZooKeeperError

# The flags every ZooKeeper command has: hints name them, so they must exist on each command.
SECURITY_FLAGS = "--zk-auth / --zk-auth-file, --zk-sasl / --zk-sasl-file, --zk-tls-ca / --zk-tls-cert / --zk-tls-key"
AUTH_HINT = (
    "pass credentials that can read (and, for apply/restore, write) the znodes: --zk-auth digest:user:password, "
    "--zk-sasl DIGEST-MD5:user:password (or the *-file forms), and --zk-tls-ca for a secureClientPort"
)
SASL_MECHANISMS = ("DIGEST-MD5", "GSSAPI")


@dataclass(frozen=True)
class ZkSecurity:
    """Credentials and transport for every client of one command. Never printed."""

    auth: tuple[str, str] | None = field(default=None, repr=False)
    sasl: tuple[tuple[str, str], ...] | None = field(default=None, repr=False)
    tls_ca: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None

    @property
    def tls(self) -> bool:
        return self.tls_ca is not None or self.tls_cert is not None

    def describe(self) -> str:
        """What is used, without any secret: ``digest auth (user alice), TLS``."""
        parts = []
        if self.auth is not None:
            parts.append(f"{self.auth[0]} auth (user {self.auth[1].split(':', 1)[0]})")
        if self.sasl is not None:
            d = dict(self.sasl)
            who = d.get("username") or d.get("principal") or d.get("service", "")
            parts.append(f"SASL {d['mechanism']}" + (f" ({who})" if who else ""))
        if self.tls:
            parts.append("TLS")
        return ", ".join(parts) or "no authentication"

    def kazoo_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        if self.auth is not None:
            kw["auth_data"] = [self.auth]
        if self.sasl is not None:
            kw["sasl_options"] = dict(self.sasl)
        if self.tls:
            kw.update(use_ssl=True, verify_certs=True)
            if self.tls_ca is not None:
                kw["ca"] = str(self.tls_ca)
            if self.tls_cert is not None:
                kw["certfile"] = str(self.tls_cert)
            if self.tls_key is not None:
                kw["keyfile"] = str(self.tls_key)
        return kw


def _secret_file(path: Path, flag: str) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{flag} {path}: cannot read it ({type(e).__name__})", hint=f"check {flag}") from None
    if not text:
        raise ConfigError(f"{flag} {path} is empty", hint=f"write the credentials into {path}")
    return text


def parse_auth(spec: str, flag: str = "--zk-auth") -> tuple[str, str]:
    """``digest:user:password`` -> ``("digest", "user:password")``. Errors never quote the value."""
    scheme, sep, cred = spec.partition(":")
    if not sep or not scheme or not cred:
        raise ConfigError(f"{flag} must be SCHEME:CREDENTIALS", hint=f"pass {flag} digest:user:password")
    if scheme == "digest" and ":" not in cred:
        raise ConfigError(f"{flag} digest needs user:password", hint=f"pass {flag} digest:user:password")
    return scheme, cred


def parse_sasl(spec: str, flag: str = "--zk-sasl") -> tuple[tuple[str, str], ...]:
    """``DIGEST-MD5:user:password`` or ``GSSAPI[:service[:principal]]`` -> kazoo ``sasl_options`` items."""
    mech, _, rest = spec.partition(":")
    mech = mech.upper()
    if mech == "DIGEST-MD5":
        user, sep, password = rest.partition(":")
        if not user or not sep or not password:
            raise ConfigError(f"{flag} DIGEST-MD5 needs user:password", hint=f"pass {flag} DIGEST-MD5:user:password")
        return (("mechanism", mech), ("username", user), ("password", password))
    if mech == "GSSAPI":
        service, _, principal = rest.partition(":")
        items = [("mechanism", mech), ("service", service or "zookeeper")]
        if principal:
            items.append(("principal", principal))
        return tuple(items)
    raise ConfigError(
        f"{flag}: unknown SASL mechanism (expected one of {', '.join(SASL_MECHANISMS)})",
        hint=f"pass {flag} DIGEST-MD5:user:password or {flag} GSSAPI",
    )


def security_from_flags(
    *,
    zk_auth: str | None = None,
    zk_auth_file: Path | None = None,
    zk_sasl: str | None = None,
    zk_sasl_file: Path | None = None,
    zk_tls_ca: Path | None = None,
    zk_tls_cert: Path | None = None,
    zk_tls_key: Path | None = None,
) -> ZkSecurity:
    if zk_auth and zk_auth_file:
        raise ConfigError("--zk-auth and --zk-auth-file are exclusive", hint="pass one of them")
    if zk_sasl and zk_sasl_file:
        raise ConfigError("--zk-sasl and --zk-sasl-file are exclusive", hint="pass one of them")
    auth_spec = zk_auth or (_secret_file(zk_auth_file, "--zk-auth-file") if zk_auth_file else None)
    sasl_spec = zk_sasl or (_secret_file(zk_sasl_file, "--zk-sasl-file") if zk_sasl_file else None)
    if (zk_tls_cert is None) != (zk_tls_key is None):
        raise ConfigError("--zk-tls-cert and --zk-tls-key go together", hint="pass both, or neither")
    for flag, p in (("--zk-tls-ca", zk_tls_ca), ("--zk-tls-cert", zk_tls_cert), ("--zk-tls-key", zk_tls_key)):
        if p is not None and not Path(p).is_file():
            raise ConfigError(f"{flag} {p} is not a file", hint=f"pass {flag} PATH.pem")
    return ZkSecurity(
        auth=parse_auth(auth_spec, "--zk-auth-file" if zk_auth_file else "--zk-auth") if auth_spec else None,
        sasl=parse_sasl(sasl_spec, "--zk-sasl-file" if zk_sasl_file else "--zk-sasl") if sasl_spec else None,
        tls_ca=Path(zk_tls_ca) if zk_tls_ca else None,
        tls_cert=Path(zk_tls_cert) if zk_tls_cert else None,
        tls_key=Path(zk_tls_key) if zk_tls_key else None,
    )


NO_SECURITY = ZkSecurity()

# kazoo logs every dropped connection and retry; the commands report failures themselves (with a hint), so its
# own chatter stays out of the operator's terminal unless PULSAR_OPS_DEBUG is set (--debug).
_KAZOO_LOG = logging.getLogger("pulsar_ops.kazoo")
_KAZOO_LOG.addHandler(logging.NullHandler())
_KAZOO_LOG.propagate = False


def new_client(
    connect_string: str,
    security: ZkSecurity = NO_SECURITY,
    *,
    timeout: float = 30.0,
    connection_retry: dict[str, Any] | None = None,
) -> KazooClient:
    """A kazoo client (not started) for ``HOSTS[/chroot]`` with the command's security."""
    if os.environ.get("PULSAR_OPS_DEBUG", "") not in ("", "0", "false"):
        _KAZOO_LOG.propagate = True
    return KazooClient(
        hosts=connect_string,
        timeout=timeout,
        connection_retry=connection_retry,
        logger=_KAZOO_LOG,
        **security.kazoo_kwargs(),
    )


@contextlib.contextmanager
def _quiet_auth_thread_errors() -> Iterator[None]:
    """kazoo raises a refused SASL session inside its connection thread (which then dies and would print a
    traceback); the same failure reaches ``start()`` and is reported there, once, with a hint."""
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is not None and issubclass(args.exc_type, (SessionClosedRequireSaslError, AuthFailedError)):
            return
        previous(args)

    threading.excepthook = hook
    try:
        yield
    finally:
        threading.excepthook = previous


def start(client: KazooClient, where: str, security: ZkSecurity, *, timeout: float) -> None:
    """Start ``client``; failures become ZooKeeperError / ZooKeeperAuthError whose hints name real flags."""
    try:
        with warnings.catch_warnings(), _quiet_auth_thread_errors():
            warnings.filterwarnings("ignore", message="No chroot path exists")  # callers check the chroot
            client.start(timeout=timeout)
    except (SessionClosedRequireSaslError, AuthFailedError) as e:
        close(client)
        raise ZooKeeperAuthError(
            f"ZooKeeper {where} refused the session ({type(e).__name__}; using {security.describe()})",
            hint=AUTH_HINT,
        ) from None
    except KazooTimeoutError:
        close(client)
        tls_hint = "" if security.tls else "; if it listens on a secureClientPort, pass --zk-tls-ca"
        sasl_hint = "" if security.sasl else "; if it requires SASL, pass --zk-sasl"
        raise ZooKeeperError(
            f"cannot connect to ZooKeeper {where} within {timeout:.0f}s (using {security.describe()})",
            hint=f"check the hosts and that ZooKeeper is up{tls_hint}{sasl_hint}",
        ) from None
    except (KazooException, OSError, ValueError) as e:
        close(client)
        raise ZooKeeperError(f"cannot connect to ZooKeeper {where}: {type(e).__name__}", hint=AUTH_HINT) from None


def close(client: KazooClient) -> None:
    with contextlib.suppress(Exception):
        client.stop()
    with contextlib.suppress(Exception):
        client.close()


def connect(
    connect_string: str, security: ZkSecurity = NO_SECURITY, *, timeout: float = 30.0, where: str | None = None
) -> KazooClient:
    """A started client (the caller closes it with :func:`close`)."""
    client = new_client(connect_string, security, timeout=timeout)
    start(client, where or connect_string, security, timeout=timeout)
    return client


@contextlib.contextmanager
def connected(
    connect_string: str, security: ZkSecurity = NO_SECURITY, *, timeout: float = 30.0
) -> Iterator[KazooClient]:
    """``with connected("host:2181/chroot") as zk:`` - a started client, closed on exit."""
    client = connect(connect_string, security, timeout=timeout)
    try:
        yield client
    finally:
        close(client)
