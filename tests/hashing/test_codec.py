"""The key codec: frozen vectors (tests/vectors/codec.tsv) and its rules.

codec.tsv was generated once by tools/make_codec_vectors.py from pure-Python
rules written from docs/protocol.md plus the ``xxhash`` package, never from
shardhash; here shardhash must reproduce every row through KeyCodec.encode,
hash_key, Hasher and hash_array.
"""

from __future__ import annotations

import json
import unicodedata
import uuid
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from shardhash import Hasher, KeyCodec, hash_array, hash_key
from tests._support import VECTORS as VECTOR_ROOT

VECTORS = VECTOR_ROOT / "codec.tsv"
HEADER = ["int_encoding", "normalization", "casefold", "strip", "key", "encoded", "xxh3_64"]


def key_from_json(doc: Any) -> Any:
    tag, value = doc
    readers: dict[str, Callable[[Any], Any]] = {
        "str": lambda v: v, "bytes": bytes.fromhex, "int": int, "uuid": uuid.UUID,
        "tuple": lambda v: tuple(key_from_json(p) for p in v), "bool": bool,
        "none": lambda v: None, "float": float,
    }
    return readers[tag](value)


def load() -> list[dict[str, Any]]:
    rows = []
    lines = [ln for ln in VECTORS.read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    assert lines[0].split("\t") == HEADER
    for ln in lines[1:]:
        f = dict(zip(HEADER, ln.split("\t"), strict=True))
        codec = KeyCodec(int_encoding=f["int_encoding"],
                         normalization=None if f["normalization"] == "-" else f["normalization"],
                         casefold=f["casefold"] == "1", strip=f["strip"] == "1")
        rows.append({"codec": codec, "text": f["key"], "key": key_from_json(json.loads(f["key"])),
                     "encoded": f["encoded"], "hash": f["xxh3_64"]})
    return rows


ROWS = load()
GOOD = [r for r in ROWS if not r["encoded"].startswith("!")]
BAD = [r for r in ROWS if r["encoded"].startswith("!")]
EXC = {"TypeError": TypeError, "ValueError": ValueError, "OverflowError": OverflowError}


def expected_bytes(row: dict[str, Any]) -> bytes:
    return b"" if row["encoded"] == "-" else bytes.fromhex(row["encoded"])


def test_vector_file_shape() -> None:
    assert len(ROWS) > 600 and len(BAD) > 20
    assert len({(r["codec"], r["text"]) for r in ROWS}) == len(ROWS), "duplicate rows"
    for r in GOOD:
        assert len(r["hash"]) == 16 and int(r["hash"], 16) >= 0


@pytest.mark.parametrize("row", GOOD, ids=lambda r: f"{r['codec'].int_encoding}-{r['codec'].normalization}-"
                         f"{int(r['codec'].casefold)}{int(r['codec'].strip)}-{r['text'][:40]}")
def test_vector_encodes_and_hashes(row: dict[str, Any]) -> None:
    codec, key = row["codec"], row["key"]
    assert codec.encode(key) == expected_bytes(row)
    expected = int(row["hash"], 16)
    assert hash_key(key, "xxh3_64", 0, codec) == expected
    assert Hasher("xxh3_64", 0, codec)(key) == expected
    assert Hasher(codec=codec).encode(key) == expected_bytes(row)


@pytest.mark.parametrize("row", BAD, ids=lambda r: f"{r['codec'].int_encoding}-{r['text'][:40]}")
def test_vector_rejections(row: dict[str, Any]) -> None:
    exc = EXC[row["encoded"][1:]]
    codec, key = row["codec"], row["key"]
    with pytest.raises(exc):
        codec.encode(key)
    with pytest.raises(exc):
        hash_key(key, codec=codec)
    with pytest.raises(exc, match=r"^key at position 1: "):
        hash_array(["ok", key], codec=codec)


def test_vectors_in_batches_per_codec() -> None:
    by_codec: dict[KeyCodec, list[dict[str, Any]]] = defaultdict(list)
    for r in GOOD:
        by_codec[r["codec"]].append(r)
    for codec, rows in by_codec.items():
        keys = [r["key"] for r in rows]
        expected = np.array([int(r["hash"], 16) for r in rows], dtype=np.uint64)
        assert np.array_equal(hash_array(keys, codec=codec), expected), codec
        obj = np.empty(len(keys), dtype=object)
        obj[:] = [None] * len(keys)
        for i, k in enumerate(keys):
            obj[i] = k
        assert np.array_equal(hash_array(obj, codec=codec), expected), codec
        strs = [(r["key"], e) for r, e in zip(rows, expected) if isinstance(r["key"], str)]
        if strs:
            u = np.array([s for s, _ in strs])
            assert u.dtype.kind == "U"
            assert np.array_equal(hash_array(u, codec=codec), [e for _, e in strs]), codec
        ints = [(r["key"], e) for r, e in zip(rows, expected) if type(r["key"]) is int]
        if ints:
            neg_ok = [(k, e) for k, e in ints if k < 2**63]
            pos_ok = [(k, e) for k, e in ints if k >= 0]
            assert np.array_equal(hash_array(np.array([k for k, _ in neg_ok], np.int64), codec=codec),
                                  [e for _, e in neg_ok])
            assert np.array_equal(hash_array(np.array([k for k, _ in pos_ok], np.uint64), codec=codec),
                                  [e for _, e in pos_ok])


# ---------------------------------------------------------------------------
# The vectors cover the rules the protocol promises (checked on the file itself)

def find(text_key: Any, codec: KeyCodec) -> dict[str, Any]:
    text = json.dumps(text_key, ensure_ascii=True, separators=(",", ":"))
    (row,) = [r for r in ROWS if r["text"] == text and r["codec"] == codec]
    return row


def s(v: str) -> list[Any]:
    return ["str", v]


def i(v: int) -> list[Any]:
    return ["int", str(v)]


DEFAULT = KeyCodec()
DECIMAL = KeyCodec(int_encoding="decimal")


def test_integer_edges() -> None:
    assert find(i(-1), DEFAULT)["encoded"] == find(i(2**64 - 1), DEFAULT)["encoded"] == "ff" * 8
    assert find(i(-(2**63)), DEFAULT)["encoded"] == find(i(2**63), DEFAULT)["encoded"] == "00" * 7 + "80"
    assert find(i(2**63 - 1), DEFAULT)["encoded"] == "ff" * 7 + "7f"
    assert find(i(0), DEFAULT)["encoded"] == "00" * 8 and find(i(1), DEFAULT)["encoded"] == "01" + "00" * 7
    for v in (2**64, -(2**63) - 1):
        assert find(i(v), DEFAULT)["encoded"] == "!OverflowError"
        assert find(i(v), DECIMAL)["encoded"] == "!OverflowError"
    # decimal: the value's text, so -1 and 2**64-1 are different keys
    assert bytes.fromhex(find(i(-1), DECIMAL)["encoded"]) == b"-1"
    assert bytes.fromhex(find(i(2**64 - 1), DECIMAL)["encoded"]) == b"18446744073709551615"
    assert bytes.fromhex(find(i(-(2**63)), DECIMAL)["encoded"]) == b"-9223372036854775808"
    assert bytes.fromhex(find(i(0), DECIMAL)["encoded"]) == b"0"


def test_normalisation_pairs() -> None:
    nfc, nfkc = KeyCodec(normalization="NFC"), KeyCodec(normalization="NFKC")
    for a, b in [("\u00e9", "e\u0301"), ("\u00c5", "\u212b"), ("\u00c5", "A\u030a"), ("\uac00", "\u1100\u1161")]:
        assert find(s(a), DEFAULT)["hash"] != find(s(b), DEFAULT)["hash"]
        assert find(s(a), nfc)["hash"] == find(s(b), nfc)["hash"]
    for a, b in [("\ufb01", "fi"), ("\u2460", "1"), ("\uff76", "\u30ab")]:
        assert find(s(a), nfc)["hash"] != find(s(b), nfc)["hash"]
        assert find(s(a), nfkc)["hash"] == find(s(b), nfkc)["hash"]


def test_casefolding() -> None:
    cf = KeyCodec(casefold=True)
    same = [("Straße", "strasse"), ("STRASSE", "strasse"), ("ΣΑΣ", "σας"),
            ("σας", "σασ"), ("K", "\u212a"), ("Alice@Example.COM", "alice@example.com"), ("I", "i")]
    for a, b in same:
        assert find(s(a), DEFAULT)["hash"] != find(s(b), DEFAULT)["hash"]
        assert find(s(a), cf)["hash"] == find(s(b), cf)["hash"], (a, b)
    # the dotless i stays itself, and the dotted capital I is not plain "i"
    assert find(s("ı"), cf)["hash"] != find(s("i"), cf)["hash"]
    assert bytes.fromhex(find(s("İstanbul"), cf)["encoded"]).decode() == "i\u0307stanbul"
    assert bytes.fromhex(find(s("\u1e9e"), cf)["encoded"]) == b"ss"  # capital sharp s
    # final sigma folds to sigma
    assert bytes.fromhex(find(s("ς"), cf)["encoded"]).decode() == "σ"
    # folding can denormalise; the codec normalises again afterwards
    both = KeyCodec(normalization="NFC", casefold=True)
    assert bytes.fromhex(find(s("\u0390"), both)["encoded"]).decode() == "\u0390"
    assert bytes.fromhex(find(s("\u0390"), cf)["encoded"]).decode() == "\u03b9\u0308\u0301"


def test_strip() -> None:
    st = KeyCodec(strip=True)
    for raw, stripped in [(" spaced ", "spaced"), ("\t\n x \r\x0b\x0c", "x"), ("\u00a0x\u00a0", "x"),
                          ("\u3000y\u3000", "y"), ("   ", ""), ("\u200bzwsp\u200b", "\u200bzwsp\u200b")]:
        assert bytes.fromhex(find(s(raw), st)["encoded"].replace("-", "")).decode() == stripped
    email = KeyCodec(normalization="NFKC", casefold=True, strip=True)
    assert find(s("  Alice@Example.COM "), email)["hash"] == find(s("alice@example.com"), email)["hash"]


def test_compound_keys() -> None:
    def t(*parts: Any) -> list[Any]:
        return ["tuple", list(parts)]
    ab_c, a_bc = find(t(s("ab"), s("c")), DEFAULT), find(t(s("a"), s("bc")), DEFAULT)
    assert ab_c["encoded"] == "02000000" + "6162" + "01000000" + "63"
    assert a_bc["encoded"] == "01000000" + "61" + "02000000" + "6263"
    assert find(t(s("abc")), DEFAULT)["encoded"] != find(t(s("a"), s("b"), s("c")), DEFAULT)["encoded"]
    assert find(t(s(""), s("")), DEFAULT)["encoded"] == "00000000" * 2
    inner = t(s("a"), i(1))
    nested = find(t(inner, ["bytes", "78"]), DEFAULT)["encoded"]
    inner_enc = "01000000" "61" "08000000" "0100000000000000"
    assert nested == f"{len(inner_enc) // 2:02x}000000" + inner_enc + "01000000" "78"
    assert find(t(s("tenant-7"), i(42)), DECIMAL)["encoded"] == \
        "08000000" + b"tenant-7".hex() + "02000000" + b"42".hex()
    assert find(t(s("a"), ["float", "1.5"]), DEFAULT)["encoded"] == "!TypeError"
    assert find(t(s("a"), i(2**64)), DEFAULT)["encoded"] == "!OverflowError"
    assert find(t(["tuple", []]), DEFAULT)["encoded"] == "!ValueError"


# ---------------------------------------------------------------------------
# Rules checked directly against the codec (beyond the frozen rows)

def test_numpy_integer_scalars_encode_like_int() -> None:
    for codec in (DEFAULT, DECIMAL):
        for v in (0, 1, -1, 127, -128):
            for t in (np.int8, np.int16, np.int32, np.int64):
                assert codec.encode(t(v)) == codec.encode(v)
        for v in (0, 255, 2**64 - 1):
            assert codec.encode(np.uint64(v)) == codec.encode(v)
    assert DECIMAL.encode(np.uint64(2**64 - 1)) == b"18446744073709551615"
    assert DEFAULT.encode(np.int64(-1)) == DEFAULT.encode(np.uint64(2**64 - 1))


def test_string_options_leave_bytes_and_uuids_alone() -> None:
    all_on = KeyCodec(int_encoding="decimal", normalization="NFKC", casefold=True, strip=True)
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    for k in (b"  ABC ", bytearray(b"Stra\xc3\x9fe"), u, memoryview(b"\xef\xac\x81")):
        assert all_on.encode(k) == DEFAULT.encode(k)
    assert DEFAULT.encode(u) == u.bytes == bytes.fromhex("12345678123456781234567812345678")


def test_transform_order() -> None:
    # strip, normalise, casefold, normalise again: the documented order.
    c = KeyCodec(normalization="NFKC", casefold=True, strip=True)
    for raw in ["  \u0390 ", "\u3000ＡＢＣ\u3000", " Stra\u00dfe ", "\u1e9b\u0323"]:
        want = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", raw.strip()).casefold())
        assert c.encode(raw) == want.encode()


def test_codec_strings_in_tuples_are_transformed() -> None:
    c = KeyCodec(casefold=True, strip=True)
    assert c.encode((" ABC ", "Straße")) == c.encode(("abc", "strasse"))
    assert c.encode((" ABC ", b" ABC ")) != c.encode(("abc", b"abc"))
