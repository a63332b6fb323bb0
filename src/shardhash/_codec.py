"""The key codec: how a key becomes the bytes that are hashed.

The codec is part of the routing protocol: two services that hash the same
user id with the same algorithm and seed but encode it differently route it
differently.  Every rule here is written down in ``docs/protocol.md`` and
frozen by ``tests/vectors/codec.tsv``.
"""

from __future__ import annotations

import numbers
import unicodedata
import uuid
from dataclasses import dataclass
from typing import Any, Literal, cast

__all__ = ["KeyCodec", "CODEC_FORMAT", "INT_MIN", "INT_MAX"]

CODEC_FORMAT = "shardhash.codec/1"

INT_MIN = -(1 << 63)
INT_MAX = (1 << 64) - 1

_INT_ENCODINGS = ("le64", "decimal")
_NORMALIZATIONS = (None, "NFC", "NFKC", "NFD", "NFKD")
_FIELDS = ("format", "int_encoding", "normalization", "casefold", "strip")


def _describe(key: Any) -> str:
    r = repr(key)
    if len(r) > 60:
        r = r[:57] + "..."
    return f"{r} (type {type(key).__name__})"


@dataclass(frozen=True)
class KeyCodec:
    """How keys are turned into bytes before hashing.

    Parameters
    ----------
    int_encoding:
        ``"le64"`` (default): an integer is hashed as its 8-byte little-endian
        two's complement; values from -2**63 to 2**64-1 are accepted and values
        >= 2**63 use their uint64 bit pattern (so ``-1`` and ``2**64-1`` are
        the same key).  ``"decimal"``: the integer's decimal ASCII text
        (``-12`` → ``b"-12"``), for systems that hash textual ids.
    normalization:
        ``None`` or a Unicode normalisation form applied to strings
        (``"NFC"``, ``"NFKC"``, ``"NFD"``, ``"NFKD"``).
    casefold:
        Apply Unicode full case folding to strings (``"Straße"`` →
        ``"strasse"``), for case-insensitive ids such as e-mail addresses.
    strip:
        Remove leading and trailing whitespace from strings.

    Strings are transformed in the order strip, normalise, casefold,
    normalise again (case folding can denormalise), then encoded as UTF-8.

    >>> KeyCodec().encode(1)
    b'\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00'
    >>> KeyCodec(casefold=True, strip=True).encode("  Alice@Example.COM ")
    b'alice@example.com'
    >>> KeyCodec().encode(("ab", "c")) != KeyCodec().encode(("a", "bc"))
    True
    """

    int_encoding: str = "le64"
    normalization: str | None = None
    casefold: bool = False
    strip: bool = False

    def __post_init__(self) -> None:
        if self.int_encoding not in _INT_ENCODINGS:
            raise ValueError(
                f"int_encoding must be one of {_INT_ENCODINGS}, got {self.int_encoding!r}"
            )
        if self.normalization not in _NORMALIZATIONS:
            raise ValueError(
                f"normalization must be one of {_NORMALIZATIONS}, got {self.normalization!r}"
            )
        for name in ("casefold", "strip"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")

    # -- properties the compiled fast paths rely on -------------------------
    @property
    def plain_strings(self) -> bool:
        """True when strings are hashed as their plain UTF-8 bytes."""
        return self.normalization is None and not self.casefold and not self.strip

    @property
    def _form(self) -> Literal["NFC", "NFD", "NFKC", "NFKD"]:
        return cast(Literal["NFC", "NFD", "NFKC", "NFKD"], self.normalization)

    # -- encoding ----------------------------------------------------------------
    def encode_int(self, value: int) -> bytes:
        v = int(value)
        if v < INT_MIN or v > INT_MAX:
            raise OverflowError(
                f"integer key {v} is out of range: keys must lie in [-2**63, 2**64-1]"
            )
        if self.int_encoding == "decimal":
            return str(v).encode("ascii")
        return (v & INT_MAX).to_bytes(8, "little")

    def encode_str(self, value: str) -> bytes:
        # str.__str__ gives the characters themselves, even for a subclass
        # that overrides __str__.
        s = value if type(value) is str else str.__str__(value)
        # numpy can build str objects holding values beyond U+10FFFF; no str
        # method may touch them (some raise SystemError), so check first.
        from shardhash._hashing import check_code_points

        check_code_points(s)
        if self.strip:
            s = s.strip()
        if self.normalization is not None:
            s = unicodedata.normalize(self._form, s)
        if self.casefold:
            s = s.casefold()
            if self.normalization is not None:
                s = unicodedata.normalize(self._form, s)
        try:
            return s.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"string key {_describe(value)} cannot be encoded as UTF-8: {exc.reason} "
                f"at index {exc.start}"
            ) from None

    def encode(self, key: Any) -> bytes:
        """Encode one key to the bytes that are hashed."""
        if isinstance(key, str):
            return self.encode_str(key)
        if isinstance(key, (bytes, bytearray)):
            return bytes(key)
        if isinstance(key, bool) or (
            type(key).__module__ == "numpy" and type(key).__name__ in ("bool", "bool_")
        ):
            raise TypeError(f"cannot use {_describe(key)} as a key: booleans are rejected")
        if isinstance(key, int):
            return self.encode_int(key)
        if isinstance(key, tuple):
            return self.encode_tuple(key)
        if isinstance(key, uuid.UUID):
            return key.bytes
        if isinstance(key, memoryview):
            return key.tobytes()
        if isinstance(key, numbers.Integral):  # numpy integers and friends
            return self.encode_int(int(key))
        if isinstance(key, (float, complex, numbers.Number)):
            raise TypeError(
                f"cannot use {_describe(key)} as a key: floating-point and complex "
                "values are not keys (convert them to int or str explicitly)"
            )
        if key is None:
            raise TypeError("cannot use None as a key")
        raise TypeError(
            f"cannot use {_describe(key)} as a key: expected int, str, bytes, "
            "uuid.UUID or a tuple of those"
        )

    def encode_tuple(self, key: tuple[Any, ...]) -> bytes:
        """Compound key: each part encoded, prefixed by its 4-byte LE length."""
        if not key:
            raise ValueError("an empty tuple is not a key")
        parts = []
        for part in key:
            b = self.encode(part)
            if len(b) > 0xFFFFFFFF:
                raise ValueError("a compound key part is longer than 2**32-1 bytes")
            parts.append(len(b).to_bytes(4, "little"))
            parts.append(b)
        return b"".join(parts)

    # -- documents ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The codec's canonical document (part of the routing protocol)."""
        return {
            "format": CODEC_FORMAT,
            "int_encoding": self.int_encoding,
            "normalization": self.normalization,
            "casefold": self.casefold,
            "strip": self.strip,
        }

    @classmethod
    def from_dict(cls, doc: Any) -> KeyCodec:
        """Rebuild a codec from :meth:`to_dict` output; strict about fields."""
        if not isinstance(doc, dict):
            raise TypeError(f"a codec document must be a dict, got {type(doc).__name__}")
        unknown = sorted(set(doc) - set(_FIELDS), key=str)
        if unknown:
            raise ValueError(f"unknown field(s) in codec document: {', '.join(map(str, unknown))}")
        fmt = doc.get("format")
        if fmt != CODEC_FORMAT:
            raise ValueError(f"codec document format must be {CODEC_FORMAT!r}, got {fmt!r}")
        missing = [f for f in _FIELDS if f not in doc]
        if missing:
            raise ValueError(f"codec document is missing field(s): {', '.join(missing)}")
        return cls(
            int_encoding=doc["int_encoding"],
            normalization=doc["normalization"],
            casefold=doc["casefold"],
            strip=doc["strip"],
        )
