#!/usr/bin/env python3
"""Generate (or check) the frozen key-codec vectors in tests/vectors/codec.tsv.

The encodings come from the pure-Python rules below, written from
``docs/protocol.md`` section 2, and the hashes from the ``xxhash`` package
(xxh3_64, seed 0).  shardhash itself is never imported: the file is what
shardhash's codec must reproduce, forever.

Usage::

    python tools/make_codec_vectors.py            # (re)write tests/vectors/codec.tsv
    python tools/make_codec_vectors.py --check    # regenerate in memory, diff, exit 1 on any difference

Keys are written as tagged JSON so that any language can read them back:
``["int", "-1"]`` (decimal text, so no JSON number precision is involved),
``["str", "Stra\\u00dfe"]`` (ASCII-escaped JSON string), ``["bytes", "00ff"]``
(hex), ``["uuid", "12345678-1234-5678-1234-567812345678"]``, ``["bool", true]``,
``["none", null]``, ``["float", "1.5"]`` and ``["tuple", [part, ...]]``.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import unicodedata
import uuid
from pathlib import Path
from typing import Any

import xxhash

ROOT = Path(__file__).resolve().parent.parent
CODEC_TSV = ROOT / "tests" / "vectors" / "codec.tsv"

INT_MIN = -(1 << 63)
INT_MAX = (1 << 64) - 1
HEADER = ["int_encoding", "normalization", "casefold", "strip", "key", "encoded", "xxh3_64"]


class Rejected(Exception):
    """The key is not a key under this codec; ``kind`` is the Python exception name."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


# -- the rules (docs/protocol.md, section 2) -----------------------------------

def encode(key: Any, opts: dict[str, Any]) -> bytes:
    if isinstance(key, str):
        s = key
        if opts["strip"]:
            s = s.strip()
        if opts["normalization"]:
            s = unicodedata.normalize(opts["normalization"], s)
        if opts["casefold"]:
            s = s.casefold()
            if opts["normalization"]:
                s = unicodedata.normalize(opts["normalization"], s)
        try:
            return s.encode("utf-8")
        except UnicodeEncodeError:
            raise Rejected("ValueError") from None
    if isinstance(key, bytes):
        return key
    if isinstance(key, bool):
        raise Rejected("TypeError")
    if isinstance(key, int):
        if not INT_MIN <= key <= INT_MAX:
            raise Rejected("OverflowError")
        if opts["int_encoding"] == "decimal":
            return str(key).encode("ascii")
        return (key % (1 << 64)).to_bytes(8, "little")
    if isinstance(key, uuid.UUID):
        return key.bytes
    if isinstance(key, tuple):
        if not key:
            raise Rejected("ValueError")
        out = b""
        for part in key:
            b = encode(part, opts)
            out += len(b).to_bytes(4, "little") + b
        return out
    raise Rejected("TypeError")


# -- textual keys --------------------------------------------------------------

def key_to_json(key: Any) -> Any:
    if isinstance(key, str):
        return ["str", key]
    if isinstance(key, bytes):
        return ["bytes", key.hex()]
    if isinstance(key, bool):
        return ["bool", key]
    if isinstance(key, int):
        return ["int", str(key)]
    if isinstance(key, uuid.UUID):
        return ["uuid", str(key)]
    if isinstance(key, tuple):
        return ["tuple", [key_to_json(p) for p in key]]
    if key is None:
        return ["none", None]
    if isinstance(key, float):
        return ["float", repr(key)]
    raise TypeError(f"no textual form for {key!r}")


def key_from_json(doc: Any) -> Any:
    """Inverse of key_to_json (tests use the same reading)."""
    tag, value = doc
    if tag == "str":
        return value
    if tag == "bytes":
        return bytes.fromhex(value)
    if tag == "int":
        return int(value)
    if tag == "uuid":
        return uuid.UUID(value)
    if tag == "tuple":
        return tuple(key_from_json(p) for p in value)
    if tag == "bool":
        return bool(value)
    if tag == "none":
        return None
    if tag == "float":
        return float(value)
    raise ValueError(f"unknown key tag {tag!r}")


def dump_key(key: Any) -> str:
    return json.dumps(key_to_json(key), ensure_ascii=True, separators=(",", ":"))


# -- the vectors ---------------------------------------------------------------

def codec(int_encoding: str = "le64", normalization: str | None = None,
          casefold: bool = False, strip: bool = False) -> dict[str, Any]:
    return {"int_encoding": int_encoding, "normalization": normalization,
            "casefold": casefold, "strip": strip}


DEFAULT = codec()
DECIMAL = codec(int_encoding="decimal")

EDGE_INTS = [0, 1, -1, 2, 42, 127, 128, 255, 256, -128, -129, -256, 65535, 2**31 - 1, -(2**31),
             2**32 - 1, 2**32, 10**15, -(10**15), 2**53 + 1, 2**63 - 1, -(2**63), 2**63, 2**63 + 1,
             2**64 - 2, 2**64 - 1]
BAD_INTS = [2**64, -(2**63) - 1, 10**30]

STRINGS = [
    "", "a", "user-42", "héllo", "日本語", "𝄞", "😀x", " spaced ", "tab\there", "nul\x00inside",
    # canonically equivalent pairs: differ before NFC/NFD, agree after
    "\u00e9", "e\u0301", "\u00c5", "\u212b", "A\u030a", "\uac00", "\u1100\u1161",
    "\u1e9b\u0323", "q\u0307\u0323",
    # compatibility equivalents: differ after NFC, agree after NFKC
    "\ufb01", "fi", "\u2460", "1", "\uff76", "\u30ab", "x\u00b2", "\u2126", "\u00bd",
    # case folding
    "Straße", "STRASSE", "strasse", "\u1e9e", "İstanbul", "istanbul", "ı", "I", "i",
    "ΣΑΣ", "σας", "σασ", "ς", "\u01c5", "\ufb03", "\u0390", "\u1f80", "ǰ", "K", "\u212a",
    "Alice@Example.COM", "alice@example.com",
    # whitespace for strip (str.strip: Unicode whitespace, not zero-width characters)
    "  Alice@Example.COM ", "\t\n x \r\x0b\x0c", "\u00a0x\u00a0", "\u3000y\u3000", "\u2003z",
    "\u200bzwsp\u200b", "\u1680ogham", "\x1c\x1d\x1e\x1fsep", "   ",
    # lone surrogates are rejected
    "a\ud800", "\udfff",
]

BYTES = [b"", b"\x00", b"\x00\x00", b"\xff\xfe\xfd", b"abc", b"ABC", b"Stra\xc3\x9fe", b"\x80"]

UUIDS = [uuid.UUID(int=0), uuid.UUID(int=INT_MAX | (INT_MAX << 64)),
         uuid.UUID("12345678-1234-5678-1234-567812345678"),
         uuid.UUID("00112233-4455-6677-8899-aabbccddeeff"),
         uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")]

TUPLES = [
    ("ab", "c"), ("a", "bc"), ("abc",), ("a", "b", "c"), ("", ""), ("",), ("", "abc"),
    ("tenant-7", 42), ("tenant-7", -1), (42, "tenant-7"), (1, 2), (2**64 - 1,), (-(2**63), 2**63),
    (("a", 1), b"x"), ("a", (1, ("b",))), ((), ), ("x", ()), (b"\x00", b""),
    (uuid.UUID("12345678-1234-5678-1234-567812345678"), "user"),
    ("Straße", "  X "), ("\u00c5", "e\u0301"), ("a", 1.5), ("a", None), ("a", True), ("a", 2**64),
    ("a\ud800",),
]

OTHER_BAD = [True, False, None, 1.5, 0.0]


def rows() -> list[list[str]]:
    cases: list[tuple[dict[str, Any], Any]] = []
    for c in (DEFAULT, DECIMAL):
        for v in EDGE_INTS + BAD_INTS:
            cases.append((c, v))
    string_codecs = [DEFAULT, codec(normalization="NFC"), codec(normalization="NFD"),
                     codec(normalization="NFKC"), codec(normalization="NFKD"), codec(casefold=True),
                     codec(strip=True), codec(normalization="NFC", casefold=True),
                     codec(normalization="NFKC", casefold=True, strip=True)]
    for c in string_codecs:
        for s in STRINGS:
            cases.append((c, s))
    for c in (DEFAULT, codec(int_encoding="decimal", normalization="NFKC", casefold=True, strip=True)):
        for k in BYTES + UUIDS + OTHER_BAD:
            cases.append((c, k))
    for c in (DEFAULT, DECIMAL, codec(normalization="NFKC", casefold=True, strip=True)):
        for t in TUPLES:
            cases.append((c, t))
    out = []
    for c, key in cases:
        try:
            enc = encode(key, c)
            encoded, digest = enc.hex() or "-", f"{xxhash.xxh3_64_intdigest(enc, seed=0):016x}"
        except Rejected as exc:
            encoded, digest = "!" + exc.kind, "-"
        out.append([c["int_encoding"], c["normalization"] or "-", str(int(c["casefold"])),
                    str(int(c["strip"])), dump_key(key), encoded, digest])
    return out


PREAMBLE = """\
# shardhash key-codec vectors (format shardhash.codec/1).  FROZEN: rows are never edited or removed.
# Generated by tools/make_codec_vectors.py from the rules of docs/protocol.md and xxhash; see README.md.
# int_encoding: le64|decimal; normalization: -|NFC|NFD|NFKC|NFKD; casefold, strip: 0|1.
# key: tagged JSON (["int","-1"], ["str","..."], ["bytes","<hex>"], ["uuid","..."], ["tuple",[...]], ...).
# encoded: hex of the bytes hashed ("-" when empty), or "!<Exception>" when the key is rejected.
# xxh3_64: xxh3_64 with seed 0 of the encoded bytes, 16 lowercase hex digits ("-" when rejected).
"""


def render() -> str:
    lines = [PREAMBLE.rstrip("\n"), "\t".join(HEADER)]
    lines += ["\t".join(r) for r in rows()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="regenerate in memory and compare")
    ap.add_argument("--output", type=Path, default=CODEC_TSV)
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        current = args.output.read_text(encoding="utf-8")
        if current == text:
            print(f"{args.output}: {len(text.splitlines())} lines, identical")
            return 0
        sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), text.splitlines(True),
                                                   str(args.output), "regenerated"))
        return 1
    args.output.write_text(text, encoding="utf-8", newline="\n")
    print(f"wrote {args.output} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
