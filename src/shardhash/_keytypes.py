"""Declared key types: how an id read from a file becomes a key.

The key type is part of the routing protocol: the integer ``7`` and the
string ``"007"`` are different keys and hash differently, so a file of ids
must be parsed as the type the application uses, never guessed from the
values.  A router document may declare it (``key_type``, see
``docs/protocol.md``); the command line takes ``--id-type`` otherwise.

A key type is one of ``"int"``, ``"str"``, ``"bytes"``, ``"uuid"``, or a
tuple of those for a compound key (one file column per part).

>>> parse_key_type("int"), parse_key_type(["str", "int"])
('int', ('str', 'int'))
>>> parse_text("007", "str"), parse_text("007", "int")
('007', 7)
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["KEY_TYPE_FORMAT", "SCALAR_TYPES", "KeyType", "parse_key_type", "key_type_to_doc",
           "key_type_from_doc", "key_type_name", "parse_text", "parse_column"]

KEY_TYPE_FORMAT = "shardhash.keytype/1"
SCALAR_TYPES = ("int", "str", "bytes", "uuid")

KeyType = str | tuple[str, ...]

_INT_RE = re.compile(r"[+-]?[0-9]+\Z")
_HEX_RE = re.compile(r"(?:0[xX])?(?:[0-9a-fA-F]{2})*\Z")
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_UINT64_MAX = (1 << 64) - 1
# ASCII whitespace only: a non-ASCII space inside an id is data, not padding.
_WS = " \t\r\n\f\v"


def parse_key_type(spec: Any) -> KeyType:
    """Check a key type given as ``"int"``, ``"str"``, ``"bytes"``,
    ``"uuid"``, a comma-separated string (``"str,int"``) or a sequence of
    those; returns a str or a tuple of str.

    >>> parse_key_type("str,int")
    ('str', 'int')
    """
    if isinstance(spec, str):
        parts = [p.strip() for p in spec.split(",")]
        if len(parts) == 1:
            t = parts[0]
            if t not in SCALAR_TYPES:
                raise ValueError(f"unknown key type {spec!r}: expected one of {', '.join(SCALAR_TYPES)} "
                                 "or a comma-separated list of them for a compound key")
            return t
        spec = parts
    if isinstance(spec, (list, tuple)):
        if not spec:
            raise ValueError("a compound key type needs at least one part")
        out = []
        for p in spec:
            if not isinstance(p, str) or p not in SCALAR_TYPES:
                raise ValueError(f"unknown key type part {p!r}: each part is one of {', '.join(SCALAR_TYPES)}")
            out.append(p)
        return tuple(out)
    raise TypeError(f"a key type must be a str or a list of str, not {type(spec).__name__}")


def key_type_name(kt: KeyType) -> str:
    """``"int"`` or ``"(str, int)"``, for messages and ``topology show``."""
    return kt if isinstance(kt, str) else "(" + ", ".join(kt) + ")"


def key_type_to_doc(kt: KeyType) -> dict[str, Any]:
    """The ``key_type`` object of a router document.

    >>> key_type_to_doc(("str", "int"))
    {'format': 'shardhash.keytype/1', 'type': ['str', 'int']}
    """
    return {"format": KEY_TYPE_FORMAT, "type": kt if isinstance(kt, str) else list(kt)}


def key_type_from_doc(doc: Any) -> KeyType:
    """Read the ``key_type`` object of a router document (strict)."""
    if not isinstance(doc, dict):
        raise TypeError(f"key_type must be an object, not {type(doc).__name__}")
    unknown = sorted(set(doc) - {"format", "type"}, key=str)
    if unknown:
        raise ValueError(f"key_type has unknown field(s): {', '.join(map(repr, unknown))}")
    if doc.get("format") != KEY_TYPE_FORMAT:
        raise ValueError(f"key_type format must be {KEY_TYPE_FORMAT!r}, got {doc.get('format')!r}")
    if "type" not in doc:
        raise ValueError("key_type lacks field 'type'")
    t = doc["type"]
    if isinstance(t, str) and "," in t:
        raise ValueError(f"key_type 'type' {t!r}: a compound key type is a JSON list")
    if isinstance(t, list) and len(t) < 2:
        raise ValueError("key_type 'type': a compound key type lists at least two parts")
    if not isinstance(t, (str, list)):
        raise TypeError(f"key_type 'type' must be a str or a list, not {type(t).__name__}")
    return parse_key_type(t)


def parse_text(text: str, kind: str) -> Any:
    """One id read from a text file, as a key of scalar type ``kind``.

    ``str`` ids are taken exactly as written (``"007"`` stays ``"007"``);
    ``int`` ids are ASCII decimal in [-2**63, 2**64-1], surrounding ASCII
    spaces allowed; ``bytes`` ids are hex (an optional ``0x``); ``uuid`` ids
    any form :class:`uuid.UUID` accepts.  Raises ValueError.
    """
    if kind == "str":
        if text == "":
            raise ValueError("empty id")
        return text
    s = text.strip(_WS)
    if s == "":
        raise ValueError("empty id")
    if kind == "int":
        if not _INT_RE.match(s):
            raise ValueError(f"{text!r} is not an integer id")
        v = int(s)
        if v < _INT64_MIN or v > _UINT64_MAX:
            raise ValueError(f"integer id {s} is out of range [-2**63, 2**64-1]")
        return v
    if kind == "bytes":
        if not _HEX_RE.match(s):
            raise ValueError(f"{text!r} is not a bytes id (hex digits, an even number of them)")
        return bytes.fromhex(s[2:] if s[:2] in ("0x", "0X") else s)
    if kind == "uuid":
        try:
            return uuid.UUID(s)
        except ValueError:
            raise ValueError(f"{text!r} is not a UUID") from None
    raise ValueError(f"unknown key type {kind!r}")  # pragma: no cover


def _ints_array(vals: list[int]) -> np.ndarray:
    """int64 when every value fits, uint64 when none is negative, else an
    object array of Python ints (every key keeps its exact value)."""
    if not vals:
        return np.empty(0, dtype=np.int64)
    lo, hi = min(vals), max(vals)
    if lo >= _INT64_MIN and hi <= _INT64_MAX:
        return np.array(vals, dtype=np.int64)
    if lo >= 0:
        return np.array(vals, dtype=np.uint64)
    out = np.empty(len(vals), dtype=object)
    out[:] = vals
    return out


def parse_column(values: Sequence[str], kind: str, rows: Sequence[int] | int, where: str,
                 unit: str = "row") -> np.ndarray:
    """Parse a column of ids of scalar type ``kind``; an error names the row.

    ``rows`` is the file row of each value (a sequence) or of the first one
    (an int, rows then follow one another).
    """
    def row_of(i: int) -> int:
        return rows + i if isinstance(rows, int) else rows[i]

    if kind == "int":
        try:
            # Fast path: int() then a range check; the strict pattern check
            # only runs on the values int() accepts but we do not (1_000, ٣).
            vals = [int(v) for v in values]
        except ValueError:
            vals = []
        if len(vals) == len(values):
            lo = min(vals) if vals else 0
            hi = max(vals) if vals else 0
            if lo >= _INT64_MIN and hi <= _UINT64_MAX and all(_INT_RE.match(v.strip(_WS)) for v in values):
                return _ints_array(vals)
        for i, v in enumerate(values):
            try:
                parse_text(v, kind)
            except ValueError as exc:
                raise ValueError(f"{where}: {unit} {row_of(i)}: {exc} (key type int)") from None
        raise AssertionError("unreachable")  # pragma: no cover
    out = np.empty(len(values), dtype=object)
    if kind == "str":
        for i, v in enumerate(values):
            if v == "":
                raise ValueError(f"{where}: {unit} {row_of(i)}: empty id")
        out[:] = list(values)
        return out
    for i, v in enumerate(values):
        try:
            out[i] = parse_text(v, kind)
        except ValueError as exc:
            raise ValueError(f"{where}: {unit} {row_of(i)}: {exc} (key type {kind})") from None
    return out
