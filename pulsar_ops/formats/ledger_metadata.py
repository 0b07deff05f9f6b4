"""BookKeeper ledger metadata (value of a ledger znode), ``LedgerMetadataSerDe`` formats 1, 2 and 3.

Every value starts with ``BookieMetadataFormatVersion\\t<N>\\n`` (at most 10 version digits), then:

* v1 (BK 4.0/4.1): text lines ``quorumSize``, ``ensembleSize``, ``length``, one ``<firstEntryId>\\t<bookie>...``
  line per ensemble, optionally ``<lastEntryId>\\tCLOSED`` (``-102\\tCLOSED`` = IN_RECOVERY). v1 has no digest
  type, password, ack quorum, ctime, custom metadata or cToken: ``encode_ledger_metadata(md, 1)`` drops them
  and decoding v1 gives ``ack_quorum == write_quorum``, ``digest_type None``, ``password b""``.
* v2 (BK 4.2-4.8): protobuf text format of ``LedgerMetadataFormat``.
* v3 (BK 4.9+): varint32 length prefix + binary ``LedgerMetadataFormat``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from google.protobuf import text_format, unknown_fields

from pulsar_ops.errors import DecodeError, TruncatedInputError, UnknownFormatVersionError
from pulsar_ops.formats import proto
from pulsar_ops.formats._pb import try_binary, try_text
from pulsar_ops.formats.bookie_id import valid_bookie_id
from pulsar_ops.formats.ledger_kind import PulsarKind, ledger_kind
from pulsar_ops.formats.ledger_path import ledger_id_from_path

HEADER_PREFIX = b"BookieMetadataFormatVersion\t"
SUPPORTED_VERSIONS = (1, 2, 3)
IN_RECOVERY_MARKER = -102
_MAX_HEADER = len(HEADER_PREFIX) + 11

LedgerState = Literal["OPEN", "IN_RECOVERY", "CLOSED"]

Ensemble = tuple[int, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class LedgerMetadata:
    ledger_id: int | None
    format_version: int
    ensemble_size: int
    write_quorum: int
    ack_quorum: int
    state: LedgerState
    length: int
    last_entry_id: int
    ensembles: tuple[Ensemble, ...]
    digest_type: str | None
    password: bytes
    ctime_ms: int | None
    custom_metadata: tuple[tuple[str, bytes], ...]
    ctoken: int | None

    def custom_bytes(self, key: str) -> bytes | None:
        for k, v in self.custom_metadata:
            if k == key:
                return v
        return None

    def custom(self, key: str) -> str | None:
        """A custom-metadata value decoded as UTF-8 (invalid bytes replaced), None when absent."""
        raw = self.custom_bytes(key)
        return None if raw is None else raw.decode("utf-8", errors="replace")

    @property
    def bookies(self) -> tuple[str, ...]:
        """Every bookie of every ensemble, distinct, in first-seen order."""
        return tuple(dict.fromkeys(b for _, members in self.ensembles for b in members))

    @property
    def is_pulsar(self) -> bool:
        return self.custom_bytes("application") == b"pulsar"

    @property
    def managed_ledger_name(self) -> str | None:
        return self.custom("pulsar/managed-ledger")

    @property
    def pulsar_kind(self) -> PulsarKind:
        """Which Pulsar component owns the ledger: the one rule of :mod:`pulsar_ops.formats.ledger_kind`."""
        return ledger_kind(
            "pulsar" if self.is_pulsar else None,
            self.custom("component"),
            self.custom_bytes("pulsar/cursor") is not None,
        )


def _split_header(data: bytes, path: str) -> tuple[int, bytes]:
    if not data.startswith(HEADER_PREFIX):
        if HEADER_PREFIX.startswith(data):
            raise TruncatedInputError(path, "ledger metadata truncated inside the format-version header")
        raise DecodeError(path, "not ledger metadata: missing 'BookieMetadataFormatVersion' header")
    nl = data.find(b"\n", len(HEADER_PREFIX), _MAX_HEADER + 1)
    if nl < 0:
        if len(data) <= _MAX_HEADER and data[len(HEADER_PREFIX) :].isdigit():
            raise TruncatedInputError(path, "ledger metadata truncated: no newline after the format version")
        raise DecodeError(path, "malformed format-version header (no newline within 10 digits)")
    token = data[len(HEADER_PREFIX) : nl]
    version = _java_parse_int(token) if len(token) <= 10 else None
    if version is None:
        raise DecodeError(path, f"malformed format version {token[:20]!r}")
    if version not in SUPPORTED_VERSIONS:
        raise UnknownFormatVersionError(
            path, f"ledger metadata format version {version} (supported: 1, 2, 3)", hint=None
        )
    return version, data[nl + 1 :]


_JAVA_INT = re.compile(r"[+-]?\d+")


def _java_parse_int(token: bytes) -> int | None:
    """``Integer.parseInt(new String(token, UTF_8))`` as ``LedgerMetadataSerDe.readHeader`` applies it to the
    version digits: an optional sign, then decimal digits of the Basic Multilingual Plane (Java reads a char at a
    time, so ``Character.digit`` accepts e.g. U+0663 but not a surrogate pair), within int32; None when Java
    throws ``NumberFormatException``."""
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        return None  # Java decodes to U+FFFD, which is not a digit
    if not _JAVA_INT.fullmatch(text) or any(ord(c) > 0xFFFF for c in text):
        return None
    value = int(text)
    return value if -(2**31) <= value < 2**31 else None


def _read_varint32(buf: bytes, path: str) -> tuple[int, int]:
    """The v3 length prefix as BookKeeper 4.18's ``readRawVarint32`` reads it (4.17's ``mergeDelimitedFrom``
    agrees on every value 4.18 accepts): at most 5 bytes, the bits past 32 dropped, a negative result refused."""
    result = 0
    shift = 0
    for i in range(min(len(buf), 5)):
        b = buf[i]
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            result &= 0xFFFFFFFF  # Java's int: the 5th byte's bits past 32 are shifted out
            if result >= 1 << 31:
                raise DecodeError(path, "v3 length prefix is negative as a Java int")
            return result, i + 1
        shift += 7
    if len(buf) >= 5:
        raise DecodeError(path, "v3 length prefix is longer than 5 bytes")
    raise TruncatedInputError(path, "ledger metadata truncated inside the v3 length prefix")


def _from_message(msg: Any, version: int, ledger_id: int | None) -> LedgerMetadata:
    state = proto.LEDGER_STATES.get(msg.state, "OPEN")
    return LedgerMetadata(
        ledger_id=ledger_id,
        format_version=version,
        ensemble_size=msg.ensembleSize,
        write_quorum=msg.quorumSize,
        ack_quorum=msg.ackQuorumSize if msg.HasField("ackQuorumSize") else msg.quorumSize,
        state=state,  # type: ignore[arg-type]
        length=msg.length,
        last_entry_id=msg.lastEntryId if msg.HasField("lastEntryId") else -1,
        ensembles=tuple([(s.firstEntryId, tuple(s.ensembleMember[:])) for s in msg.segment[:]]),
        digest_type=proto.DIGEST_TYPES.get(msg.digestType) if msg.HasField("digestType") else None,
        password=bytes(msg.password),
        ctime_ms=msg.ctime if msg.HasField("ctime") else None,
        custom_metadata=tuple([(e.key, e.value) for e in msg.customMetadata[:]]) if len(msg.customMetadata) else (),
        ctoken=msg.cToken if msg.HasField("cToken") else None,
    )


def check_built(ensemble_size: int, wq: int, aq: int, ensembles: tuple[Ensemble, ...], path: str) -> None:
    r"""What BookKeeper refuses after parsing any version (bookkeeper-server ``LedgerMetadataBuilder``,
    ``LedgerMetadataImpl``, ``net/BookieId``; 4.17 and 4.18 alike): every ensemble has ``ensembleSize`` members,
    first entry ids strictly increase, ``ensembleSize >= writeQuorum >= ackQuorum``, at least one ensemble, and
    each member is a valid bookie id (``[a-zA-Z0-9:-_.\-]+``, not ``readonly``)."""
    if not ensembles:
        raise DecodeError(path, "ledger metadata without an ensemble (BookKeeper refuses it)")
    if ensemble_size < wq or wq < aq:
        raise DecodeError(path, f"ledger metadata quorums out of order: ensemble {ensemble_size}, write {wq}, ack {aq}")
    previous: int | None = None
    for first, members in ensembles:
        if len(members) != ensemble_size:
            raise DecodeError(
                path, f"ensemble at entry {first} has {len(members)} member(s), ensembleSize is {ensemble_size}"
            )
        if previous is not None and first <= previous:
            raise DecodeError(path, f"ensemble first entry ids do not increase ({previous} then {first})")
        previous = first
        for m in members:
            if not valid_bookie_id(m):
                raise DecodeError(path, f"invalid bookie id {m[:60]!r} in the ensemble at entry {first}")


_JAVA_INT = re.compile(r"[+-]?\d+")  # Integer/Long.parseInt: optional sign, decimal digits (Character.digit)
_LINE_END = re.compile(r"\r\n|\r|\n")


def _int(text: str, what: str, path: str, bits: int = 64) -> int:
    """``Integer.parseInt`` (bits=32) / ``Long.parseLong`` (bits=64): no spaces, no underscores, in range."""
    value = int(text, 10) if _JAVA_INT.fullmatch(text) else None
    if value is None or not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise DecodeError(path, f"v1 ledger metadata: {what} {text[:40]!r} is not an int{bits}")
    return value


def java_lines(text: str) -> list[str]:
    """The lines ``BufferedReader.readLine()`` returns: ``\\n``, ``\\r`` and ``\\r\\n`` end a line, and a
    terminator at the very end does not start another (an empty line in the middle stays an empty line)."""
    lines = _LINE_END.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _decode_v1(body: bytes, path: str, ledger_id: int | None) -> LedgerMetadata:
    """``LedgerMetadataSerDe.parseVersion1Config``: three number lines, then ensemble lines until a CLOSED line
    or the end. BookKeeper >= 4.9 writes a newline after the last ensemble line, 4.0-4.8 did not: both read."""
    try:
        lines = java_lines(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise DecodeError(path, "v1 ledger metadata is not UTF-8 text") from None
    if len(lines) < 3:
        raise TruncatedInputError(path, f"v1 ledger metadata has {len(lines)} line(s), needs at least 3")
    quorum = _int(lines[0], "quorumSize", path, 32)
    ensemble_size = _int(lines[1], "ensembleSize", path, 32)
    length = _int(lines[2], "length", path)
    state: LedgerState = "OPEN"
    last_entry = -1
    ensembles: list[Ensemble] = []
    for line in lines[3:]:
        parts = line.split("\t")
        while parts and parts[-1] == "":  # Java's String.split drops trailing empty strings
            parts.pop()
        if len(parts) < 2:
            raise DecodeError(path, f"v1 ledger metadata: malformed line {line[:60]!r}")
        if parts[1] == "CLOSED":
            value = _int(parts[0], "lastEntryId", path)
            if value == IN_RECOVERY_MARKER:
                state = "IN_RECOVERY"
            else:
                state, last_entry = "CLOSED", value
            break
        ensembles.append((_int(parts[0], "firstEntryId", path), tuple(parts[1:])))
    return LedgerMetadata(
        ledger_id, 1, ensemble_size, quorum, quorum, state, length, last_entry, tuple(ensembles),
        None, b"", None, (), None,
    )  # fmt: skip


def _v3_message(body: bytes, path: str) -> Any:
    """The LedgerMetadataFormat message of a v3 body (after the header line): varint length prefix, then the
    binary message. Truncation and protobuf failures are DecodeErrors naming ``path``."""
    size, off = _read_varint32(body, path)
    if off + size > len(body):
        raise TruncatedInputError(
            path, f"v3 ledger metadata truncated: length prefix {size}, {len(body) - off} byte(s) present"
        )
    msg, reason = try_binary(proto.LedgerMetadataFormat, body[off : off + size])
    if msg is None:
        raise DecodeError(path, f"v3 ledger metadata: {reason}")
    if _has_group(msg):
        raise DecodeError(
            path, "v3 ledger metadata: an unknown field of the group wire type (BookKeeper 4.18 refuses it)"
        )
    return msg


def _has_group(msg: Any) -> bool:
    """Whether a field the schema does not know, at a level the readers walk (the message, its segments and
    custom-metadata entries), uses the group wire type (3): protobuf-java (BookKeeper <= 4.17) skips it,
    LightProto (>= 4.18, ``LightProtoCodec.skipUnknownField``) throws. ~0.1 us per message without unknowns."""
    for m in (msg, *msg.segment, *msg.customMetadata):
        unknown = unknown_fields.UnknownFieldSet(m)
        if any(unknown[i].wire_type == 3 for i in range(len(unknown))):
            return True
    return False


def decode_ledger_metadata(data: bytes, path: str) -> LedgerMetadata:
    """Decode a ledger znode value; ``ledger_id`` comes from ``path`` (None when it is not a ledger path)."""
    data = bytes(data)
    version, body = _split_header(data, path)
    try:
        ledger_id = ledger_id_from_path(path)
    except DecodeError:
        ledger_id = None
    if version == 1:
        md = _decode_v1(body, path, ledger_id)
    elif version == 2:
        msg, reason = try_text(proto.LedgerMetadataFormat, body)
        if msg is None:
            raise DecodeError(path, f"v2 ledger metadata: {reason}")
        md = _from_message(msg, 2, ledger_id)
    else:
        md = _from_message(_v3_message(body, path), 3, ledger_id)
    check_built(md.ensemble_size, md.write_quorum, md.ack_quorum, md.ensembles, path)
    return md


# (format_version, state, length, last_entry_id, ensemble_size, write_quorum, ack_quorum, digest_type, ctime_ms,
#  custom_metadata, ensembles): what the scraper stores of a ledger, in that order.
LedgerFields = tuple[
    int, str, int, int, int, int, int, str | None, int | None, tuple[tuple[str, bytes], ...], tuple[Ensemble, ...]
]

_V3_HEADER = HEADER_PREFIX + b"3\n"
_V2_HEADER = HEADER_PREFIX + b"2\n"

_I32 = (-(2**31), 2**31 - 1)
_I64 = (-(2**63), 2**63 - 1)
_V2_INTS: dict[str, tuple[int, int]] = {
    "quorumSize": _I32, "ensembleSize": _I32, "length": _I64, "lastEntryId": _I64, "ackQuorumSize": _I32,
    "ctime": _I64, "cToken": _I64,
}  # fmt: skip
_V2_STATES = {"OPEN": 1, "IN_RECOVERY": 2, "CLOSED": 3}
_V2_DIGESTS = {"CRC32": 1, "HMAC": 2, "CRC32C": 3, "DUMMY": 4}


def _v2_int(value: str, bounds: tuple[int, int]) -> int | None:
    digits = value[1:] if value[:1] == "-" else value
    if not digits or not (digits.isascii() and digits.isdigit()) or (digits[0] == "0" and len(digits) > 1):
        return None
    n = int(value)
    return n if bounds[0] <= n <= bounds[1] else None


def _v2_str(value: str) -> str | None:
    if len(value) < 2 or value[0] != '"' or value[-1] != '"' or '"' in value[1:-1]:
        return None
    return value[1:-1]


def _text_v2_fields(body: bytes) -> LedgerFields | None:
    """The v2 (protobuf text) values in the exact shape ``TextFormat`` prints them, or None for anything else
    (escapes, comments, other spellings, duplicates, missing required fields): the caller then parses with
    ``text_format`` and gets its values or its error. Equal to that parse where it answers (property-tested)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\\" in text or "#" in text or "'" in text or "\r" in text:
        return None
    top: dict[str, Any] = {}
    ensembles: list[Ensemble] = []
    custom: list[tuple[str, bytes]] = []
    nested: str | None = None
    members: list[str] = []
    first: int | None = None
    key, val = "", b""
    for raw in text.split("\n"):
        line = raw.strip(" ")
        if not line:
            continue
        if line == "}":
            if nested == "segment":
                if first is None:
                    return None
                ensembles.append((first, tuple(members)))
            elif nested == "customMetadata":
                custom.append((key, val))
            else:
                return None
            nested = None
            continue
        if line.endswith(" {"):
            name = line[:-2]
            if nested is not None or name not in ("segment", "customMetadata"):
                return None
            nested, members, first, key, val = name, [], None, "", b""
            continue
        name, sep, value = line.partition(": ")
        if not sep or " " in name:
            return None
        if nested == "segment":
            if name == "ensembleMember":
                sv = _v2_str(value)
                if sv is None:
                    return None
                members.append(sv)
            elif name == "firstEntryId" and first is None:
                first = _v2_int(value, _I64)
                if first is None:
                    return None
            else:
                return None
            continue
        if nested == "customMetadata":
            sv = _v2_str(value)
            if sv is None or (name == "key" and key) or (name == "value" and val):
                return None
            if name == "key":
                key = sv
            elif name == "value":
                val = sv.encode("utf-8")
            else:
                return None
            if not sv:
                return None  # an explicit empty value: let text_format decide
            continue
        if name in top:
            return None
        bounds = _V2_INTS.get(name)
        if bounds is not None:
            iv = _v2_int(value, bounds)
            if iv is None:
                return None
            top[name] = iv
        elif name == "state" and value in _V2_STATES:
            top[name] = _V2_STATES[value]
        elif name == "digestType" and value in _V2_DIGESTS:
            top[name] = _V2_DIGESTS[value]
        elif name == "password" and _v2_str(value) is not None:
            top[name] = value
        else:
            return None
    if nested is not None or not {"quorumSize", "ensembleSize", "length", "state"} <= top.keys():
        return None
    wq = top["quorumSize"]
    digest = top.get("digestType")
    return (
        2,
        proto.LEDGER_STATES.get(top["state"], "OPEN"),
        top["length"],
        top.get("lastEntryId", -1),
        top["ensembleSize"],
        wq,
        top.get("ackQuorumSize", wq),
        None if digest is None else proto.DIGEST_TYPES.get(digest),
        top.get("ctime"),
        tuple(custom),
        tuple(ensembles),
    )


def _fields_of(md: LedgerMetadata) -> LedgerFields:
    return (
        md.format_version, md.state, md.length, md.last_entry_id, md.ensemble_size, md.write_quorum,
        md.ack_quorum, md.digest_type, md.ctime_ms, md.custom_metadata, md.ensembles,
    )  # fmt: skip


def ledger_metadata_fields(data: bytes, path: str) -> LedgerFields:
    """The values ``decode_ledger_metadata`` gives for the fields the scraper stores, as one tuple (see
    ``LedgerFields``), without building a ``LedgerMetadata`` nor parsing the ledger id from ``path``.

    Same values and the same errors as ``decode_ledger_metadata`` (property-tested); v1 and v2 values go
    through it, v3 (the common case) reads the protobuf message straight into the tuple.
    """
    data = bytes(data)
    if not data.startswith(_V3_HEADER):
        if data.startswith(_V2_HEADER):
            fields = _text_v2_fields(data[len(_V2_HEADER) :])
            if fields is not None:
                check_built(fields[4], fields[5], fields[6], fields[10], path)
                return fields
        return _fields_of(decode_ledger_metadata(data, path))
    msg = _v3_message(data[len(_V3_HEADER) :], path)
    has = msg.HasField
    wq = msg.quorumSize
    ensembles = tuple([(sg.firstEntryId, tuple(sg.ensembleMember[:])) for sg in msg.segment[:]])
    aq = msg.ackQuorumSize if has("ackQuorumSize") else wq
    check_built(msg.ensembleSize, wq, aq, ensembles, path)
    return (
        3,
        proto.LEDGER_STATES.get(msg.state, "OPEN"),
        msg.length,
        msg.lastEntryId if has("lastEntryId") else -1,
        msg.ensembleSize,
        wq,
        aq,
        proto.DIGEST_TYPES.get(msg.digestType) if has("digestType") else None,
        msg.ctime if has("ctime") else None,
        tuple([(e.key, e.value) for e in msg.customMetadata[:]]) if len(msg.customMetadata) else (),
        ensembles,
    )


def _to_message(md: LedgerMetadata) -> Any:
    msg = proto.LedgerMetadataFormat(
        quorumSize=md.write_quorum,
        ensembleSize=md.ensemble_size,
        length=md.length,
        lastEntryId=md.last_entry_id,
        state=proto.LEDGER_STATE_NUMBERS[md.state],
    )
    for first, members in md.ensembles:
        msg.segment.add(ensembleMember=members, firstEntryId=first)
    if md.digest_type is not None:
        msg.digestType = proto.DIGEST_TYPE_NUMBERS[md.digest_type]
    if md.digest_type is not None or md.password:
        msg.password = md.password
    msg.ackQuorumSize = md.ack_quorum
    if md.ctime_ms is not None:
        msg.ctime = md.ctime_ms
    for key, value in md.custom_metadata:
        msg.customMetadata.add(key=key, value=value)
    if md.ctoken is not None:
        msg.cToken = md.ctoken
    return msg


def _encode_v1(md: LedgerMetadata) -> bytes:
    """As BookKeeper >= 4.9 ``serializeVersion1``: every number and ensemble line ends with a newline, the CLOSED
    line (if any) does not; so an OPEN ledger ends with a newline after its last ensemble line."""
    text = "".join(f"{n}\n" for n in (md.write_quorum, md.ensemble_size, md.length))
    for first, members in md.ensembles:
        text += "\t".join([str(first), *members]) + "\n"
    if md.state == "IN_RECOVERY":
        text += f"{IN_RECOVERY_MARKER}\tCLOSED"
    elif md.state == "CLOSED":
        text += f"{md.last_entry_id}\tCLOSED"
    return text.encode("utf-8")


def encode_ledger_metadata(md: LedgerMetadata, version: int = 3) -> bytes:
    """Serialize like ``LedgerMetadataSerDe`` for format 1, 2 or 3 (ValueError for any other version).

    v1 cannot carry digest type, password, ack quorum, ctime, custom metadata or cToken: they are dropped.
    """
    header = HEADER_PREFIX + str(version).encode() + b"\n"
    if version == 1:
        return header + _encode_v1(md)
    if version == 2:
        return header + text_format.MessageToString(_to_message(md)).encode("utf-8")
    if version == 3:
        body: bytes = _to_message(md).SerializeToString()
        n = len(body)
        prefix = bytearray()
        while True:
            if n < 0x80:
                prefix.append(n)
                break
            prefix.append((n & 0x7F) | 0x80)
            n >>= 7
        return header + bytes(prefix) + body
    raise ValueError(f"unsupported ledger metadata format version {version} (1, 2 or 3)")
