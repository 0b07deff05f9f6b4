"""Print single-core decode rates of the pulsar_ops.formats codecs (no assertions: figures only).

Rates are given per wall-clock second and per CPU-second of this process (the latter is the meaningful one on
a shared, loaded machine).

Usage: python tests/perf/bench_formats.py [--n N]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from unittest import mock

from pulsar_ops import native
from pulsar_ops.formats import cursor, managed_ledger
from pulsar_ops.formats.cursor import ManagedCursorInfo, MessageRange, decode_cursor_info, encode_cursor_info
from pulsar_ops.formats.ledger_metadata import LedgerMetadata, decode_ledger_metadata, encode_ledger_metadata
from pulsar_ops.formats.managed_ledger import (
    LedgerInfo,
    ManagedLedgerInfo,
    decode_managed_ledger_info,
    encode_managed_ledger_info,
)
from pulsar_ops.formats.names import ml_name_from_path
from pulsar_ops.scrape import extract_fast


def _rate(label: str, fn: Callable[[], object], n: int) -> None:
    fn()
    start, cpu_start = time.perf_counter(), time.process_time()
    for _ in range(n):
        fn()
    elapsed = time.perf_counter() - start
    cpu = max(time.process_time() - cpu_start, 1e-9)
    print(
        f"{label:<44} {n / elapsed:>10,.0f} decodes/s wall  {n / cpu:>10,.0f} decodes/s per CPU-second"
        f"  ({cpu / n * 1e6:.2f} us CPU each)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=50_000)
    n = parser.parse_args().n

    ml = ManagedLedgerInfo(
        (
            *(LedgerInfo(1000 + i, 50_000, 20_000_000, 1_700_000_000_000 + i) for i in range(4)),
            LedgerInfo(1004, None, None, 0),
        ),
        properties=(("pulsar.topic.epoch", "3"),),
    )
    ml_plain = encode_managed_ledger_info(ml)
    ml_lz4 = encode_managed_ledger_info(ml, compression="LZ4")
    cur = ManagedCursorInfo(
        -1,
        (1003, 49_999),
        tuple(MessageRange((1004, 2 * i), (1004, 2 * i + 1)) for i in range(5)),
        last_active_ms=1_700_000_000_000,
    )
    cur_plain = encode_cursor_info(cur)
    md = LedgerMetadata(
        1004, 3, 3, 2, 2, "CLOSED", 20_000_000, 49_999,
        ((0, ("bookie-0:3181", "bookie-1:3181", "bookie-2:3181")),),
        "CRC32C", b"", 1_700_000_000_000,
        (("application", b"pulsar"), ("component", b"managed-ledger"),
         ("pulsar/managed-ledger", b"public/default/persistent/my-topic-partition-0")),
        0,
    )  # fmt: skip
    md_v3 = encode_ledger_metadata(md, 3)
    path = "/managed-ledgers/public/default/persistent/my-topic-partition-0"

    print(f"sizes: ML info {len(ml_plain)} B, cursor {len(cur_plain)} B, ledger md v3 {len(md_v3)} B; n={n}")
    _rate("ManagedLedgerInfo (5 ledgers, plain)", lambda: decode_managed_ledger_info(ml_plain, path), n)
    _rate("ManagedLedgerInfo (5 ledgers, LZ4 header)", lambda: decode_managed_ledger_info(ml_lz4, path), n)
    _rate("ManagedCursorInfo (5 ranges, plain)", lambda: decode_cursor_info(cur_plain, path + "/sub"), n)
    _rate("LedgerMetadata v3 (3 custom keys)", lambda: decode_ledger_metadata(md_v3, "/ledgers/00/0000/L1004"), n)
    _rate("ml_name_from_path", lambda: ml_name_from_path(path), n)

    # The scraper's hot paths, side by side: the native decoders (when built) against the pure-Python ones.
    print(f"scraper fast paths (native decoders: {native.STATUS})")
    lpath = "/ledgers/00/0000/L1004"
    for label, fn in (
        ("managed_ledger_fields (plain)", lambda: managed_ledger.managed_ledger_fields(ml_plain, path)),
        ("cursor_fields (plain)", lambda: cursor.cursor_fields(cur_plain, path + "/sub")),
        ("bk_ledger_parts (v3)", lambda: extract_fast.bk_parts(md_v3, lpath)),
    ):
        _rate(f"{label}, native", fn, n)
        with (
            mock.patch.object(managed_ledger, "_native_ml", None),
            mock.patch.object(cursor, "_native_cursor", None),
            mock.patch.object(extract_fast, "_native_bk", None),
        ):
            _rate(f"{label}, pure Python", fn, n)


if __name__ == "__main__":
    main()
