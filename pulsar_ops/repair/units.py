"""The repair flags' units: every command's (:mod:`pulsar_ops.units`), re-exported for the repair code."""

from __future__ import annotations

from pulsar_ops.units import human_bytes as human_bytes
from pulsar_ops.units import human_duration as human_duration
from pulsar_ops.units import parse_duration_ms as parse_duration_ms
from pulsar_ops.units import parse_size as parse_size
