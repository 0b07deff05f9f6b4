"""pulsar-ops: find and safely repair Apache Pulsar metadata leaks."""

from __future__ import annotations

__version__ = "0.1.0"
