"""Negative-ack tracker model pinned to reference/broker-cache-and-nack.md §4-§5 and upstream's figures."""

from __future__ import annotations

import pytest

from pulsar_ops.errors import ModelError
from pulsar_ops.model.nack import (
    UPSTREAM_OLD_FIGURES,
    NackInput,
    model_nack,
    old_bytes,
    old_capacity,
    pip_formula_bytes_per_entry,
)

MIB = 1 << 20


def test_old_map_matches_upstreams_measured_figures() -> None:
    # PIP-393 / #23600: 1M entries -> 64 MB, 10M -> 512 MB (about 53 B per entry)
    for n, expect in UPSTREAM_OLD_FIGURES.items():
        assert old_bytes(n) == expect
    assert old_bytes(1_000_000) == 64 * MIB and old_bytes(10_000_000) == 512 * MIB
    assert 53 <= old_bytes(10_000_000) / 10_000_000 < 54


def test_old_map_capacity_starts_at_512_and_doubles_past_the_fill_factor() -> None:
    assert old_capacity(0) == 512 and old_bytes(1) == 512 * 32
    assert old_capacity(337) == 512  # int(512 * 0.66) = 337
    assert old_capacity(338) == 1024
    assert old_capacity(int(1024 * 0.66) + 1) == 2048


def test_old_timer_peak_and_lateness() -> None:
    r = model_nack(NackInput(rate=1000, delay_ms=60_000)).to_json()
    assert r["entries"] == 60_000
    assert r["old"]["peak_entries"] == 80_000  # keys nacked during delay + delay/3 wait for the tick
    assert r["old"]["bytes"] == old_bytes(80_000)
    assert r["old"]["max_late_ms"] == 20_000 and r["old"]["max_early_ms"] == 0
    assert r["max_late_ms"] == 20_000


def test_precision_bits_make_redelivery_early_by_at_most_2_pow_b_minus_1() -> None:
    for bits, early in ((8, 255), (0, 0), (10, 1023)):
        r = model_nack(NackInput(rate=1000, delay_ms=60_000, precision_bits=bits)).to_json()
        assert r["max_early_ms"] == early and r["new"]["max_early_ms"] == early and r["new"]["max_late_ms"] == 0
        assert r["new"]["bucket_ms"] == 1 << bits


def test_minimum_delay_is_100ms() -> None:
    r = model_nack(NackInput(rate=1000, delay_ms=10)).to_json()
    assert r["entries"] == 100


def test_array_containers_cost_2_bytes_per_value_not_4() -> None:
    # 10,000 msg/s x 256 ms = 2,560 entries per bucket (< 4096): one array container per bucket
    r = model_nack(NackInput(rate=10_000, delay_ms=60_000)).to_json()
    new = r["new"]
    assert new["entries_per_bucket"] == pytest.approx(2560, rel=0.01)
    per_value = new["bitmap_bytes_measured"] / r["entries"]
    assert 2.0 <= per_value < 2.1  # measured with pyroaring: 2 B per value + a 16-byte header per bitmap
    assert pip_formula_bytes_per_entry(2560) == 4.0  # the PIP text's figure (erratum 3)


def test_bitmap_containers_and_ledger_rollover() -> None:
    # 40,000 msg/s x 256 ms = 10,240 entries per bucket: a bitmap container (8 KiB) per bucket
    r = model_nack(NackInput(rate=40_000, delay_ms=60_000)).to_json()
    per_bucket = r["new"]["bitmap_bytes_measured"] / r["new"]["buckets"]
    assert 8192 <= per_bucket <= 2 * 8192 + 64  # a bucket crossing a 64Ki boundary or a ledger holds two
    # 1,000,000 msg/s x 256 ms = 256,000 entries per bucket > 50,000 entries per ledger: one bitmap per ledger
    r = model_nack(NackInput(rate=1_000_000, delay_ms=10_000)).to_json()
    assert r["new"]["ledgers_per_bucket"] == pytest.approx(256_000 / 50_000 + 1, abs=0.5)
    assert 0.16 <= r["new"]["bitmap_bytes_measured"] / r["entries"] <= 0.2
    assert r["new_vs_old"] < 0.01  # "about 1 %" of the old memory holds in this regime


def test_batching_and_sparse_nacks() -> None:
    dense = model_nack(NackInput(rate=10_000, delay_ms=60_000, batch_size=10)).to_json()
    assert dense["entries"] == 60_000  # 1,000 entries/s
    sparse = model_nack(NackInput(rate=1_000, delay_ms=60_000, consume_rate=100_000)).to_json()
    assert sparse["entries"] == 60_000
    # spread ids do not share containers as well as consecutive ones
    assert (
        sparse["new"]["bytes_per_entry"]
        > model_nack(NackInput(rate=1000, delay_ms=60_000)).to_json()["new"]["bytes_per_entry"]
    )


def test_deterministic_for_a_seed() -> None:
    a = model_nack(NackInput(rate=500, delay_ms=30_000, consume_rate=5_000, seed=3)).to_json()
    b = model_nack(NackInput(rate=500, delay_ms=30_000, consume_rate=5_000, seed=3)).to_json()
    assert a == b


@pytest.mark.parametrize(
    "bad",
    [
        NackInput(rate=0, delay_ms=1),
        NackInput(rate=1, delay_ms=1, precision_bits=40),
        NackInput(rate=10, delay_ms=1, consume_rate=5),
        NackInput(rate=10, delay_ms=1, entries_per_ledger=0),
    ],
)
def test_bad_input(bad: NackInput) -> None:
    with pytest.raises(ModelError):
        model_nack(bad)
