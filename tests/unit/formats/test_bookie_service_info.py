"""BookieServiceInfoFormat (bookkeeper-proto DataFormats.proto): the data of a bookie's registration znode.

Golden bytes are built by hand from the upstream field table (``endpoints = 6``: ``Endpoint {id = 1, port = 2,
host = 3, protocol = 4, auth = 5, extensions = 6}``; ``properties = 7``, a map entry {key = 1, value = 2}), as
upstream ``ZKRegistrationManager.serializeBookieServiceInfo`` writes them.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats.bookie_service_info import (
    Endpoint,
    ServiceInfo,
    decode_service_info,
    encode_service_info,
    http_address,
    id_host,
)

from .wire import ld, vint

PATH = "/ledgers/available/bookie-0"


def _endpoint(eid: str, port: int, host: str, protocol: str, auth: list[str], ext: list[str]) -> bytes:
    return (
        ld(1, eid)
        + vint(2, port)
        + ld(3, host)
        + ld(4, protocol)
        + b"".join(ld(5, a) for a in auth)
        + b"".join(ld(6, x) for x in ext)
    )


GOLDEN = (
    ld(6, _endpoint("bookie", 3181, "bk-0.bk.svc", "bookie-rpc", [], ["tls"]))
    + ld(6, _endpoint("httpserver", 8000, "0.0.0.0", "http", [], []))
    + ld(7, ld(1, "rack") + ld(2, "/r1"))
)


def test_golden_bytes_as_upstream_writes_them() -> None:
    info = decode_service_info(GOLDEN, PATH)
    assert info == ServiceInfo(
        (
            Endpoint("bookie", 3181, "bk-0.bk.svc", "bookie-rpc", (), ("tls",)),
            Endpoint("httpserver", 8000, "0.0.0.0", "http", (), ()),
        ),
        {"rack": "/r1"},
    )
    assert encode_service_info(info) == GOLDEN
    # 0.0.0.0 is a listen address: the host comes from the bookie's RPC endpoint
    assert http_address(info, "bookie-0") == ("bk-0.bk.svc", 8000)


def test_empty_value_is_nothing_published() -> None:
    assert decode_service_info(b"", PATH) is None
    assert http_address(None, "10.0.0.1:3181") is None


@pytest.mark.parametrize(
    ("endpoints", "bookie_id", "expected"),
    [
        ([("httpserver", 8080, "10.1.2.3")], "bookie-0", ("10.1.2.3", 8080)),
        ([("httpserver", 8080, "0.0.0.0")], "10.0.0.9:3181", ("10.0.0.9", 8080)),  # wildcard, host:port id
        ([("httpserver", 8080, "0.0.0.0")], "bookie-0", None),  # wildcard, custom id, no RPC endpoint
        ([("httpserver", 8080, "::"), ("bookie", 3181, "0.0.0.0")], "bookie-0", None),
        ([("bookie", 3181, "bk-0")], "bookie-0", None),  # HTTP server disabled: nothing published for HTTP
        ([("httpserver", 0, "10.1.2.3")], "bookie-0", None),
    ],
)
def test_http_address(endpoints: list[tuple[str, int, str]], bookie_id: str, expected: object) -> None:
    info = ServiceInfo(tuple(Endpoint(i, p, h, "http") for i, p, h in endpoints))
    assert http_address(info, bookie_id) == expected


@pytest.mark.parametrize(
    ("bookie_id", "host"),
    [("10.0.0.1:3181", "10.0.0.1"), ("bk-0.svc:3181", "bk-0.svc"), ("bookie-0", None), ("a:b", None), (":1", None)],
)
def test_id_host(bookie_id: str, host: str | None) -> None:
    assert id_host(bookie_id) == host


@pytest.mark.parametrize(
    "data",
    [
        GOLDEN[:-3],  # truncated inside the properties entry
        ld(6, ld(1, "httpserver") + vint(2, 8000) + ld(3, "h")),  # protocol (required) missing
        ld(6, vint(2, 8000)),  # id, host, protocol missing
        b"\x32\xff",  # a length past the end
        ld(6, ld(1, b"\xff\xfe") + vint(2, 1) + ld(3, "h") + ld(4, "http")),  # id not UTF-8
        b'{"endpoints": []}',  # not protobuf
    ],
)
def test_corrupt_data_is_a_decode_error(data: bytes) -> None:
    with pytest.raises(DecodeError) as info:
        decode_service_info(data, PATH)
    assert info.value.path == PATH and "BookieServiceInfoFormat" in info.value.reason


_text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=12)
_endpoints = st.builds(
    Endpoint,
    _text,
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    _text,
    _text,
    st.lists(_text, max_size=3).map(tuple),
    st.lists(_text, max_size=3).map(tuple),
)
_infos = st.builds(
    ServiceInfo, st.lists(_endpoints, min_size=1, max_size=4).map(tuple), st.dictionaries(_text, _text, max_size=3)
)


@given(_infos)
def test_round_trip(info: ServiceInfo) -> None:
    assert decode_service_info(encode_service_info(info), PATH) == info
