from __future__ import annotations

import urllib.parse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pulsar_ops import pulsar_names
from pulsar_ops.errors import DecodeError
from pulsar_ops.formats import names
from pulsar_ops.formats.names import MlName


@pytest.mark.parametrize(
    ("plain", "encoded"),
    [
        ("my-topic", "my-topic"),
        ("a b", "a+b"),
        ("a~b", "a%7Eb"),
        ("a*b", "a*b"),
        ("50%", "50%25"),
        ("a+b", "a%2Bb"),
        ("public/default/fn", "public%2Fdefault%2Ffn"),
        ("café", "caf%C3%A9"),
        ("😀", "%F0%9F%98%80"),
        ("a.b_c-d", "a.b_c-d"),
        ("x:y?z&=#", "x%3Ay%3Fz%26%3D%23"),
        ("", ""),
        ("\x00\x7f", "%00%7F"),
    ],
)
def test_encode_matches_java_urlencoder(plain: str, encoded: str) -> None:
    assert names.encode(plain) == encoded
    assert names.decode(encoded) == plain


def test_encode_lone_surrogate_becomes_question_mark_like_java() -> None:
    assert names.encode("a\ud800b") == "a%3Fb"


@given(st.text())
def test_encode_decode_round_trip(s: str) -> None:
    enc = names.encode(s.encode("utf-8", "replace").decode("utf-8"))
    assert set(enc) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-*_+%")
    assert names.decode(enc) == s.encode("utf-8", "replace").decode("utf-8")


@given(st.text(alphabet=st.characters(exclude_categories=["Cs"])))
def test_encode_agrees_with_python_recipe_from_reference(s: str) -> None:
    assert names.encode(s) == urllib.parse.quote_plus(s, safe="*").replace("~", "%7E")


def test_decode_accepts_lowercase_hex_and_plus() -> None:
    assert names.decode("a%7eb+c") == "a~b c"


@pytest.mark.parametrize("bad", ["%", "%4", "%zz", "abc%", "%-1", "%C3", "%FF%FE"])
def test_decode_malformed_raises_decode_error_naming_path(bad: str) -> None:
    with pytest.raises(DecodeError) as info:
        names.decode(bad, "/managed-ledgers/t/ns/persistent/" + bad)
    assert info.value.path == "/managed-ledgers/t/ns/persistent/" + bad
    assert info.value.code == "decode-failed"


@pytest.mark.parametrize(
    ("local", "base", "index"),
    [
        ("t-partition-0", "t", 0),
        ("t-partition-12", "t", 12),
        ("t-partition-01", "t-partition-01", -1),
        ("t-partition--1", "t-partition--1", -1),
        ("t-partition-", "t-partition-", -1),
        ("t-partition-x", "t-partition-x", -1),
        ("t-partition-2147483648", "t-partition-2147483648", -1),
        ("a-partition-1-partition-2", "a-partition-1", 2),
        ("plain", "plain", -1),
    ],
)
def test_partition_suffix(local: str, base: str, index: int) -> None:
    assert names.partition_suffix(local) == (base, index)


def test_parse_v2_ml_name() -> None:
    ml = names.parse_ml_name("public/default/persistent/my%7Etopic-partition-3")
    assert ml == MlName("public/default", "my%7Etopic-partition-3", "my~topic-partition-3", False)
    assert ml.tenant == "public"
    assert ml.cluster is None
    assert ml.ml_name == "public/default/persistent/my%7Etopic-partition-3"
    assert ml.topic == "persistent://public/default/my~topic-partition-3"
    assert ml.partition == 3
    assert ml.base_local_name == "my~topic"
    assert ml.base_topic == "persistent://public/default/my~topic"
    assert names.schema_id_for(ml) == "public/default/my%7Etopic"


def test_parse_v1_ml_name() -> None:
    ml = names.parse_ml_name("prop/us-west/ns/persistent/a+b")
    assert ml.is_v1
    assert ml.namespace == "prop/us-west/ns"
    assert ml.tenant == "prop"
    assert ml.cluster == "us-west"
    assert ml.local_name == "a b"
    assert ml.topic == "persistent://prop/us-west/ns/a b"
    assert ml.partition == -1
    # TopicName.getSchemaName drops the cluster segment
    assert names.schema_id_for(ml) == "prop/ns/a+b"


def test_v2_namespace_named_persistent_is_still_v2() -> None:
    ml = names.parse_ml_name("t/persistent/persistent/x")
    assert not ml.is_v1
    assert ml.namespace == "t/persistent"


@pytest.mark.parametrize(
    "bad",
    [
        "public/default/my-topic",
        "public/default/non-persistent/x",
        "a/b/c/d/e/f",
        "public//persistent/x",
        "public/default/persistent/",
        "public/default/persistent/%zz",
    ],
)
def test_parse_ml_name_rejects(bad: str) -> None:
    with pytest.raises(DecodeError):
        names.parse_ml_name(bad)


def test_ml_name_from_path_and_back() -> None:
    path = "/managed-ledgers/t/ns/persistent/a%2Fb"
    ml = names.ml_name_from_path(path)
    assert ml.local_name == "a/b"
    assert names.ml_path(ml) == path
    v1 = names.ml_name_from_path("/chroot/ml/p/c/ns/persistent/x", root="/chroot/ml/")
    assert v1.is_v1 and v1.encoded_name == "x"
    with pytest.raises(DecodeError) as info:
        names.ml_name_from_path("/other/t/ns/persistent/x")
    assert info.value.path == "/other/t/ns/persistent/x"


def test_parse_topic_forms() -> None:
    assert names.parse_topic("persistent://t/ns/a b").encoded_name == "a+b"
    v1 = names.parse_topic("persistent://p/c/ns/x/y")
    assert v1.is_v1 and v1.local_name == "x/y" and v1.encoded_name == "x%2Fy"
    assert names.parse_topic("my-topic").namespace == "public/default"
    assert names.parse_topic("t/ns/x").topic == "persistent://t/ns/x"
    for bad in ["non-persistent://t/ns/x", "persistent://t/ns", "persistent://t/ns/", "a/b"]:
        with pytest.raises(DecodeError):
            names.parse_topic(bad)


_segment = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=12)


@given(
    tenant=_segment,
    ns=_segment,
    cluster=st.none() | _segment,
    local=st.text(min_size=1),
)
def test_topic_ml_name_round_trip(tenant: str, ns: str, cluster: str | None, local: str) -> None:
    local = local.encode("utf-8", "replace").decode("utf-8")
    if cluster is None and "/" in local:
        local = local.replace("/", "_")
    namespace = f"{tenant}/{ns}" if cluster is None else f"{tenant}/{cluster}/{ns}"
    ml = names.parse_topic(f"persistent://{namespace}/{local}")
    assert ml.is_v1 == (cluster is not None)
    again = names.parse_ml_name(ml.ml_name)
    assert again == ml
    assert names.ml_name_from_path(names.ml_path(ml)) == ml
    assert again.topic == f"persistent://{namespace}/{local}"


@pytest.mark.parametrize(
    ("name", "system"),
    [
        ("pulsar.dedup", True),
        ("pulsar.repl.us-east", True),
        ("__compaction", True),
        ("__pending_ack_state", True),
        ("transaction.subscription", True),
        ("my-sub", False),
        ("public%2Fdefault%2FExclamationFunction", False),
        ("pulsar.replicated", False),
    ],
)
def test_is_system_cursor(name: str, system: bool) -> None:
    assert pulsar_names.is_system_cursor(name) is system


@pytest.mark.parametrize(
    ("path", "ml_name", "cursor"),
    [
        ("/managed-ledgers/t/ns/persistent/x", "t/ns/persistent/x", None),
        ("/managed-ledgers/t/ns/persistent/x/my%2Fsub", "t/ns/persistent/x", "my%2Fsub"),
        ("/managed-ledgers/p/c/ns/persistent/x", "p/c/ns/persistent/x", None),
        ("/managed-ledgers/p/c/ns/persistent/x/sub", "p/c/ns/persistent/x", "sub"),
    ],
)
def test_split_ml_path(path: str, ml_name: str, cursor: str | None) -> None:
    ml, cur = names.split_ml_path(path)
    assert (ml.ml_name, cur) == (ml_name, cursor)


@pytest.mark.parametrize(
    "path",
    [
        "/managed-ledgers/t/ns",
        "/managed-ledgers/t/ns/persistent/x/",
        "/managed-ledgers/a/b/c/d/e/f/g",
        "/x/t/ns/persistent/y",
    ],
)
def test_split_ml_path_rejects(path: str) -> None:
    with pytest.raises(DecodeError):
        names.split_ml_path(path)
