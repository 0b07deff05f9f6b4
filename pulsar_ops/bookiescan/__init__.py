"""On-host bookie scanner: entry logs and the local ledger index, read-only, into Parquet plus a manifest."""

from __future__ import annotations
