"""Benchmarks that print figures (no timed assertions)."""

from __future__ import annotations
