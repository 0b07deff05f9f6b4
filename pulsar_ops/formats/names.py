"""Pulsar name encoding: Java ``URLEncoder``/``URLDecoder`` semantics and managed-ledger names.

Pulsar stores topic local names, cursor names, partitioned-topic nodes and schema ids as
``Codec.encode(name)`` = ``URLEncoder.encode(name, "UTF-8")``: ASCII letters, digits and ``. - * _`` are kept,
space becomes ``+``, every other character becomes ``%XX`` (uppercase hex) of its UTF-8 bytes.

Managed-ledger names and paths come in two shapes, told apart by the position of the ``persistent`` domain
segment (an encoded local name never contains ``/``, tenant / cluster / namespace names never contain ``/``):

* V2: ``<tenant>/<ns>/persistent/<encLocalName>`` -- exactly 4 segments, ``persistent`` third;
* V1: ``<property>/<cluster>/<ns>/persistent/<encLocalName>`` -- exactly 5 segments, ``persistent`` fourth.

Anything else is a DecodeError naming the input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

from pulsar_ops.errors import DecodeError

PERSISTENT = "persistent"
PARTITION_SUFFIX = "-partition-"
_INT32_MAX = 2147483647

_SAFE_RE = re.compile(r"[A-Za-z0-9.\-*_]*")
_BAD_ESCAPE_RE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_PARTITION_INDEX_RE = re.compile(r"0|[1-9][0-9]{0,9}")

_BYTE_TABLE: tuple[str, ...] = tuple(
    chr(b)
    if (0x30 <= b <= 0x39 or 0x41 <= b <= 0x5A or 0x61 <= b <= 0x7A or chr(b) in ".-*_")
    else ("+" if b == 0x20 else f"%{b:02X}")
    for b in range(256)
)


def encode(name: str) -> str:
    """``URLEncoder.encode(name, "UTF-8")``. Lone surrogates become ``?`` (``%3F``), as in Java."""
    if _SAFE_RE.fullmatch(name):
        return name
    raw = name.encode("utf-8", errors="replace")
    table = _BYTE_TABLE
    return "".join([table[b] for b in raw])


def decode(encoded: str, path: str = "") -> str:
    """``URLDecoder.decode(encoded, "UTF-8")``: ``+`` -> space, ``%XX`` -> byte; bytes decoded as UTF-8.

    A malformed escape (``%`` not followed by two hex digits) or invalid UTF-8 raises DecodeError naming
    ``path`` (or the input itself when no path is given).
    """
    if "%" not in encoded:
        return encoded.replace("+", " ") if "+" in encoded else encoded
    where = path or encoded
    bad = _BAD_ESCAPE_RE.search(encoded)
    if bad is not None:
        raise DecodeError(where, f"malformed %-escape at offset {bad.start()} in name {encoded!r}")
    try:
        return unquote_to_bytes(encoded.replace("+", " ")).decode("utf-8")
    except UnicodeError as exc:
        raise DecodeError(where, f"name {encoded!r} is not valid UTF-8 after %-decoding: {exc}") from None


def partition_suffix(local_name: str) -> tuple[str, int]:
    """Split ``<base>-partition-<N>`` into ``(base, N)``; ``(local_name, -1)`` when there is no valid suffix.

    Mirrors ``TopicName.getPartitionIndex``: the text after the LAST ``-partition-`` must be a canonical
    non-negative int32 (no sign, no leading zeros), otherwise the name is not a partition.
    """
    pos = local_name.rfind(PARTITION_SUFFIX)
    if pos < 0:
        return local_name, -1
    idx = local_name[pos + len(PARTITION_SUFFIX) :]
    if not _PARTITION_INDEX_RE.fullmatch(idx):
        return local_name, -1
    value = int(idx)
    if value > _INT32_MAX:
        return local_name, -1
    return local_name[:pos], value


@dataclass(frozen=True, slots=True)
class MlName:
    """A persistent topic's managed-ledger identity.

    ``namespace`` is ``tenant/ns`` (V2) or ``property/cluster/ns`` (V1); ``encoded_name`` is the znode name;
    ``local_name`` its decoded form.
    """

    namespace: str
    encoded_name: str
    local_name: str
    is_v1: bool

    @property
    def tenant(self) -> str:
        return self.namespace.split("/", 1)[0]

    @property
    def cluster(self) -> str | None:
        return self.namespace.split("/")[1] if self.is_v1 else None

    @property
    def namespace_portion(self) -> str:
        """The last namespace segment (``ns``)."""
        return self.namespace.rsplit("/", 1)[1]

    @property
    def ml_name(self) -> str:
        return f"{self.namespace}/{PERSISTENT}/{self.encoded_name}"

    @property
    def topic(self) -> str:
        return f"{PERSISTENT}://{self.namespace}/{self.local_name}"

    @property
    def partition(self) -> int:
        return partition_suffix(self.local_name)[1]

    @property
    def base_local_name(self) -> str:
        return partition_suffix(self.local_name)[0]

    @property
    def base_topic(self) -> str:
        return f"{PERSISTENT}://{self.namespace}/{self.base_local_name}"


def _check_segments(segments: list[str], where: str) -> None:
    for seg in segments:
        if not seg:
            raise DecodeError(where, "empty name segment")


def parse_ml_name(ml_name: str, path: str = "") -> MlName:
    """Parse a managed-ledger name (``t/ns/persistent/enc`` or ``p/c/ns/persistent/enc``)."""
    where = path or ml_name
    parts = ml_name.split("/")
    if len(parts) == 4 and parts[2] == PERSISTENT:
        is_v1 = False
    elif len(parts) == 5 and parts[3] == PERSISTENT:
        is_v1 = True
    else:
        raise DecodeError(
            where,
            f"not a managed-ledger name {ml_name!r}: expected tenant/ns/persistent/<name> "
            "or property/cluster/ns/persistent/<name>",
        )
    _check_segments(parts, where)
    enc = parts[-1]
    return MlName("/".join(parts[:-2]), enc, decode(enc, where), is_v1)


def ml_name_from_path(path: str, root: str = "/managed-ledgers") -> MlName:
    """The MlName of a topic znode path ``<root>/<t>/<ns>/persistent/<enc>`` (V1: with a cluster segment)."""
    prefix = root.rstrip("/") + "/"
    if not path.startswith(prefix):
        raise DecodeError(path, f"path is not under the managed-ledger root {root!r}")
    return parse_ml_name(path[len(prefix) :], path)


def split_ml_path(path: str, root: str = "/managed-ledgers") -> tuple[MlName, str | None]:
    """Parse a topic OR cursor znode path: ``(MlName, encoded cursor name or None)``.

    4 segments = V2 topic; 5 = V2 cursor when ``persistent`` is the 3rd segment, else V1 topic when it is the
    4th; 6 = V1 cursor. (The only ambiguous 5-segment shape, ``t/persistent/persistent/persistent/x``, is read
    as a V2 cursor.) The cursor name is returned as stored (encoded); decode it with ``decode``.
    """
    prefix = root.rstrip("/") + "/"
    if not path.startswith(prefix):
        raise DecodeError(path, f"path is not under the managed-ledger root {root!r}")
    parts = path[len(prefix) :].split("/")
    n = len(parts)
    if (n == 5 and parts[2] == PERSISTENT) or (n == 6 and parts[3] == PERSISTENT):
        if not parts[-1]:
            raise DecodeError(path, "empty cursor name segment")
        return parse_ml_name("/".join(parts[:-1]), path), parts[-1]
    return parse_ml_name("/".join(parts), path), None


def ml_path(ml: MlName, root: str = "/managed-ledgers") -> str:
    """The topic znode path of a managed ledger."""
    return f"{root.rstrip('/')}/{ml.ml_name}"


def parse_topic(topic: str) -> MlName:
    """Parse ``persistent://t/ns/name`` (V2) or ``persistent://p/c/ns/name`` (V1) like ``TopicName``.

    As in Java, the part after the domain is split into at most 4 pieces: 3 pieces = V2, 4 = V1 (so a V1 local
    name may contain ``/``, a V2 one cannot). Short forms ``name`` (-> ``public/default``) and ``t/ns/name``
    are accepted. Only the ``persistent`` domain has a managed ledger.
    """
    if "://" in topic:
        domain, rest = topic.split("://", 1)
    else:
        short = [p for p in topic.split("/") if p]
        if len(short) == 1:
            domain, rest = PERSISTENT, f"public/default/{short[0]}"
        elif len(short) == 3:
            domain, rest = PERSISTENT, topic
        else:
            raise DecodeError(topic, "invalid short topic name: expected <tenant>/<namespace>/<topic> or <topic>")
    if domain != PERSISTENT:
        raise DecodeError(topic, f"domain {domain!r} has no managed ledger (only persistent:// topics do)")
    parts = rest.split("/", 3)
    if len(parts) == 3:
        is_v1 = False
    elif len(parts) == 4:
        is_v1 = True
    else:
        raise DecodeError(topic, "invalid topic name: expected persistent://tenant/namespace/topic")
    _check_segments(parts, topic)
    local = parts[-1]
    return MlName("/".join(parts[:-1]), encode(local), local, is_v1)


def schema_id_for(ml: MlName) -> str:
    """Schema id (``/schemas/<id>`` node) of a topic: ``<tenant>/<ns>/<encoded base name>``.

    Mirrors ``TopicName.getSchemaName``: the partition suffix is stripped (all partitions share one schema)
    and, for V1 names, the cluster segment is dropped (``property/ns/<enc>``).
    """
    return f"{ml.tenant}/{ml.namespace_portion}/{encode(ml.base_local_name)}"
