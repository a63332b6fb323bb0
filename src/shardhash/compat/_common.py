"""Argument checks and key conversions shared by the compatibility routers."""

from __future__ import annotations

import numbers
import uuid as _uuid
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

#: The signed 64-bit range: MongoDB's hashed values and Cassandra's
#: Murmur3Partitioner tokens both live in it.
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


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


def int_pair_seq(value: Any, n: int, name: str, pair: str, of: str, ints: str,
                 check: Callable[[int, int, int], None]) -> list[tuple[int, int]]:
    """A constructor's ``name`` argument: a sequence of ``n`` pairs of ints
    (``pair`` names the two, ``of`` what the ``n`` count), each malformed
    pair refused with its position (``ints``: the words for a pair that
    holds a non-int), each pair of ints then passed to ``check(i, a, b)``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a sequence of ({pair}) pairs, not {type(value).__name__}")
    if len(value) != n:
        raise ValueError(f"{len(value)} {name} given for {n} {of}")
    out = []
    for i, p in enumerate(value):
        if isinstance(p, (str, bytes)) or not isinstance(p, Sequence) or len(p) != 2:
            raise TypeError(f"{name}[{i}] must be a ({pair}) pair, not {p!r}")
        for v in p:
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
                raise TypeError(f"{name}[{i}] {ints}, not {v!r}")
        a, b = int(p[0]), int(p[1])
        check(i, a, b)
        out.append((a, b))
    return out


def one_of(value: Any, name: str, choices: Sequence[str], unknown: str) -> str:
    """A str argument ``name`` that must be one of ``choices``; a str outside
    them is refused as ``"{unknown} {value!r}"`` with the choices listed."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if value not in choices:
        raise ValueError(f"{unknown} {value!r}; choose one of {', '.join(choices)}")
    return value


def uuid_bytes(value: Any, not_uuid: Callable[[str], str], wrong_type: Callable[[Any], str]) -> bytes:
    """The 16 bytes of a UUID given as a uuid.UUID or its text; the caller
    words the refusals in its system's terms: ``not_uuid(text)`` for a str
    that does not parse, ``wrong_type(value)`` for any other type."""
    if isinstance(value, _uuid.UUID):
        return value.bytes
    if isinstance(value, str):
        try:
            return _uuid.UUID(value).bytes
        except ValueError:
            raise ValueError(not_uuid(value)) from None
    raise TypeError(wrong_type(value))
