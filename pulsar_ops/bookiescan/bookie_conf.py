"""The bookie's own configuration as ``scan-bookie --bookie-config bookkeeper.conf`` reads it: the ledger and index
directories the bookie uses, and the BookieId it registers under.

The file is read as BookKeeper reads it (``server/Main.java`` -> ``conf/AbstractConfiguration.loadConf``: a
commons-configuration2 2.12.0 ``PropertiesConfiguration`` whose list delimiter is ``,``,
``common/conf/ConfigurationUtil.newConfiguration``; its ``PropertiesReader``): lines end at ``\\n``, ``\\r`` or
``\\r\\n`` only; blank lines and ``#``/``!`` comment lines are skipped, even inside a continuation; each physical
line is trimmed (``String.trim``); a line ending in an odd number of backslashes continues on the next, and one still
open at the end of the file is dropped; ``key=value``, ``key: value`` or ``key value``; a line that is no property
(no key) is kept under the empty key, as upstream does; value escapes as ``unescapeJava`` (``\\t``, ``\\uXXXX``;
the backslash kept before other characters); a repeated key adds to its list; every value split at unescaped commas
with each element trimmed, three times over (``_stored``: an escaped comma does not survive). ``include`` (any case)
and ``${...}`` interpolation are refused (a clear ``bookie-config-invalid``), not guessed.

Directories (``conf/ServerConfiguration.java``): ``getLedgerDirNames`` is ``ledgerDirectories`` as a list, or
``/tmp/bk-data`` when empty or absent; ``getIndexDirNames`` is ``indexDirectories`` when the key is present, else
none, and then the index lives in the ledger directories (``BookieResources.createIndexDirsManager`` falls back to
the ledger dirs manager). DbLedgerStorage refuses to start when the two lists differ in length ("ledger and index
dirs size not matched"). A relative entry is relative to the bookie's working directory (``new File(name)``),
which the file does not say: ``--bookie-home`` does.

BookieId (``bookie/BookieImpl.getBookieId`` / ``getBookieAddress``): ``bookieId`` when set (validated as
``net/BookieId.validateBookieId``); else host ``:`` ``bookiePort`` (default 3181), the host being
``advertisedAddress`` (trimmed) when not blank, else the address of ``listeningInterface`` (default: the local
host's address, ``net/DNS.getDefaultIP("default")``, i.e. ``InetAddress.getLocalHost().getHostAddress()``), or
with ``useHostNameAsBookieID`` its canonical host name (an unresolvable one is an error), cut at the first dot
with ``useShortHostName``; a loopback address is refused unless ``allowLoopback``. A named
``listeningInterface`` is not derived here (the order Java lists an interface's addresses in is not portable):
``--bookie-id`` is asked for instead.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import stat as _stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulsar_ops.errors import ConfigError
from pulsar_ops.formats.bookie_id import valid_bookie_id

LEDGER_DIRS = "ledgerDirectories"
INDEX_DIRS = "indexDirectories"
JOURNAL_DIRS = "journalDirectories"
JOURNAL_DIR = "journalDirectory"
DEFAULT_JOURNAL_DIR = "/tmp/bk-txn"  # ServerConfiguration.getJournalDirName's default
DEFAULT_LEDGER_DIR = "/tmp/bk-data"  # ServerConfiguration.getLedgerDirNames when ledgerDirectories is empty
DEFAULT_BOOKIE_PORT = 3181  # ServerConfiguration.getBookiePort
MAX_CONF_BYTES = 16 * 1024 * 1024  # a bookkeeper.conf is a few tens of KiB: a bounded read

CODE_MISSING = "bookie-config-missing"
CODE_UNREADABLE = "bookie-config-unreadable"
CODE_INVALID = "bookie-config-invalid"
CODE_RELATIVE = "bookie-config-relative-dir"
CODE_ID = "bookie-id-unknown"

_TRUE = {"true", "yes", "on", "y", "t"}  # commons-lang BooleanUtils.toBooleanObject, as PropertyConverter uses
_FALSE = {"false", "no", "off", "n", "f"}
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "b": "\b"}
_UNESCAPE_CHARS = ":#=!\\'\""  # PropertiesConfiguration.UNESCAPE_CHARACTERS: their backslash is dropped


@dataclass(frozen=True)
class BookieConf:
    """A bookkeeper.conf's keys, each a list (commons-configuration's list values); ``source`` names it."""

    source: str
    values: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def get(self, key: str) -> str | None:
        """``getString``: the first element, None when the key is absent."""
        v = self.values.get(key)
        return v[0] if v else None

    def boolean(self, key: str, default: bool) -> bool:
        v = self.get(key)
        if v is None:
            return default
        low = v.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ConfigError(f"{self.source}: {key}={v!r} is not a boolean", code=CODE_INVALID, hint=_fix(self))

    def integer(self, key: str, default: int) -> int:
        """``getInt(key, default)``: commons-configuration2's ``PropertyConverter.toInteger`` (a ``0x``/``0b``
        prefix read as a BigInteger and cut to an int, else ``Integer(String)``: a sign and digits in an int's
        range). An empty value is no default: the bookie refuses it (ConversionException, checked with 2.12.0)."""
        from pulsar_ops.model.gc_config import _JAVA_PREFIXED, _java_number

        v = self.get(key)
        if v is None:
            return default
        n = _java_number(v, True)
        prefixed = _JAVA_PREFIXED.fullmatch(v) is not None
        if n is None or not isinstance(n, int) or (not prefixed and not -(1 << 31) <= n < 1 << 31):
            raise ConfigError(f"{self.source}: {key}={v!r} is not an integer", code=CODE_INVALID, hint=_fix(self))
        return ((n + (1 << 31)) % (1 << 32)) - (1 << 31) if prefixed else n  # BigInteger.intValue

    def ledger_dir_names(self) -> tuple[str, ...]:
        """``getLedgerDirNames``: ``/tmp/bk-data`` when absent. ``ledgerDirectories=`` is one empty name, not the
        default: ``CompositeConfiguration.getStringArray`` goes through ``getList``, which keeps an empty value
        (checked against commons-configuration2 2.12.0: ``[""]``); ``_absolute`` refuses it."""
        dirs = self.values.get(LEDGER_DIRS) or ()
        return dirs if dirs else (DEFAULT_LEDGER_DIR,)

    def journal_dir_names(self) -> tuple[str, ...]:
        """``getJournalDirNames``: ``journalDirectories``, else ``journalDirectory`` (default ``/tmp/bk-txn``)."""
        dirs = tuple(d for d in self.values.get(JOURNAL_DIRS) or () if d)
        return dirs if dirs else (self.get(JOURNAL_DIR) or DEFAULT_JOURNAL_DIR,)

    def index_dir_names(self) -> tuple[str, ...] | None:
        """``getIndexDirNames``: None when the key is absent (the index is in the ledger directories)."""
        return self.values.get(INDEX_DIRS)


def _fix(conf: BookieConf) -> str:
    return f"fix {conf.source}, or pass --ledger-dirs/--index-dirs/--bookie-id instead of --bookie-config"


# Java's String.trim (every char <= U+0020), not str.strip (which also strips U+0085, U+00A0, U+001C-U+001F)
def _jtrim(text: str) -> str:
    i, j = 0, len(text)
    while i < j and text[i] <= " ":
        i += 1
    while j > i and text[j - 1] <= " ":
        j -= 1
    return text[i:j]


def _unescape_value(text: str, source: str, n: int) -> str:
    """``PropertiesConfiguration.unescapeJava(value, false)``: ``\\t \\n \\r \\f \\b``, ``\\uXXXX``; the
    backslash dropped before one of ``:#=!\\'"`` and kept before anything else (``\\,`` stays for the list
    split, ``C:\\x`` stays ``C:\\x``); an incomplete ``\\u`` at the end is dropped; a lone trailing backslash kept."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(text):
            out.append("\\")
            break
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) < 4:
                break  # the loop ends inside the escape: nothing is appended
            if not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise ConfigError(f"{source}:{n}: unable to parse unicode value: {digits}", code=CODE_INVALID)
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
        elif nxt not in _UNESCAPE_CHARS:
            out.append("\\" + nxt)
        else:
            out.append(nxt)
        i += 2
    return "".join(out)


def _unescape_key(text: str) -> str:
    """commons-text ``StringEscapeUtils.unescapeJava`` (the key): as the value's, but a backslash before any other
    character is dropped, and octal escapes are read."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 >= len(text):
            out.append(c if c != "\\" else "")
            i += 1
            continue
        nxt = text[i + 1]
        octal = re.match(r"[0-3][0-7]{0,2}|[4-7][0-7]?", text[i + 1 :])
        if nxt == "u":
            m = re.match(r"u+\+?([0-9a-fA-F]{4})", text[i + 1 :])
            if m is None:
                raise ConfigError(f"malformed \\u escape in key {text!r}", code=CODE_INVALID)
            out.append(chr(int(m.group(1), 16)))
            i += 1 + m.end()
        elif octal is not None:
            out.append(chr(int(octal.group(0), 8)))
            i += 1 + octal.end()
        else:
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


def _split_list(value: str) -> list[str]:
    """``DefaultListDelimiterHandler(',').splitString(value, true)``: split at unescaped commas; ``\\,`` is a comma
    and ``\\\\`` a backslash, any other backslash is kept; each element trimmed (``String.trim``)."""
    parts: list[str] = []
    cur: list[str] = []
    escape = False
    for c in value:
        if escape:
            if c != "," and c != "\\":
                cur.append("\\")
            cur.append(c)
            escape = False
        elif c == ",":
            parts.append(_jtrim("".join(cur)))
            cur = []
        elif c == "\\":
            escape = True
        else:
            cur.append(c)
    if escape:
        cur.append("\\")
    parts.append(_jtrim("".join(cur)))
    return parts


def _stored(value: str) -> list[str]:
    """The list ``ServerConfiguration`` holds for one loaded value. The value is split three times, each pass
    turning ``\\,`` into a comma the next pass splits at: when ``PropertiesConfiguration`` loads the line
    (``addPropertyInternal`` -> ``DefaultListDelimiterHandler.parse``), when ``AbstractConfiguration.loadConf``
    copies it into the ``ServerConfiguration`` (``setProperty``, the same handler), and when that
    ``CompositeConfiguration`` adds it to its in-memory child (``addPropertyDirect`` -> ``addProperty``, whose handler
    ``setListDelimiterHandler`` made the same). So ``a\\,b`` is two values to the bookie, not ``a,b``."""
    vals = _split_list(value)
    for _ in range(2):
        vals = [p for v in vals for p in _split_list(v)]
    return vals


# PropertiesReader.PROPERTY_PATTERN (commons-configuration2 2.12.0, BookKeeper's version), with Java's classes:
# ``\s`` is [ \t\n\x0B\f\r] and ``.`` is any char but a line terminator (\n \r \u0085 \u2028 \u2029). A line
# the pattern does not match (a U+0085 in it: a UTF-8 file read as ISO-8859-1) is a property with an empty key.
_JWS = " \t\n\x0b\f\r"
_JDOT = "[^\n\r\x85\u2028\u2029]"
_PROPERTY_RE = re.compile(rf"((?:[^{_JWS}\\=:]|\\{_JDOT})*)([{_JWS}]*([{_JWS}]+|[=:])[{_JWS}]*)?({_JDOT}*)")
# LineNumberReader.readLine: str.splitlines would also split at \x0b \x0c \x1c-\x1e \x85
_LINE_RE = re.compile(r"\r\n|\r|\n")


def _is_comment(line: str) -> bool:
    """``PropertiesConfiguration.isCommentLine``: blank after trimming, or starting with ``#`` or ``!``."""
    s = _jtrim(line)
    return not s or s[0] in "#!"


def _odd_backslashes(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """``PropertiesReader.readProperty``: comment and blank lines skipped, even inside a continuation (they do not
    end it); each physical line trimmed; one ending in an odd number of backslashes continued; a continuation
    still open at the end of the file is dropped (readLine returns null: the property is lost)."""
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 0
    for n, raw in enumerate(_LINE_RE.split(text), 1):
        if _is_comment(raw):
            continue
        line = _jtrim(raw)
        if not buf:
            start = n
        if _odd_backslashes(line):
            buf.append(line[:-1])
            continue
        buf.append(line)
        out.append((start, "".join(buf)))
        buf = []
    return out


def parse_properties(text: str, source: str) -> dict[str, tuple[str, ...]]:
    """A bookkeeper.conf's text -> key -> the list of values ``ServerConfiguration`` holds (module docstring)."""
    values: dict[str, list[str]] = {}
    for start, line in _logical_lines(text):
        m = _PROPERTY_RE.fullmatch(line)
        raw_key, rest = (_jtrim(m.group(1)), _jtrim(m.group(4))) if m else ("", "")
        key = _unescape_key(raw_key)
        if key.lower() in ("include", "includeoptional"):  # propertyLoaded: equalsIgnoreCase
            raise ConfigError(
                f"{source}:{start}: `{key}` is not followed by scan-bookie",
                code=CODE_INVALID,
                hint="pass the included file's ledgerDirectories/indexDirectories with --ledger-dirs/--index-dirs",
            )
        values.setdefault(key, []).extend(_stored(_unescape_value(rest, source, start)))
    return {k: tuple(v) for k, v in values.items()}


def load_bookie_conf(path: Path) -> BookieConf:
    """Read and parse a bookkeeper.conf; ``bookie-config-missing`` / ``-unreadable`` / ``-invalid``."""
    hint = (
        "pass the bookie's conf/bookkeeper.conf (e.g. /pulsar/conf/bookkeeper.conf), or --ledger-dirs and --bookie-id"
    )
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise ConfigError(f"--bookie-config {path}: no such file", code=CODE_MISSING, hint=hint) from None
    except OSError as e:
        raise ConfigError(f"--bookie-config {path}: {e.strerror}", code=CODE_UNREADABLE, hint=hint) from None
    try:
        st = os.fstat(fd)
        if not _stat.S_ISREG(st.st_mode):
            raise ConfigError(f"--bookie-config {path}: not a regular file", code=CODE_UNREADABLE, hint=hint)
        if st.st_size > MAX_CONF_BYTES:
            raise ConfigError(
                f"--bookie-config {path}: {st.st_size} bytes, more than a bookkeeper.conf holds",
                code=CODE_INVALID,
                hint=hint,
            )
        data = os.read(fd, MAX_CONF_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"--bookie-config {path}: {e.strerror}", code=CODE_UNREADABLE, hint=hint) from None
    finally:
        os.close(fd)
    if b"\x00" in data:
        raise ConfigError(f"--bookie-config {path}: binary data, not a properties file", code=CODE_INVALID, hint=hint)
    # PropertiesConfiguration's default encoding is ISO-8859-1 (every byte decodes)
    return BookieConf(str(path), parse_properties(data.decode("iso-8859-1"), str(path)))


@dataclass(frozen=True)
class ConfiguredDirs:
    """The directories the configuration names, absolute. ``index_default``: no ``indexDirectories``."""

    ledger_dirs: tuple[Path, ...]
    index_dirs: tuple[Path, ...]
    index_default: bool
    # the journal directories, where they can be placed (a relative one needs --bookie-home): never written into
    journal_dirs: tuple[Path, ...] = ()


def _absolute(names: Sequence[str], key: str, conf: BookieConf, home: Path | None) -> tuple[Path, ...]:
    out = []
    for name in names:
        if not name:
            raise ConfigError(f"{conf.source}: {key} has an empty entry", code=CODE_INVALID, hint=_fix(conf))
        if "${" in name:
            raise ConfigError(
                f"{conf.source}: {key} entry {name!r} uses interpolation, which scan-bookie does not resolve",
                code=CODE_INVALID,
                hint=_fix(conf),
            )
        p = Path(name)
        if not p.is_absolute():
            if home is None:
                raise ConfigError(
                    f"{conf.source}: {key} entry {name!r} is relative to the bookie's working directory",
                    code=CODE_RELATIVE,
                    hint="pass --bookie-home DIR (the bookie's working directory; /pulsar in Pulsar's image)",
                )
            p = home / p
        out.append(Path(os.path.normpath(p)))
    return tuple(out)


def configured_dirs(conf: BookieConf, home: Path | None = None) -> ConfiguredDirs:
    ledgers = _absolute(conf.ledger_dir_names(), LEDGER_DIRS, conf, home)
    names = conf.index_dir_names()
    index = _absolute(names, INDEX_DIRS, conf, home) if names is not None else ledgers
    if len(index) != len(ledgers):
        raise ConfigError(
            f"{conf.source}: {len(index)} indexDirectories for {len(ledgers)} ledgerDirectories "
            "(DbLedgerStorage refuses to start: ledger and index dirs size not matched)",
            code=CODE_INVALID,
            hint=_fix(conf),
        )
    journals = []
    for name in conf.journal_dir_names():
        p = Path(name)
        if "${" not in name and (p.is_absolute() or home is not None):
            journals.append(Path(os.path.normpath(p if p.is_absolute() else Path(home or "") / p)))
    return ConfiguredDirs(ledgers, index, names is None, tuple(journals))


@dataclass(frozen=True)
class Resolver:
    """The name service, injectable for tests: the local host name, a name's addresses (IPv4 first, as Java's
    default ``java.net.preferIPv6Addresses=false`` orders them) and an address's canonical name (None: none)."""

    hostname: Callable[[], str] = socket.gethostname
    addresses: Callable[[str], list[str]] = field(default=lambda host: _addresses(host))
    canonical: Callable[[str], str | None] = field(default=lambda ip: _canonical(ip))


def _addresses(host: str) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return []
    v4 = [str(i[4][0]) for i in infos if i[0] == socket.AF_INET]
    v6 = [str(i[4][0]) for i in infos if i[0] == socket.AF_INET6]
    return list(dict.fromkeys(v4 + v6))


def _canonical(ip: str) -> str | None:
    try:
        return socket.gethostbyaddr(ip)[0]
    except (OSError, UnicodeError):
        return None


@dataclass(frozen=True)
class DerivedId:
    bookie_id: str
    derived_from: str  # bookieId | advertisedAddress | hostname | address


def _id_error(conf: BookieConf, why: str) -> ConfigError:
    return ConfigError(
        f"{conf.source}: cannot derive the bookie id: {why}",
        code=CODE_ID,
        hint="pass --bookie-id as the bookie registers in /ledgers/available (host:port, or its bookieId)",
    )


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _loopback(addr: str) -> bool:
    try:
        return ipaddress.ip_address(addr.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


_ID_KEYS = ("bookieId", "advertisedAddress", "listeningInterface", "useHostNameAsBookieID", "useShortHostName",
            "bookiePort", "allowLoopback")  # fmt: skip


def derive_bookie_id(conf: BookieConf, resolver: Resolver | None = None) -> DerivedId:
    """The BookieId the bookie registers under (module docstring; BookieImpl.getBookieId)."""
    r = resolver or Resolver()
    for key in _ID_KEYS:
        # the bookie's getters interpolate (``${key}``, ``${env:X}``, ``${sys:X}``, checked with commons-configuration2
        # 2.12.0): the bookie's environment is not ours, so the id is asked for, not guessed
        if "${" in (conf.get(key) or ""):
            raise _id_error(conf, f"{key}={conf.get(key)} uses interpolation, which scan-bookie does not resolve")
    custom = conf.get("bookieId")
    if custom is not None:
        if not valid_bookie_id(custom):
            raise _id_error(conf, f"bookieId {custom!r} is not a valid BookieId")
        return DerivedId(custom, "bookieId")
    port = conf.integer("bookiePort", DEFAULT_BOOKIE_PORT)
    advertised = (conf.get("advertisedAddress") or "").strip()
    if advertised:
        host, how = advertised, "advertisedAddress"
        addrs = [host] if _is_ip(host) else r.addresses(host)  # a literal is not looked up (InetAddress)
        if not addrs:
            raise _id_error(conf, f"advertisedAddress {host!r} does not resolve (the bookie would not start)")
        resolved = addrs[0]
    else:
        iface = conf.get("listeningInterface")
        if iface is not None and iface != "default":
            raise _id_error(conf, f"listeningInterface={iface} (an interface's address is not derived here)")
        # DNS.getDefaultIP("default"): InetAddress.getLocalHost().getHostAddress(), else localhost's address
        addrs = r.addresses(r.hostname()) or r.addresses("localhost")
        if not addrs:
            raise _id_error(conf, "the local host name does not resolve")
        resolved = addrs[0]
        if conf.boolean("useHostNameAsBookieID", False):
            name = r.canonical(resolved)
            if not name or name == resolved:
                raise _id_error(conf, f"useHostNameAsBookieID: no host name for {resolved}")
            host, how = (name.split(".", 1)[0] if conf.boolean("useShortHostName", False) else name), "hostname"
        else:
            host, how = resolved, "address"
    if _loopback(resolved) and not conf.boolean("allowLoopback", False):
        raise _id_error(conf, f"{host} is a loopback address and allowLoopback is off (the bookie would not start)")
    return DerivedId(f"{host}:{port}", how)


def dir_key(path: Path) -> tuple[int, int] | str:
    """What makes two names one directory: (device, inode) when it can be stat'ed, else its normalised path."""
    try:
        st = os.stat(path)
        return (st.st_dev, st.st_ino)
    except OSError:
        return os.path.normpath(os.path.abspath(path))


def not_scanned(configured: Sequence[Path], scanned: Sequence[Path]) -> list[str]:
    """The configured directories none of the scanned ones is (by device and inode, else by normalised path)."""
    have = {dir_key(p) for p in scanned}
    return [str(p) for p in configured if dir_key(p) not in have]


def config_doc(
    conf: BookieConf,
    dirs: ConfiguredDirs,
    ledger_dirs: Sequence[Path],
    index_dirs: Sequence[Path],
    bookie_id: DerivedId | None,
) -> dict[str, Any]:
    """The scan manifest's ``bookie_config``: what the configuration names, and what of it was not scanned."""
    return {
        "source": conf.source,
        "ledger_dirs": [str(p) for p in dirs.ledger_dirs],
        "index_dirs": [str(p) for p in dirs.index_dirs],
        "index_dirs_default": dirs.index_default,
        "bookie_id_from": bookie_id.derived_from if bookie_id is not None else "--bookie-id",
        "gc": gc_keys(conf),
        "not_scanned": {
            "ledger_dirs": not_scanned(dirs.ledger_dirs, ledger_dirs),
            "index_dirs": not_scanned(dirs.index_dirs, index_dirs),
        },
    }


@dataclass(frozen=True)
class ScanTarget:
    """What ``scan-bookie`` scans: from its flags, else from the bookie's configuration (``doc``: the manifest's
    ``bookie_config``, None without ``--bookie-config``)."""

    ledger_dirs: tuple[Path, ...]
    index_dirs: tuple[Path, ...] | None
    bookie_id: str
    doc: dict[str, Any] | None
    # every directory the configuration gives the bookie (ledger, index, journal), scanned or not: --out may not
    # be inside one of them
    bookie_dirs: tuple[Path, ...] = ()


CODE_TARGET = "scan-target-missing"


def scan_target(
    *,
    bookie_config: Path | None,
    bookie_home: Path | None,
    ledger_dirs: Sequence[Path],
    index_dirs: Sequence[Path],
    bookie_id: str | None,
    resolver: Resolver | None = None,
) -> ScanTarget:
    """Flags win; what they leave out comes from ``--bookie-config``. With a configuration, the directories it names
    and the scan leaves out are recorded (``doc.not_scanned``): the audit makes that bookie's scope partial."""
    if bookie_config is None:
        if bookie_home is not None:
            raise ConfigError("--bookie-home without --bookie-config", code=CODE_TARGET, hint=_TARGET_HINT)
        if not ledger_dirs or not bookie_id:
            raise ConfigError(
                "scan-bookie needs the bookie's configuration or its directories and id",
                code=CODE_TARGET,
                hint=_TARGET_HINT,
            )
        return ScanTarget(tuple(ledger_dirs), tuple(index_dirs) or None, bookie_id, None)
    conf = load_bookie_conf(bookie_config)
    dirs = configured_dirs(conf, bookie_home)
    derived = None if bookie_id else derive_bookie_id(conf, resolver)
    the_id = bookie_id or (derived.bookie_id if derived is not None else "")
    if ledger_dirs:
        ledgers = tuple(ledger_dirs)
        if index_dirs:
            index: tuple[Path, ...] = tuple(index_dirs)
        elif dirs.index_default:
            index = ledgers
        else:
            raise ConfigError(
                f"--ledger-dirs without --index-dirs, and {conf.source} sets indexDirectories",
                code=CODE_TARGET,
                hint="pass --index-dirs too (the index directories of the ledger dirs given, in the same order), "
                "or neither (both come from the configuration)",
            )
    else:
        ledgers = dirs.ledger_dirs
        index = tuple(index_dirs) if index_dirs else dirs.index_dirs
    owned = (*dirs.ledger_dirs, *dirs.index_dirs, *dirs.journal_dirs)
    return ScanTarget(ledgers, index, the_id, config_doc(conf, dirs, ledgers, index, derived), owned)


_TARGET_HINT = (
    "on a bookie host: pulsar-ops scan-bookie --bookie-config /pulsar/conf/bookkeeper.conf --out DIR; "
    "elsewhere: --ledger-dirs DIR[,DIR...] --bookie-id HOST:PORT"
)


def from_server_config(doc: Mapping[str, Any], source: str) -> BookieConf:
    """The bookie HTTP API's ``GET /api/v1/config/server_config`` (``ConfigurationService``,
    ``AbstractConfiguration.asJson``): every key set on the bookie, each value ``toString()`` of its property, so a
    list (``ledgerDirectories=/a,/b``) reads ``[/a, /b]`` (``AbstractCollection.toString``) and one value reads as
    itself. A one-value string with commas (``/a,/b``) is split as the bookie splits a value set through this same
    service (``setProperty`` with the ``,`` list delimiter)."""
    values: dict[str, tuple[str, ...]] = {}
    for key, raw in doc.items():
        text = str(raw).lower() if isinstance(raw, bool) else str(raw)
        if text.startswith("[") and text.endswith("]"):
            inner = text[1:-1]
            values[str(key)] = tuple(x.strip() for x in inner.split(", ")) if inner else ()
        else:
            values[str(key)] = tuple(_split_list(text))
    return BookieConf(source, values)


def scraped_dirs(conf: BookieConf) -> dict[str, list[str] | None]:
    """The snapshot manifest's ``bookie_dirs[bookie]``: the configured names as the bookie reads them (ledger dirs
    with their default; index dirs None when not set, i.e. the ledger dirs)."""
    index = conf.index_dir_names()
    return {"ledger_dirs": list(conf.ledger_dir_names()), "index_dirs": list(index) if index is not None else None}


def gc_keys(conf: BookieConf) -> dict[str, str]:
    """The GC keys the configuration sets (``model.gc_config.GC_KEYS``; each its ``getString`` value, blank ones
    left out as unset), recorded so the plan's bookie-gc rule decides on this bookie's own settings. Values are
    kept as written: the planner validates them (``gc_config``) as ``GarbageCollectorThread`` would."""
    from pulsar_ops.model.gc_config import GC_KEYS

    out: dict[str, str] = {}
    for key in GC_KEYS:
        v = conf.get(key)
        if v is not None and v.strip():
            out[key] = v.strip()
    return out


def server_config_gc(doc: Mapping[str, Any], source: str) -> dict[str, str]:
    """The GC keys a bookie's ``server_config`` answer sets, read one way wherever it is read: by the scrape (the
    snapshot manifest's ``bookie_gc``, which the plan decides on) and by apply (``repair/kinds/bookie_gc.py``, the
    same rule on the bookie's answer now). The values are the bookie's own: commons-configuration2 stores every
    string value split at the list delimiter with each element trimmed (``AbstractListDelimiterHandler.flatten`` ->
    ``split(value, true)``), whether loaded from bookkeeper.conf or set through the HTTP config service, and
    ``ServerConfiguration``'s getters read that stored string (``getString``: its first element). So a value padded
    with blanks is the trimmed value to the bookie, at plan and at apply alike."""
    return gc_keys(from_server_config(doc, source))


def names_cover(scanned: Sequence[str], configured: Sequence[str]) -> list[str]:
    """The configured names no scanned name is, compared as paths away from the bookie host (the audit): equal
    after normalisation, or the scanned one ends with it at a directory boundary (scanned through a mount prefix,
    e.g. ``/proc/1/root/pulsar/data``; a relative configured name, relative to the bookie's working directory)."""
    have = [os.path.normpath(s) for s in scanned]
    out = []
    for c in configured:
        want = os.path.normpath(c)
        tail = "/" + want.lstrip("/")
        if not any(h == want or h.endswith(tail) for h in have):
            out.append(c)
    return out
