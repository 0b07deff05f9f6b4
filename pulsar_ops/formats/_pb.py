"""Shared protobuf parsing helpers: one place that turns any protobuf failure into a DecodeError."""

from __future__ import annotations

from typing import Any

from google.protobuf import text_format

from pulsar_ops.errors import DecodeError


def parse_binary(cls: Any, data: bytes, path: str, what: str) -> Any:
    """Parse ``data`` as a binary ``cls`` message with every required field present, else DecodeError."""
    msg = cls()
    try:
        msg.ParseFromString(data)
    except Exception as exc:  # upb raises google.protobuf.message.DecodeError; be total over all inputs
        raise DecodeError(path, f"{what}: not a valid binary protobuf ({exc})") from None
    if not msg.IsInitialized():
        missing = ", ".join(msg.FindInitializationErrors()[:5])
        raise DecodeError(path, f"{what}: required field(s) missing: {missing}")
    return msg


def try_binary(cls: Any, data: bytes) -> tuple[Any | None, str]:
    """Like parse_binary but returns (message or None, failure reason) instead of raising."""
    msg = cls()
    try:
        msg.ParseFromString(data)
    except Exception as exc:
        return None, f"not a valid binary protobuf ({exc})"
    if not msg.IsInitialized():
        return None, "required field(s) missing: " + ", ".join(msg.FindInitializationErrors()[:5])
    return msg, ""


def try_text(cls: Any, data: bytes) -> tuple[Any | None, str]:
    """Parse protobuf text format; returns (message or None, failure reason)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    msg = cls()
    try:
        text_format.Parse(text, msg)
    except Exception as exc:  # text_format.ParseError and friends
        return None, f"not protobuf text format ({str(exc).splitlines()[0] if str(exc) else exc!r})"
    if not msg.IsInitialized():
        return None, "required field(s) missing: " + ", ".join(msg.FindInitializationErrors()[:5])
    return msg, ""
