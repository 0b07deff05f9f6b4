"""The native hot path (pulsar_ops/_native.c) gives exactly the pure-Python row parts, or None and leaves the
decision (values or the DecodeError) to Python. It must also really take the common case: a native module that
returned None for everything would pass every equivalence check and make the scrape slow."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import replace
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pulsar_ops import native
from pulsar_ops.errors import DecodeError
from pulsar_ops.formats import cursor, managed_ledger
from pulsar_ops.formats.cursor import ManagedCursorInfo, encode_cursor_info
from pulsar_ops.formats.ledger_metadata import LedgerMetadata, encode_ledger_metadata
from pulsar_ops.formats.managed_ledger import LedgerInfo, ManagedLedgerInfo, OffloadInfo, encode_managed_ledger_info
from pulsar_ops.scrape.extract_fast import bk_ledger_parts
from tests.unit.formats.strategies import bookie, cursor_infos, i64, ledger_metadatas, ml_infos

PATH = "/ledgers/00/0000/L0042"
PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NATIVE = native.bk_ledger


def _compiler() -> str | None:
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    return shutil.which(cc[0]) if cc else None


def test_the_native_path_is_built_where_a_compiler_exists() -> None:
    if os.environ.get(native.DISABLE_ENV, "").strip().lower() in ("0", "off", "false", "no"):
        pytest.skip(f"{native.DISABLE_ENV}=0 switches the native path off")
    if os.environ.get("PULSAR_OPS_NO_NATIVE", "").strip() not in ("", "0"):
        pytest.skip("PULSAR_OPS_NO_NATIVE: installed without the native path on purpose")
    if _compiler() is None:
        pytest.skip("no C compiler: pulsar-ops runs its pure-Python path (same results, slower)")
    assert NATIVE is not None, native.STATUS
    assert native.STATUS == "native"


needs_native = pytest.mark.skipif(NATIVE is None, reason=f"native path not loaded: {native.STATUS}")


def python_parts(data: bytes) -> tuple[Any, ...] | DecodeError:
    try:
        return bk_ledger_parts(data, PATH)
    except DecodeError as e:
        return e


def agree(fast: Any, slow: Any, value: bytes, prefix: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
    """fast(value) is None or, with ``prefix`` (what the Python view adds), equals slow(value) value for value and
    type for type; where Python raises, fast must give None."""
    assert fast is not None
    got = fast(value)
    want = slow(value)
    if got is not None:
        assert not isinstance(want, DecodeError), f"native accepted what Python rejects: {want}"
        assert (*prefix, *got) == want
        assert [type(v) for v in (*prefix, *got)] == [type(v) for v in want]
    return got


def check(data: bytes) -> tuple[Any, ...] | None:
    return agree(NATIVE, python_parts, data)


ascii_text = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=24)
hostile_text = st.text(max_size=12) | st.sampled_from(['"', "\\", "\x00", "\x7f", "\n\t\r\b\f", "é", "€", "\ud7ff"])
pulsar_keys = st.sampled_from(
    ["application", "component", "pulsar/managed-ledger", "pulsar/cursor", "pulsar/schemaId", "pulsar/compactedTopic"]
)


@st.composite
def ascii_ledgers(draw: st.DrawFn) -> LedgerMetadata:
    md: LedgerMetadata = draw(ledger_metadatas())
    keys = draw(st.lists(pulsar_keys | ascii_text, max_size=8, unique=True))
    custom = tuple((k, draw(ascii_text).encode("ascii")) for k in keys)
    starts = draw(st.lists(st.integers(0, 2**62), min_size=1, max_size=4, unique=True))
    members = st.lists(bookie, min_size=md.ensemble_size, max_size=md.ensemble_size)  # what the builder accepts
    ensembles = tuple((s, tuple(draw(members))) for s in sorted(starts))
    return replace(md, custom_metadata=custom, ensembles=ensembles)


@needs_native
@PROPS
@given(ascii_ledgers())
def test_well_formed_ascii_v3_is_taken_natively_with_python_values(md: LedgerMetadata) -> None:
    data = encode_ledger_metadata(md, 3)
    assert check(data) is not None, "the native path refused a well-formed ASCII v3 ledger"


@needs_native
@PROPS
@given(ledger_metadatas(), st.lists(st.tuples(hostile_text, hostile_text.map(str.encode)), max_size=5))
def test_hostile_custom_metadata_is_equal_or_left_to_python(md: LedgerMetadata, custom: list[Any]) -> None:
    check(encode_ledger_metadata(replace(md, custom_metadata=tuple(custom)), 3))


@needs_native
@PROPS
@given(ascii_ledgers(), st.lists(st.tuples(pulsar_keys | ascii_text, st.binary(max_size=12)), max_size=5))
def test_binary_custom_values_are_equal_or_left_to_python(md: LedgerMetadata, custom: list[Any]) -> None:
    for version in (3, 2):
        check(encode_ledger_metadata(replace(md, custom_metadata=tuple(custom)), version))


def _mutate(raw: bytearray, data: st.DataObject) -> bytes:
    if not raw:
        return bytes(data.draw(st.binary(max_size=8)))
    op = data.draw(st.sampled_from(["flip", "truncate", "insert", "delete"]))
    i = data.draw(st.integers(0, len(raw) - 1))
    if op == "flip":
        raw[i] ^= data.draw(st.integers(1, 255))
    elif op == "truncate":
        del raw[i:]
    elif op == "insert":
        raw[i:i] = data.draw(st.binary(min_size=1, max_size=4))
    else:
        del raw[i]
    return bytes(raw)


@needs_native
@PROPS
@given(ascii_ledgers(), st.data())
def test_corrupted_encodings_are_equal_or_left_to_python(md: LedgerMetadata, data: st.DataObject) -> None:
    check(_mutate(bytearray(encode_ledger_metadata(md, 3)), data))


@needs_native
@PROPS
@given(st.binary(max_size=80))
@example(b"")
@example(b"BookieMetadataFormatVersion\t3\n")
@example(b"BookieMetadataFormatVersion\t3\n\x00")
@example(b"BookieMetadataFormatVersion\t3\n\xff\xff\xff\xff\x0f")
def test_garbage_after_the_v3_header_is_equal_or_left_to_python(body: bytes) -> None:
    check(b"BookieMetadataFormatVersion\t3\n" + body)


# v1 (LedgerMetadataSerDe.parseVersion1Config): taken natively in the plain shape BookKeeper writes (ASCII,
# '\n' line ends, numbers without '+' or leading zeros, no empty line); the rest is Python's.
V1 = b"BookieMetadataFormatVersion\t1\n"


@needs_native
@PROPS
@given(ascii_ledgers(), st.sampled_from(["OPEN", "CLOSED", "IN_RECOVERY"]), st.integers(-1, 2**63 - 1))
def test_well_formed_v1_text_is_taken_natively_with_python_values(md: LedgerMetadata, state: str, last: int) -> None:
    md = replace(md, format_version=1, state=state, last_entry_id=last if state == "CLOSED" else -1)  # type: ignore[arg-type]
    got = check(encode_ledger_metadata(md, 1))
    assert got is not None, "the native path refused a well-formed v1 ledger"
    assert got[:2] == (1, state)


@needs_native
@PROPS
@given(ascii_ledgers(), st.data())
def test_corrupted_v1_text_is_equal_or_left_to_python(md: LedgerMetadata, data: st.DataObject) -> None:
    check(_mutate(bytearray(encode_ledger_metadata(replace(md, format_version=1), 1)), data))


_V1_LINES = st.sampled_from(
    [
        "2", "3", "02", "+2", "-2", "0", "2147483648", "10", "9223372036854775807", "9223372036854775808", "",
        " 2", "2 ", "0\tb1:3181\tb2:3181", "5\tb1:3181\tb3:3181", "5\tb1:3181\tb3:3181\t", "5\tb1:3181\t\tb3:3181",
        "0\tb1:3181", "-1\tb1:3181\tb2:3181", "0\treadonly\tb2:3181", "0\tb 1\tb2:3181", "x\tb1:3181\tb2:3181",
        "4\tCLOSED", "-1\tCLOSED", "-102\tCLOSED", "4\tCLOSED\tx", "4\tclosed", "04\tCLOSED", "\tCLOSED", "4\t\tCLOSED",
        "9223372036854775808\tCLOSED", "0\tb1:3181\u00e9\tb2:3181", "1\r", "0\tb1:3181\tb2:3181\r",
    ]
)  # fmt: skip


@needs_native
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_V1_LINES, max_size=10), st.sampled_from(["\n", "\r\n", "\r"]), st.booleans())
@example(["2", "2", "10", "0\tb1:3181\tb2:3181", "4\tCLOSED", "", "junk"], "\n", False)  # nothing read after CLOSED
@example(["2", "2", "10", "0\tb1:3181\tb2:3181", "5\tb1:3181\tb3:3181\t"], "\n", True)  # trailing tab dropped
@example(["2", "2", "10", "0\tb1:3181\tb2:3181", ""], "\n", True)  # an empty last line: Python refuses
def test_v1_line_soup_is_equal_or_left_to_python(lines: list[str], end: str, trailing: bool) -> None:
    check(V1 + (end.join(lines) + (end if trailing else "")).encode())


@needs_native
@pytest.mark.parametrize(
    ("body", "taken"),
    [
        ("2\n2\n10\n0\tb1:3181\tb2:3181\n4\tCLOSED", True),
        ("2\n2\n10\n0\tb1:3181\tb2:3181\n", True),  # OPEN, BookKeeper >= 4.9's final newline
        ("2\n2\n10\n0\tb1:3181\tb2:3181", True),  # OPEN, 4.0-4.8's
        ("2\n2\n10\n0\tb1:3181\tb2:3181\n-102\tCLOSED", True),  # IN_RECOVERY
        ("2\n2\n10\n0\tb1:3181\tb2:3181\n-1\tCLOSED", True),  # closed empty
        ("2\n2\n10\n0\tb1:3181\tb2:3181\n5\tb1:3181\tb2:3181\n9\tCLOSED\n\n\xff", False),  # not UTF-8: refused
        ("2\n2\n10\n0\tb1:3181\tb2:3181\n9\tCLOSED\n\njunk", True),  # what follows CLOSED is not read
        ("2\n2\n10\n0\tb1:3181\tb2:3181\n\n", False),  # an empty line
        ("2\n2\n10\n0\tb1:3181\tb2:3181\r\n", False),  # '\r': Python's
        ("2\n2\n10\n", False),  # no ensemble: the builder refuses
        ("2\n2\n", False),  # two lines: truncated
        ("2\n3\n10\n0\tb1:3181\tb2:3181\n", False),  # 2 members, ensembleSize 3
        ("3\n2\n10\n0\tb1:3181\tb2:3181\n", False),  # quorum above the ensemble
        ("2\n2\n10\n5\tb1:3181\tb2:3181\n5\tb1:3181\tb2:3181\n", False),  # first entries not increasing
        ("02\n2\n10\n0\tb1:3181\tb2:3181\n", False),  # leading zero: Python's int() decides
    ],
)
def test_v1_edges(body: str, taken: bool) -> None:
    got = check(V1 + body.encode("latin-1"))
    assert (got is not None) is taken


# v2 (protobuf text): taken natively only in the exact shape TextFormat prints, printable ASCII without escapes,
# and with every custom-metadata key and value non-empty; the rest is Python's (text_format decides).
_PLAIN_V2 = set(map(chr, range(0x20, 0x7F))) - set("\\\"#'")


def _v2_plain(md: LedgerMetadata) -> bool:
    texts = [k for k, _ in md.custom_metadata] + [v.decode("ascii", "replace") for _, v in md.custom_metadata]
    return all(t and set(t) <= _PLAIN_V2 for t in texts) and set(md.password.decode("latin-1")) <= _PLAIN_V2


@needs_native
@PROPS
@given(ascii_ledgers())
def test_well_formed_v2_text_is_taken_natively_with_python_values(md: LedgerMetadata) -> None:
    data = encode_ledger_metadata(replace(md, format_version=2), 2)
    got = check(data)
    if _v2_plain(md) and len({k for k, _ in md.custom_metadata}) == len(md.custom_metadata):
        assert got is not None, "the native path refused a well-formed plain v2 ledger"
        assert got[0] == 2


@needs_native
@PROPS
@given(ascii_ledgers(), st.data())
def test_corrupted_v2_text_is_equal_or_left_to_python(md: LedgerMetadata, data: st.DataObject) -> None:
    check(_mutate(bytearray(encode_ledger_metadata(md, 2)), data))


_V2_CANONICAL = (
    "quorumSize: 2\nensembleSize: 2\nlength: 10\nlastEntryId: 4\nstate: CLOSED\nsegment {\n"
    '  ensembleMember: "b1:3181"\n  ensembleMember: "b2:3181"\n  firstEntryId: 0\n}\ndigestType: CRC32C\n'
    'password: ""\nackQuorumSize: 2\nctime: 1700000000000\ncustomMetadata {\n  key: "application"\n'
    '  value: "pulsar"\n}\n'
)


@needs_native
@pytest.mark.parametrize(
    ("old", "new", "taken"),
    [
        ("", "", True),
        ("length: 10", "length: 010", False),  # text_format reads octal: Python decides
        ("length: 10", "length: 0x10", False),
        ("length: 10", "length: -0", True),
        ("length: 10", "length: 9223372036854775807", True),
        ("length: 10", "length: 9223372036854775808", False),
        ("lastEntryId: 4", "lastEntryId: -9223372036854775808", True),
        ("quorumSize: 2", "quorumSize: 2147483648", False),
        ("ackQuorumSize: 2\n", "", True),  # defaults to the write quorum
        ("ctime: 1700000000000", "ctime: 0", True),  # 0 reads as no ctime
        ("lastEntryId: 4\n", "", True),
        ("state: CLOSED", "state: 3", False),
        ("digestType: CRC32C", "digestType: crc32c", False),
        ('password: ""', 'password: "\\001"', False),
        ('value: "pulsar"', 'value: ""', False),
        ('  value: "pulsar"\n', "", False),  # no value: Python's b""
        ('value: "pulsar"', 'value: "pul#sar"', False),
        ("segment {", "segment  {", False),
        ("segment {", "segment{", False),
        ("  firstEntryId: 0\n", "", False),
        ("  firstEntryId: 0", "  firstEntryId: 0\n  firstEntryId: 0", False),
        ("length: 10", "length: 10\nlength: 10", False),
        ("length: 10", "length:  10", False),
        ("length: 10", "length: 10 ", True),  # trailing spaces are stripped, as _text_v2_fields does
        ("length: 10", "\tlength: 10", False),
        ("length: 10", "length: 10\r", False),
        ("state: CLOSED", "state: CLOSED\nunknown: 1", False),
        ("}\ndigestType", "digestType", False),  # unclosed segment
        ('"b2:3181"', '"b1:3181"', True),  # de-duplicated bookies, as Python does
        ('  ensembleMember: "b2:3181"\n', "", False),  # fewer members than the ensemble: the builder refuses
        ("quorumSize: 2", "quorumSize: 3", False),  # write quorum above the ensemble: the builder refuses
    ],
)  # fmt: skip
def test_v2_edges(old: str, new: str, taken: bool) -> None:
    assert old in _V2_CANONICAL
    got = check(b"BookieMetadataFormatVersion\t2\n" + _V2_CANONICAL.replace(old, new, 1).encode())
    assert (got is not None) is taken


_V2_LINES = st.sampled_from(
    [
        "quorumSize: 2", "quorumSize: 02", "quorumSize: -2", "quorumSize: 2147483648", "ensembleSize: 2",
        "ensembleSize: 3", "length: 0", "length: -0", "length: 010", "length: 9223372036854775807",
        "length: 9223372036854775808",
        "length: -9223372036854775808", "lastEntryId: -1", "lastEntryId: 4", "state: CLOSED", "state: OPEN",
        "state: closed", "state: 3", "digestType: CRC32C", "digestType: NONE", 'password: ""', "password: x",
        "ackQuorumSize: 1", "ackQuorumSize: 3", "ctime: 0", "ctime: 17", "cToken: 5", "segment {", "customMetadata {",
        "}", "", "  ", 'ensembleMember: "b1:3181"', 'ensembleMember: "b2:3181"', 'ensembleMember: "b:1" ',
        'ensembleMember: "readonly"', 'ensembleMember: ""', "firstEntryId: 0", "firstEntryId: 5",
        "firstEntryId: -1", 'key: "k"', 'key: "k2"', 'key: ""', 'value: "v"', 'value: "a\\"b"', "value: v",
        "segment{", "segment  {", "quorumSize:2", "quorum Size: 2", "unknown: 1", "\tquorumSize: 2",
        "length: 1 # c", "# c", "state: CLOSED\r",
    ]
)  # fmt: skip


@needs_native
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_V2_LINES, max_size=24), st.sampled_from(["", " ", "  "]))
@example(
    [
        "quorumSize: 2", "ensembleSize: 2", "length: 0", "state: CLOSED", "segment {", 'ensembleMember: "b1:3181"',
        'ensembleMember: "b2:3181"', "firstEntryId: 0", "}", "customMetadata {", 'key: "k"', 'value: "v"', "}",
    ],
    "  ",
)  # fmt: skip
def test_v2_line_soup_is_equal_or_left_to_python(lines: list[str], indent: str) -> None:
    body = "\n".join(indent + line if i % 2 else line for i, line in enumerate(lines))
    check(b"BookieMetadataFormatVersion\t2\n" + body.encode())


def _plain(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = dict(
        ledger_id=None, format_version=3, ensemble_size=2, write_quorum=2, ack_quorum=2, state="CLOSED",
        length=10, last_entry_id=4, ensembles=((0, ("b1:3181", "b2:3181")),), digest_type="CRC32C",
        password=b"", ctime_ms=1_700_000_000_000, custom_metadata=(), ctoken=None,
    )  # fmt: skip
    base.update(over)
    return base


@needs_native
@pytest.mark.parametrize(
    ("over", "taken"),
    [
        ({}, True),
        ({"ctime_ms": 0}, True),  # 0 reads as "no ctime", like the Python path
        ({"ctime_ms": None, "digest_type": None}, True),
        ({"ensembles": ((0, ("b1:3181", "b2:3181")), (5, ("b1:3181", "b3:3181")))}, True),  # de-duplicated in order
        ({"ensembles": ((0, ("b1:3181",)), (5, ("b1:3181", "b2:3181")))}, False),  # 1 member: Python refuses
        ({"custom_metadata": (("k", b"v"), ("k", b"w"))}, False),  # duplicate key: Python decides
        ({"custom_metadata": (("k", b"\xff"),)}, True),  # not UTF-8: "base64:/w==" in the JSON, as Python writes
        ({"custom_metadata": (("k", b"\x08\xb6\xa1\x0c"), ("a", b"x"))}, True),  # the others stay plain
        ({"custom_metadata": (("k", b"\xff\xfe\xfd\xfc\xfb"),)}, True),
        ({"custom_metadata": (("application", b"\xff"),)}, False),  # an extracted column: Python's replacement
        ({"custom_metadata": (("pulsar/compactedTopic", b"\xff"),)}, False),
        ({"custom_metadata": (("k", b"\xff"), ("a", "\u00e9".encode()))}, True),  # base64 beside \\u00e9
        ({"custom_metadata": (("k", "\u00e9".encode()),)}, True),  # valid UTF-8, not ASCII: json's \\u escapes
        ({"custom_metadata": (("k", "\u20ac\U0001f680\uffff\x7f\u0800".encode()),)}, True),  # surrogate pair
        ({"custom_metadata": (("k", b"\xed\xa0\x80"),)}, True),  # an encoded surrogate is not UTF-8: base64
        ({"custom_metadata": (("k", b"\xc0\x80"),)}, True),  # overlong: base64
        ({"custom_metadata": (("component", "\u00e9".encode()),)}, False),  # an extracted column: Python's
        ({"custom_metadata": tuple((f"k{i}", b"v") for i in range(65))}, False),  # past the fixed limit
        ({"ensembles": tuple((i, ("b1:1", "b2:1")) for i in range(257))}, False),
    ],
)
def test_edges(over: dict[str, Any], taken: bool) -> None:
    md = LedgerMetadata(**_plain(**over))
    got = check(encode_ledger_metadata(md, 3))
    assert (got is not None) is taken


@needs_native
def test_non_bytes_values_are_left_to_python() -> None:
    data = encode_ledger_metadata(LedgerMetadata(**_plain()), 3)
    assert NATIVE is not None
    assert NATIVE(bytearray(data)) is None  # type: ignore[arg-type]
    assert NATIVE(memoryview(data)) is None  # type: ignore[arg-type]
    assert NATIVE(data) is not None


# ---- the data hash the batches write (native.sha256_hex): the x86 SHA extensions where the CPU has them --------

_SHA_LENGTHS = [*range(0, 200), 447, 448, 511, 512, 4096, 65535, 1 << 20]


def _sha_mismatches() -> list[int]:
    import hashlib

    assert native.sha256_hex is not None
    out = []
    for n in _SHA_LENGTHS:
        data = bytes((i * 131 + n) & 0xFF for i in range(n))
        if native.sha256_hex(data) != hashlib.sha256(data).hexdigest():
            out.append(n)
    return out


def _portable_run(impl_attr: str, mismatches: str, env_key: str) -> str:
    """In a fresh interpreter with ``env_key=c`` (the portable C loop forced at import): the implementation the module
    reports (``_native.<impl_attr>``) and what ``<mismatches>()`` of this file finds there."""
    code = (
        f"from pulsar_ops import _native; from tests.unit.test_native import {mismatches}; "
        f"print(_native.{impl_attr}, {mismatches}())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, env_key: "c"}, capture_output=True, text=True, check=True
    ).stdout
    return out.strip()


@needs_native
@pytest.mark.parametrize("impl", ["default", "c"])
def test_the_native_hash_is_hashlibs(impl: str) -> None:
    """Every padding case (one block, two, 55/56/63/64-byte tails) and long values, in both implementations: the
    one picked at import (the SHA instructions when the CPU has them) and the portable C rounds."""
    if impl == "default":
        assert _sha_mismatches() == []
        return
    assert _portable_run("SHA256", "_sha_mismatches", "PULSAR_OPS_NATIVE_SHA") == "c []"


# ---- the seals' and log records' checksum (native.adler32): AVX2 where the CPU has it ------------------------------

# around zlib's NMAX (5552: where both reduce mod 65521) and the 32-byte vector blocks; all 0xFF is the largest sum
_ADLER_LENGTHS = [*range(0, 100), 5535, 5536, 5551, 5552, 5553, 5584, 11104, 11105, 65536, (1 << 20) + 7]


def _adler_mismatches() -> list[tuple[int, int, int]]:
    import zlib

    assert native.adler32 is not None
    out = []
    for n in _ADLER_LENGTHS:
        for fill in (None, 0xFF):
            data = bytes((i * 131 + n) & 0xFF for i in range(n)) if fill is None else bytes([fill]) * n
            for start in (1, 0xFFF0FFF0, 0x12345678):
                if native.adler32(data, start) != zlib.adler32(data, start):
                    out.append((n, fill or 0, start))
        if native.adler32(memoryview(data)[1:]) != zlib.adler32(memoryview(data)[1:]):
            out.append((n, -1, 1))
    return out


@needs_native
@pytest.mark.parametrize("impl", ["default", "c"])
def test_the_native_checksum_is_zlibs(impl: str) -> None:
    """Both implementations (the one picked at import: AVX2 when the CPU has it; the portable loop) give
    zlib.adler32 for short, block-sized and NMAX-straddling inputs, the largest sums and any running value."""
    if impl == "default":
        assert _adler_mismatches() == []
        return
    assert _portable_run("ADLER32", "_adler_mismatches", "PULSAR_OPS_NATIVE_ADLER") == "c []"


# ---- the snapshot nodes' digest CRC (native.crc32): folded with PCLMULQDQ where the CPU has it ----------------------

# the table alone (< 64), the first fold (64), the 16-byte folds and their tails, the 64-byte lane loop
_CRC_LENGTHS = [*range(0, 150), 191, 192, 193, 255, 256, 257, 1023, 1024, 1025, 4096 + 13, (1 << 16) + 5]


def _crc_mismatches() -> list[tuple[int, int, int]]:
    import zlib

    assert native.crc32 is not None
    out = []
    for n in _CRC_LENGTHS:
        for fill in (None, 0xFF, 0):
            data = bytes((i * 167 + n) & 0xFF for i in range(n)) if fill is None else bytes([fill]) * n
            for start in (0, 0xFFFFFFFF, 0x12345678):
                if native.crc32(data, start) != zlib.crc32(data, start):
                    out.append((n, fill if fill is not None else -1, start))
    return out


@needs_native
@pytest.mark.parametrize("impl", ["default", "c"])
def test_the_native_crc_is_zlibs(impl: str) -> None:
    """Both implementations (the one picked at import: carry-less multiplication when the CPU has it; the table)
    give zlib.crc32 below, at and past each folding step's length, for any running value."""
    if impl == "default":
        assert _crc_mismatches() == []
        return
    assert _portable_run("CRC32", "_crc_mismatches", "PULSAR_OPS_NATIVE_CRC") == "c []"


def test_the_switch_turns_the_native_path_off() -> None:
    code = "from pulsar_ops import native; print(native.bk_ledger is None, native.STATUS)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, native.DISABLE_ENV: "0"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.startswith("True off")


# ---- managed-ledger and cursor infos: native(plain) vs the pure-Python fields of the same value ----------------

ML_NATIVE = native.ml_info
CURSOR_NATIVE = native.cursor_info


def python_ml(data: bytes) -> tuple[Any, ...] | DecodeError:
    with mock.patch.object(managed_ledger, "_native_ml", None):
        try:
            f = managed_ledger.managed_ledger_fields(data, PATH)
        except DecodeError as e:
            return e
    return (f.format, f.compression, f.ledgers, f.terminated, f.properties)


def python_cursor(data: bytes) -> tuple[Any, ...] | DecodeError:
    with mock.patch.object(cursor, "_native_cursor", None):
        try:
            f = cursor.cursor_fields(data, PATH)
        except DecodeError as e:
            return e
    return (
        f.compression, f.cursors_ledger_id, f.mark_delete, f.last_active_ms, f.ranges, f.batch_index_count,
        f.properties, f.cursor_properties,
    )  # fmt: skip


def check_ml(plain: bytes) -> tuple[Any, ...] | None:
    got = agree(ML_NATIVE, python_ml, plain, ("binary", "NONE"))
    want = python_ml(plain)
    if got is not None and not isinstance(want, DecodeError):
        assert [type(v) for v in got[0]] == [type(v) for v in want[2]]  # the ledger rows, element by element
    return got


def check_cursor(plain: bytes) -> tuple[Any, ...] | None:
    return agree(CURSOR_NATIVE, python_cursor, plain, ("NONE",))


ascii_kv = st.tuples(ascii_text, ascii_text)


@st.composite
def ascii_ml_infos(draw: st.DrawFn) -> ManagedLedgerInfo:
    info: ManagedLedgerInfo = draw(ml_infos)
    ledgers = tuple(replace(li, properties=tuple(draw(st.lists(ascii_kv, max_size=2)))) for li in info.ledgers)
    return replace(info, ledgers=ledgers, properties=tuple(draw(st.lists(ascii_kv, max_size=3))))


@st.composite
def ascii_cursor_infos(draw: st.DrawFn) -> ManagedCursorInfo:
    info: ManagedCursorInfo = draw(cursor_infos)
    props = tuple((k, v) for k, v in draw(st.lists(st.tuples(ascii_text, i64), max_size=3)))
    return replace(info, properties=props, cursor_properties=tuple(draw(st.lists(ascii_kv, max_size=3))))


needs_ml = pytest.mark.skipif(ML_NATIVE is None or CURSOR_NATIVE is None, reason=f"native: {native.STATUS}")


@needs_ml
@PROPS
@given(ascii_ml_infos())
def test_well_formed_ml_infos_are_taken_natively_with_python_values(info: ManagedLedgerInfo) -> None:
    plain = encode_managed_ledger_info(info)
    if info.ledgers or info.terminated_position is not None or info.properties:
        assert check_ml(plain) is not None, "the native path refused a well-formed ASCII ManagedLedgerInfo"
    else:
        assert check_ml(plain) is None  # an empty message: Python reports the empty ledger list


@needs_ml
@PROPS
@given(ascii_cursor_infos())
def test_well_formed_cursor_infos_are_taken_natively_with_python_values(info: ManagedCursorInfo) -> None:
    assert check_cursor(encode_cursor_info(info)) is not None, "the native path refused a well-formed cursor"


@needs_ml
@PROPS
@given(ml_infos | ascii_ml_infos(), st.data())
def test_corrupted_ml_infos_are_equal_or_left_to_python(info: ManagedLedgerInfo, data: st.DataObject) -> None:
    raw = bytearray(encode_managed_ledger_info(info))
    check_ml(_mutate(raw, data) if data.draw(st.booleans()) else bytes(raw))


@needs_ml
@PROPS
@given(cursor_infos | ascii_cursor_infos(), st.data())
def test_corrupted_cursor_infos_are_equal_or_left_to_python(info: ManagedCursorInfo, data: st.DataObject) -> None:
    raw = bytearray(encode_cursor_info(info))
    check_cursor(_mutate(raw, data) if data.draw(st.booleans()) else bytes(raw))


@needs_ml
@PROPS
@given(st.binary(max_size=64))
@example(b"ledgerInfo { ledgerId: 1 }")  # legacy text format: Python's business
def test_garbage_ml_and_cursor_values_are_equal_or_left_to_python(raw: bytes) -> None:
    check_ml(raw)
    check_cursor(raw)


@needs_ml
def test_offloaded_ledgers_and_packed_delete_sets_are_taken_natively() -> None:
    off = OffloadInfo(True, True, 1_700_000_000_000)
    ml = ManagedLedgerInfo((LedgerInfo(1, 10, 100, 5, off), LedgerInfo(2, None, None, None)), (2, 5), (("a", "b"),))
    msg = managed_ledger.to_message(ml)
    msg.ledgerInfo[0].offloadContext.driverMetadata.name = "aws-s3"
    msg.ledgerInfo[0].offloadContext.driverMetadata.properties.add(key="bucket", value="b1")
    seg = msg.ledgerInfo[0].offloadContext.offloadSegment.add(complete=True, endEntryId=9)
    seg.driverMetadata.name = "aws-s3"
    got = check_ml(msg.SerializeToString())
    assert got is not None and got[0][0] == (1, 10, 100, 5, True, True, 1_700_000_000_000)
    assert got[0][1] == (2, None, None, None, False, False, None) and got[1] is True

    cur = cursor.cursor_to_message(ManagedCursorInfo(7, (1, 2), batched_deletion=(((1, 3), (4, 5, 6)),)))
    assert check_cursor(cur.SerializeToString()) is not None
    # the same deleteSet unpacked (proto2 writers may use either encoding)
    unpacked = b"\x08\x07\x10\x01\x18\x02" + b"\x3a\x0c\x0a\x04\x08\x01\x10\x03\x10\x04\x10\x05\x10\x06"
    got_c = check_cursor(unpacked)
    assert got_c is not None and got_c[4] == 1


@needs_ml
@pytest.mark.parametrize(
    "plain",
    [
        b"\x12\x02\x08\x01",  # terminatedPosition without its required entryId
        b"\x12\x04\x08\x01\x10\x02\x12\x04\x08\x01\x10\x02",  # a singular sub-message twice: protobuf merges
        b"\x0a\x02\x10\x01",  # a LedgerInfo without its required ledgerId
        b"\x0a\x04\x08\x01\x78\x01",  # an unknown field (15) inside a LedgerInfo
        b"\x0a\x02\x08\x01\x7b\x7c",  # an unknown group (15)
        b"\x0a\x02\x08\x01\x08\x01",  # a known number (1) with another wire type
    ],
)
def test_unusual_ml_infos_are_left_to_python(plain: bytes) -> None:
    assert check_ml(plain) is None


# ---- the znodes row ----------------------------------------------------------------------------------------------

ZNODE_ROW = native.znode_row
needs_row = pytest.mark.skipif(ZNODE_ROW is None, reason=f"native: {native.STATUS}")


@needs_row
@PROPS
@given(
    st.text(alphabet=st.sampled_from("/ab%é€\x00"), max_size=12) | st.sampled_from(["", "/", "//", "/a/"]),
    st.tuples(*[i64 for _ in range(11)]),
    st.sampled_from(["bk-ledger", "other"]),
    st.none() | st.just("decode-error"),
)
def test_znode_row_equals_the_python_row(path: str, stat: tuple[int, ...], kind: str, err: str | None) -> None:
    from pulsar_ops.scrape.extract import znode_row_with_sha

    assert ZNODE_ROW is not None
    got = ZNODE_ROW("local", path, stat, kind, err, "f" * 64)
    assert got == znode_row_with_sha("local", path, stat, kind, err, "f" * 64)
    assert [type(v) for v in got] == [type(v) for v in znode_row_with_sha("local", path, stat, kind, err, "f" * 64)]


@needs_row
@pytest.mark.parametrize("stat", [(1, 2, 3), [1] * 11, None])
def test_znode_row_refuses_a_stat_that_is_not_an_11_tuple(stat: Any) -> None:
    assert ZNODE_ROW is not None
    with pytest.raises(TypeError):
        ZNODE_ROW("local", "/a", stat, "other", None, "sha")


# ------------------------------------------------------------------ snapshot node records (zkdata.stream)

needs_snap = pytest.mark.skipif(native.snap_nodes is None, reason=f"native module: {native.STATUS}")


def _node_records(nodes: list[tuple[bytes, int, bytes]]) -> bytes:
    """DataTree.serializeNode records (path, data length (-1: null), data, acl, stat) and the "/" terminator."""
    out = bytearray()
    for path, dn, data in nodes:
        out += len(path).to_bytes(4, "big") + path + dn.to_bytes(4, "big", signed=True) + (data if dn > 0 else b"")
        out += (7).to_bytes(8, "big") + bytes(range(60))
    return bytes(out + b"\x00\x00\x00\x01/" + b"seal")


_node = (
    st.tuples(
        st.one_of(
            st.binary(max_size=12),
            st.text(max_size=6).map(lambda s: ("/" + s).encode()),
            st.text(max_size=3).map(lambda s: ("/zookeeper/" + s).encode()),
        ),
        st.sampled_from([-1, 0, 1, 5]),
        st.binary(min_size=5, max_size=5),
    )
    .map(lambda t: (t[0], t[1], t[2][: max(t[1], 0)]))
    .filter(lambda t: t[0] != b"/")
)  # "/" ends the nodes


@needs_snap
@PROPS
@given(st.lists(_node, max_size=6), st.data())
def test_snapshot_node_batches_equal_the_pure_twin(nodes: list[tuple[bytes, int, bytes]], data: st.DataObject) -> None:
    from pulsar_ops.zkdata.stream import snap_nodes_py
    from pulsar_ops.zkdata.tree import node_digest

    buf = _node_records(nodes)
    cut = data.draw(st.integers(0, len(buf)))
    pos = data.draw(st.integers(0, 8))
    limit = data.draw(st.integers(1, 8))
    digest = data.draw(st.booleans())
    for b in (buf, buf[:cut], bytes(data.draw(st.binary(max_size=40)))):
        assert native.snap_nodes(b, pos, limit, digest) == snap_nodes_py(b, pos, limit, digest)
    whole = native.snap_nodes(buf, 0, 100, True)
    assert whole is not None and whole[2] is True and whole[1] == len(buf) - 4  # taken natively, to the "/"
    assert [n[0] for n in whole[0]] == [p.decode("utf-8", "surrogateescape") for p, _d, _x in nodes]
    assert [n[1] for n in whole[0]] == [d for _p, _n, d in nodes]
    assert whole[3] == sum(node_digest(p, d, x) for p, d, x in whole[0])  # tree.node_digest, summed


def _unknown_field(field: int, wire: int, payload: bytes) -> bytes:
    """One field record of any number and wire type (its payload as given: valid or not)."""
    key, out = (field << 3) | wire, bytearray()
    while True:
        out.append((key & 0x7F) | (0x80 if key > 0x7F else 0))
        key >>= 7
        if not key:
            return bytes(out) + payload


unknown_fields = st.lists(
    st.builds(
        _unknown_field,
        st.sampled_from([0, 1, 2, 3, 8, 9, 15, 100, 2**29 - 1]),
        st.integers(0, 7),
        st.sampled_from([b"\x01", b"\xff\x01", b"\x00" * 4, b"\x00" * 8, b"\x03abc", b"\x05ab", b"\x80", b""]),
    ),
    min_size=1,
    max_size=3,
)


@needs_ml
@PROPS
@given(ascii_ml_infos(), ascii_cursor_infos(), unknown_fields, st.booleans())
def test_unknown_fields_are_skipped_as_protobuf_skips_them_or_left_to_python(
    ml: ManagedLedgerInfo, cur: ManagedCursorInfo, extra: list[bytes], front: bool
) -> None:
    """A field the message does not define (a newer broker's) is kept aside by protobuf and the rest parses: the
    native path skips the varint, fixed and length-delimited ones the same way; groups, field 0 and known
    numbers with another wire type stay Python's."""
    tail = b"".join(extra)
    for value, chk in ((encode_managed_ledger_info(ml), check_ml), (encode_cursor_info(cur), check_cursor)):
        chk(tail + value if front else value + tail)


@needs_ml
def test_a_newer_brokers_field_100_is_taken_natively() -> None:
    from pulsar_ops.formats.managed_ledger import LedgerInfo

    tail = _unknown_field(100, 0, b"\x01")
    assert check_ml(encode_managed_ledger_info(ManagedLedgerInfo((LedgerInfo(5, 1, 2, 3),))) + tail) is not None
    assert check_cursor(encode_cursor_info(ManagedCursorInfo(9, (5, 3))) + tail) is not None
    assert check_cursor(encode_cursor_info(ManagedCursorInfo(9, (5, 3))) + _unknown_field(100, 3, b"")) is None
