"""``/service_unit_state/<bundle>`` values: the extensible load manager's bundle ownership when its
metadata-store table view is configured (pure).

Upstream (pulsar-broker ``org/apache/pulsar/broker/loadbalance/extensions/channel/``):

* ``ServiceUnitStateMetadataStoreTableViewImpl.java``: ``PATH_PREFIX = "/service_unit_state"``; the key of a
  service unit (``NamespaceBundle.toString()``: ``<tenant>/<ns>/<lower>_<upper>``, V1 ``<p>/<c>/<ns>/...``) is the
  path below it, validated by ``^/service_unit_state/.*/0x[0-9a-fA-F]{8}_0x[0-9a-fA-F]{8}$``; the value is JSON
  written by Pulsar's Jackson mapper.
* ``ServiceUnitStateData.java``: the record ``(state, dstBroker, sourceBroker, [splitServiceUnitToDestBroker,]
  force, timestamp, versionId)``; its constructor refuses a null ``state`` and a value whose ``dstBroker`` and
  ``sourceBroker`` are both blank.
* ``ServiceUnitState.java``: ``Init, Free, Owned, Assigning, Releasing, Splitting, Deleted`` (Jackson binds an
  enum by name, or by its ordinal given as a JSON integer).

Which state means what for bundle ownership is :func:`pulsar_ops.pulsar_names.service_unit_ownership`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats.policies import parse_json_object

# ServiceUnitState, in declaration order (the ordinal Jackson accepts for a JSON integer)
STATES: tuple[str, ...] = ("Init", "Free", "Owned", "Assigning", "Releasing", "Splitting", "Deleted")


@dataclass(frozen=True, slots=True)
class ServiceUnitStateData:
    state: str
    dst_broker: str | None
    source_broker: str | None
    force: bool
    timestamp_ms: int
    version_id: int


def _state(v: Any, path: str) -> str:
    if isinstance(v, str) and v in STATES:
        return v
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < len(STATES):
        return STATES[v]
    if v is None:
        raise DecodeError(path, "ServiceUnitStateData without a state (the record refuses a null state)")
    raise DecodeError(path, f"state {str(v)[:40]!r} is not a ServiceUnitState ({', '.join(STATES)})")


def _broker(v: Any, field: str, path: str) -> str | None:
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)  # Jackson coerces a scalar to a String field
    raise DecodeError(path, f"{field} is not a string")


def _long(v: Any, field: str, path: str) -> int:
    if v is None:
        return 0
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    raise DecodeError(path, f"{field} is not a long")


def parse_service_unit_state(data: bytes, path: str) -> ServiceUnitStateData:
    """A ``/service_unit_state/...`` value as the broker's table view binds it; anything the record refuses is a
    DecodeError naming ``path`` (that bundle's ownership is then unknown, never free)."""
    doc = parse_json_object(data, path)
    state = _state(doc.get("state"), path)
    dst = _broker(doc.get("dstBroker"), "dstBroker", path)
    src = _broker(doc.get("sourceBroker"), "sourceBroker", path)
    if not (dst or "").strip() and not (src or "").strip():
        raise DecodeError(path, "ServiceUnitStateData names no broker (dstBroker and sourceBroker blank)")
    force = doc.get("force", False)
    if not isinstance(force, bool) and force is not None:
        raise DecodeError(path, "force is not a boolean")
    return ServiceUnitStateData(
        state=state,
        dst_broker=dst,
        source_broker=src,
        force=bool(force),
        timestamp_ms=_long(doc.get("timestamp"), "timestamp", path),
        version_id=_long(doc.get("versionId"), "versionId", path),
    )
