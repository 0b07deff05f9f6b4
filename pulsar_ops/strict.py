"""Strict readers for JSON documents other tools (or people) may have edited: findings.json and plan.json.

JSON has one boolean type and one integer type; Python's ``bool("false")`` is ``True`` and ``int("7")`` is 7.
These readers accept exactly the JSON types the writers produce, so a hand-edited ``"plannable": "false"`` is an
error naming the field, never a silent ``True``. Integers must fit a signed 64-bit value (what the snapshot,
ZooKeeper and BookKeeper hold). ZooKeeper paths must be absolute, normalised and valid UTF-8.

Pure: every failure raises the error class the caller passes (``FindingsError`` or ``PlanError``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulsar_ops.errors import PulsarOpsError

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

ErrorType = type[PulsarOpsError]


def describe(value: Any) -> str:
    """A short, safe rendering of a rejected value for an error message."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _fail(error: ErrorType, where: str, message: str, hint: str | None) -> PulsarOpsError:
    return error(f"{where}: {message}", hint=hint)


def obj(value: Any, where: str, error: ErrorType, hint: str | None = None) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(error, where, f"is not an object (got {type(value).__name__} {describe(value)})", hint)
    return value


def boolean(
    d: Mapping[str, Any],
    key: str,
    where: str,
    error: ErrorType,
    *,
    default: bool | None = None,
    hint: str | None = None,
) -> bool:
    if key not in d and default is not None:
        return default
    v = d.get(key)
    if not isinstance(v, bool):
        raise _fail(error, f"{where}.{key}", f"must be true or false, not {type(v).__name__} {describe(v)}", hint)
    return v


def integer(
    d: Mapping[str, Any],
    key: str,
    where: str,
    error: ErrorType,
    *,
    lo: int = INT64_MIN,
    hi: int = INT64_MAX,
    default: int | None = None,
    nullable: bool = False,
    hint: str | None = None,
) -> int | None:
    """A JSON integer in [lo, hi]. Missing -> ``default`` (when given); null -> None only when ``nullable``."""
    if key not in d:
        if default is not None:
            return default
        if nullable:
            return None
        raise _fail(error, f"{where}.{key}", "is missing", hint)
    v = d[key]
    if v is None:
        if nullable:
            return None
        if default is not None:
            return default
        raise _fail(error, f"{where}.{key}", "must be an integer, not null", hint)
    if isinstance(v, bool) or not isinstance(v, int):
        raise _fail(error, f"{where}.{key}", f"must be an integer, not {type(v).__name__} {describe(v)}", hint)
    if v < lo or v > hi:
        raise _fail(error, f"{where}.{key}", f"{describe(v)} is out of range [{lo}, {hi}]", hint)
    return v


def req_int(
    d: Mapping[str, Any],
    key: str,
    where: str,
    error: ErrorType,
    *,
    lo: int = INT64_MIN,
    hi: int = INT64_MAX,
    hint: str | None = None,
) -> int:
    v = integer(d, key, where, error, lo=lo, hi=hi, hint=hint)
    assert v is not None
    return v


def text(
    d: Mapping[str, Any],
    key: str,
    where: str,
    error: ErrorType,
    *,
    nullable: bool = False,
    default: str | None = None,
    max_len: int = 1 << 20,
    hint: str | None = None,
) -> str | None:
    if key not in d or d[key] is None:
        if default is not None:
            return default
        if nullable:
            return None
        raise _fail(error, f"{where}.{key}", "is missing" if key not in d else "must be a string, not null", hint)
    v = d[key]
    if not isinstance(v, str):
        raise _fail(error, f"{where}.{key}", f"must be a string, not {type(v).__name__} {describe(v)}", hint)
    if len(v) > max_len:
        raise _fail(error, f"{where}.{key}", f"is longer than {max_len} characters", hint)
    return v


def req_text(d: Mapping[str, Any], key: str, where: str, error: ErrorType, *, hint: str | None = None) -> str:
    v = text(d, key, where, error, hint=hint)
    assert v is not None
    return v


def zk_path_problem(path: str) -> str | None:
    """Why ``path`` is not an absolute, normalised ZooKeeper path (None when it is one)."""
    if not path.startswith("/"):
        return "is not absolute"
    if path == "/":
        return None
    if path.endswith("/"):
        return "ends with '/'"
    # ZooKeeper's PathUtils.validatePath: no NUL, no C0/C1 controls, nothing in U+D800-U+F8FF (surrogates, so
    # never valid UTF-8, and private use) or U+FFF0-U+FFFF.
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or 0xD800 <= ord(c) <= 0xF8FF or ord(c) >= 0xFFF0 for c in path):
        return "holds a character ZooKeeper refuses in paths (control, surrogate/not UTF-8, or reserved)"
    for part in path[1:].split("/"):
        if part == "":
            return "holds an empty component ('//')"
        if part in (".", ".."):
            return f"holds a relative component ({part!r})"
    return None


def zk_path(
    d: Mapping[str, Any], key: str, where: str, error: ErrorType, *, nullable: bool = False, hint: str | None = None
) -> str | None:
    v = text(d, key, where, error, nullable=nullable, max_len=1 << 16, hint=hint)
    if v is None:
        return None
    problem = zk_path_problem(v)
    if problem is not None:
        raise _fail(error, f"{where}.{key}", f"ZooKeeper path {describe(v)} {problem}", hint)
    return v


def req_zk_path(d: Mapping[str, Any], key: str, where: str, error: ErrorType, *, hint: str | None = None) -> str:
    v = zk_path(d, key, where, error, hint=hint)
    assert v is not None
    return v
