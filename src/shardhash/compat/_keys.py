"""Key conversions shared by the compatibility routers."""

from __future__ import annotations

from typing import Any


def text_or_bytes(key: Any) -> bytes | None:
    """``key`` as bytes when it is bytes-like or a str (UTF-8), else None
    (the caller accepts other types, or refuses them in its own words)."""
    if isinstance(key, bytes):
        return key
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (bytearray, memoryview)):
        return bytes(key)
    return None
