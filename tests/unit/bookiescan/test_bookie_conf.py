"""bookkeeper.conf as BookKeeper reads it (commons-configuration properties, comma lists), the directories it names
(ServerConfiguration defaults, index dirs defaulting to the ledger dirs) and the BookieId it derives
(BookieImpl.getBookieId / getBookieAddress)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pulsar_ops.bookiescan.bookie_conf import (
    BookieConf,
    Resolver,
    configured_dirs,
    derive_bookie_id,
    from_server_config,
    gc_keys,
    load_bookie_conf,
    names_cover,
    not_scanned,
    parse_properties,
    scraped_dirs,
)
from pulsar_ops.errors import ConfigError


def conf(text: str) -> BookieConf:
    return BookieConf("bk.conf", parse_properties(text, "bk.conf"))


def test_properties_syntax_as_commons_configuration_reads_it() -> None:
    values = parse_properties(
        "# comment\n! also a comment\n"
        "ledgerDirectories = /d1 , /d2,/d3  \n"
        "indexDirectories: /i1,\\\n   /i2\n"
        "bookiePort 3182\n"
        "journalDirectories=/j\njournalDirectories=/k\n"  # a repeated key adds to the list
        "advertisedAddress=a\\,b\n"  # an escaped delimiter: split all the same (see below)
        "key\\ with\\=sep=v\\u0041\n",
        "bk.conf",
    )
    assert values["ledgerDirectories"] == ("/d1", "/d2", "/d3")
    assert values["indexDirectories"] == ("/i1", "/i2")
    assert values["bookiePort"] == ("3182",)
    assert values["journalDirectories"] == ("/j", "/k")
    assert values["advertisedAddress"] == ("a", "b")
    assert values["key with=sep"] == ("vA",)


# Each file as bytes -> what ServerConfiguration holds, as printed by commons-configuration2 2.12.0 itself (the
# version BookKeeper's pom.xml pins) loading the file the way AbstractConfiguration.loadConf does: a
# PropertiesConfiguration with the ',' delimiter read as ISO-8859-1, each key then setProperty'd into a
# CompositeConfiguration with the same delimiter (the harness: commit "bookie_conf: bookkeeper.conf read as
# commons-configuration2 2.12.0 reads it"). All but the first four cases and the last differed before:
# str.splitlines, comments inside continuations, escapes, the empty key, str.strip, the single split.
JAVA_READS: list[tuple[bytes, dict[str, tuple[str, ...]]]] = [
    (b"ledgerDirectories=/a,/b\nbookiePort 3182\n", {"ledgerDirectories": ("/a", "/b"), "bookiePort": ("3182",)}),
    (b"k1 = = v\nk2:v2\nk3\tv3\nk4\n", {"k1": ("= v",), "k2": ("v2",), "k3": ("v3",), "k4": ("",)}),
    (b"a=1\rledgerDirectories=/cr\r\n", {"a": ("1",), "ledgerDirectories": ("/cr",)}),
    (b"ledgerDirectories=/a,\n", {"ledgerDirectories": ("/a", "")}),
    # a comment or blank line inside a continuation is skipped, and does not end it
    (
        b"ledgerDirectories=/a,\\\n# note\n\n  /b\nbookiePort=1\n",
        {"ledgerDirectories": ("/a", "/b"), "bookiePort": ("1",)},
    ),
    # a continuation still open at the end of the file loses its property
    (b"bookiePort=1\nledgerDirectories=/a\\", {"bookiePort": ("1",)}),
    # the value is split again when loadConf copies it into ServerConfiguration: an escaped comma does not survive
    (b"advertisedAddress=a\\,b\n", {"advertisedAddress": ("a", "b")}),
    (b"advertisedAddress=a\\\\\\,b\n", {"advertisedAddress": ("a\\", "b")}),
    # unknown escapes keep their backslash; \b is a backspace
    (b"ledgerDirectories=C:\\data,/x\\\\y\n", {"ledgerDirectories": ("C:\\data", "/x\\y")}),
    (b"k5=\\u0041\\b\\q\\:\n", {"k5": ("A\bq:".replace("q", "\\q"),)}),
    (b"k=ab\\u00\n", {"k": ("ab",)}),  # an incomplete \u at the end is dropped
    # lines end at \n, \r, \r\n only: U+0085 (byte 0x85, e.g. UTF-8 Cyrillic) and \f do not end a line
    (b"# \xd1\x85ledgerDirectories=/evil\nbookiePort=2\n", {"bookiePort": ("2",)}),
    (b"bookiePort=2\x0cledgerDirectories=/ff\n", {"bookiePort": ("2\x0cledgerDirectories=/ff",)}),
    # ... but U+0085 is a line terminator to the pattern's '.': that line is a property with an empty key
    (b"ledgerDirectories=/d/\xd1\x85y\nbookiePort=2\n", {"": ("",), "bookiePort": ("2",)}),
    (b"=v\nledgerDirectories=/a\n", {"": ("v",), "ledgerDirectories": ("/a",)}),  # the empty key is a key
    # String.trim: every char <= U+0020, not U+00A0
    (b"ledgerDirectories=\x01/a\x01\n", {"ledgerDirectories": ("/a",)}),
    (b"ledgerDirectories=/a\xa0\n", {"ledgerDirectories": ("/a\xa0",)}),
    (b"key\\ with\\=sep=v\nk\\x=1\n", {"key with=sep": ("v",), "kx": ("1",)}),
]


@pytest.mark.parametrize(("data", "java"), JAVA_READS)
def test_properties_read_as_commons_configuration_2_12_reads_them(
    tmp_path: Path, data: bytes, java: dict[str, tuple[str, ...]]
) -> None:
    f = tmp_path / "bookkeeper.conf"
    f.write_bytes(data)
    assert dict(load_bookie_conf(f).values) == java


def test_include_is_refused_not_guessed() -> None:
    for key in ("include", "INCLUDE", "includeOptional"):  # PropertiesConfiguration.propertyLoaded: any case
        with pytest.raises(ConfigError) as e:
            parse_properties(f"{key}=other.conf\n", "bk.conf")
        assert e.value.code == "bookie-config-invalid"


def test_directories_defaults_and_index_fallback() -> None:
    d = configured_dirs(conf("ledgerDirectories=/a,/b/\n"))
    assert d.ledger_dirs == (Path("/a"), Path("/b")) and d.index_dirs == d.ledger_dirs and d.index_default
    # no ledgerDirectories: ServerConfiguration.getLedgerDirNames's /tmp/bk-data
    assert configured_dirs(conf("")).ledger_dirs == (Path("/tmp/bk-data"),)
    d = configured_dirs(conf("ledgerDirectories=/a,/b\nindexDirectories=/x,/y\n"))
    assert d.index_dirs == (Path("/x"), Path("/y")) and not d.index_default


def test_bad_directory_lists_are_clear_errors() -> None:
    with pytest.raises(ConfigError) as e:
        configured_dirs(conf("ledgerDirectories=/a,/b\nindexDirectories=/x\n"))
    assert e.value.code == "bookie-config-invalid" and "size not matched" in e.value.message
    with pytest.raises(ConfigError) as e:
        configured_dirs(conf("ledgerDirectories=/a,,/b\n"))
    assert e.value.code == "bookie-config-invalid"
    with pytest.raises(ConfigError) as e:
        configured_dirs(conf("ledgerDirectories=data/bookkeeper/ledgers\n"))  # Pulsar's shipped file
    assert e.value.code == "bookie-config-relative-dir" and "--bookie-home" in (e.value.hint or "")
    d = configured_dirs(conf("ledgerDirectories=data/bookkeeper/ledgers\n"), Path("/pulsar"))
    assert d.ledger_dirs == (Path("/pulsar/data/bookkeeper/ledgers"),)


def test_load_errors_have_codes(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        load_bookie_conf(tmp_path / "none.conf")
    assert e.value.code == "bookie-config-missing"
    with pytest.raises(ConfigError) as e:
        load_bookie_conf(tmp_path)  # a directory
    assert e.value.code == "bookie-config-unreadable"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError) as e:
        load_bookie_conf(fifo)  # opened non-blocking and refused: never hangs
    assert e.value.code == "bookie-config-unreadable"
    binary = tmp_path / "bin.conf"
    binary.write_bytes(b"ledgerDirectories=/a\x00\x01")
    with pytest.raises(ConfigError) as e:
        load_bookie_conf(binary)
    assert e.value.code == "bookie-config-invalid"
    if os.geteuid() != 0:
        locked = tmp_path / "locked.conf"
        locked.write_text("ledgerDirectories=/a\n")
        locked.chmod(0)
        with pytest.raises(ConfigError) as e:
            load_bookie_conf(locked)
        assert e.value.code == "bookie-config-unreadable"
    ok = tmp_path / "bookkeeper.conf"
    ok.write_text("ledgerDirectories=/a\n")
    assert load_bookie_conf(ok).ledger_dir_names() == ("/a",)


def fake(
    hostname: str = "bk-1.example.com", ips: dict[str, list[str]] | None = None, names: dict[str, str] | None = None
) -> Resolver:
    table = ips if ips is not None else {"bk-1.example.com": ["10.0.0.7"], "localhost": ["127.0.0.1"]}
    rev = names if names is not None else {"10.0.0.7": "bk-1.example.com"}
    return Resolver(hostname=lambda: hostname, addresses=lambda h: table.get(h, []), canonical=rev.get)


def test_bookie_id_precedence() -> None:
    r = fake()
    got = derive_bookie_id(conf("bookieId=bookie-0\nadvertisedAddress=x\n"), r)
    assert (got.bookie_id, got.derived_from) == ("bookie-0", "bookieId")
    got = derive_bookie_id(conf("advertisedAddress= 10.1.2.3 \nbookiePort=3182\nuseHostNameAsBookieID=true\n"), r)
    assert (got.bookie_id, got.derived_from) == ("10.1.2.3:3182", "advertisedAddress")
    got = derive_bookie_id(conf(""), r)  # the local host's address, bookiePort's default
    assert (got.bookie_id, got.derived_from) == ("10.0.0.7:3181", "address")
    got = derive_bookie_id(conf("useHostNameAsBookieID=true\n"), r)
    assert (got.bookie_id, got.derived_from) == ("bk-1.example.com:3181", "hostname")
    got = derive_bookie_id(conf("useHostNameAsBookieID=true\nuseShortHostName=yes\n"), r)
    assert got.bookie_id == "bk-1:3181"


@pytest.mark.parametrize(
    ("port", "want"),
    # commons-configuration2 2.12.0's getInt("bookiePort", 3181) on each value (None: ConversionException)
    [("+3182", 3182), ("0xC6D", 3181), ("0b11", 3), ("0x1FFFFFFFF", -1), ("3_181", None), ("", None),
     ("99999999999", None)],
)  # fmt: skip
def test_bookie_port_is_read_as_get_int(port: str, want: int | None) -> None:
    c = conf(f"bookieId=x\nbookiePort={port}\n")
    if want is None:
        with pytest.raises(ConfigError):
            c.integer("bookiePort", 3181)
    else:
        assert c.integer("bookiePort", 3181) == want


def test_an_interpolated_id_key_is_asked_for_not_guessed() -> None:
    # commons-configuration2 2.12.0: getString of advertisedAddress=${env:HOME} is the bookie's $HOME, not ours
    for text in ("advertisedAddress=${env:POD_IP}\n", "bookieId=${HOSTNAME}\n", "bookiePort=${port}\nport=3181\n"):
        with pytest.raises(ConfigError) as e:
            derive_bookie_id(conf(text), Resolver(lambda: "h", lambda h: ["10.0.0.1"], lambda ip: "h.example"))
        assert e.value.code == "bookie-id-unknown" and "interpolation" in e.value.message


def test_bookie_id_refusals() -> None:
    loop = fake(hostname="box", ips={"box": ["127.0.1.1"]})
    for text, why in [
        ("bookieId=readonly\n", "not a valid BookieId"),
        ("bookieId=a/b\n", "not a valid BookieId"),
        ("listeningInterface=eth0\n", "listeningInterface=eth0"),
        ("useHostNameAsBookieID=true\n", "no host name"),  # 10.0.0.7 has no reverse name here
        ("advertisedAddress=nowhere\n", "does not resolve"),
    ]:
        with pytest.raises(ConfigError) as e:
            derive_bookie_id(conf(text), fake(names={}))
        assert e.value.code == "bookie-id-unknown" and why in e.value.message, text
    with pytest.raises(ConfigError) as e:
        derive_bookie_id(conf(""), loop)  # upstream refuses a loopback identity
    assert e.value.code == "bookie-id-unknown" and "allowLoopback" in e.value.message
    assert derive_bookie_id(conf("allowLoopback=true\n"), loop).bookie_id == "127.0.1.1:3181"
    with pytest.raises(ConfigError) as e:
        derive_bookie_id(conf("bookiePort=x\n"), fake())
    assert e.value.code == "bookie-config-invalid"


def test_not_scanned_compares_directories_not_names(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(a)
    assert not_scanned([a, b], [alias]) == [str(b)]  # the same directory by device and inode
    assert not_scanned([a, tmp_path / "gone"], [a, Path(str(tmp_path / "gone") + "/")]) == []


def test_server_config_values_are_java_to_string() -> None:
    c = from_server_config({"ledgerDirectories": "[/a, /b]", "useHostNameAsBookieID": True, "x": "[]"}, "http://b")
    assert scraped_dirs(c) == {"ledger_dirs": ["/a", "/b"], "index_dirs": None}
    assert c.boolean("useHostNameAsBookieID", False) and c.values["x"] == ()
    assert from_server_config({"ledgerDirectories": "/a,/b"}, "b").ledger_dir_names() == ("/a", "/b")
    assert scraped_dirs(from_server_config({"indexDirectories": "/i"}, "b")) == {
        "ledger_dirs": ["/tmp/bk-data"],
        "index_dirs": ["/i"],
    }


def test_gc_keys_are_the_gc_settings_the_file_sets() -> None:
    """scan-bookie --bookie-config records them in its manifest (bookie_config.gc) for the plan's bookie-gc rule:
    only GC keys, as written (the planner validates them), blank values as unset."""
    c = conf("gcWaitTime=1800000\nforceAllowCompaction = false\nmajorCompactionInterval=\nledgerDirectories=/a\n")
    assert gc_keys(c) == {"gcWaitTime": "1800000", "forceAllowCompaction": "false"}
    assert gc_keys(conf("")) == {}


def test_names_cover_allows_a_mount_prefix_not_a_partial_name() -> None:
    scanned = ["/proc/1/root/pulsar/data/l0/", "/pulsar/data/l1"]
    assert names_cover(scanned, ["/pulsar/data/l0", "/pulsar/data/l1", "data/l1"]) == []
    assert names_cover(scanned, ["/pulsar/data/l2", "/data/l0x", "ata/l1"]) == [
        "/pulsar/data/l2",
        "/data/l0x",
        "ata/l1",
    ]
