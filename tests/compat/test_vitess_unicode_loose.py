"""shardhash.compat.vitess: the unicode_loose_md5 / unicode_loose_xxhash vindexes.

Golden vectors: tests/vectors/compat/vitess_unicode_loose.tsv (the Map() and
normalisation vectors of Vitess's own tests and two texts of its
unicode_hash_golden.json, file and commit per row) and
vitess_unicode_loose_xtext.tsv (the collation keys computed by the reference
library, golang.org/x/text's collate, for random text in many scripts and
every contraction).  No Vitess runs here.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest

from shardhash.compat import _unicode_loose, vitess
from tests._support import VECTORS

LOOSE = ("unicode_loose_md5", "unicode_loose_xxhash")


def _rows(name: str) -> list[list[str]]:
    lines = [ln for ln in (VECTORS / "compat" / name).read_text(encoding="utf-8").splitlines()
             if ln and not ln.startswith("#")]
    return [ln.split("\t") for ln in lines[1:]]


def _encode(weights: list[int]) -> bytes:
    out = bytearray()
    for w in weights:
        out += w.to_bytes(2, "big") if w <= 0x7FFF else (w | 0x800000).to_bytes(3, "big")
    return bytes(out)


def test_vitess_vectors() -> None:
    rows = _rows("vitess_unicode_loose.tsv")
    kinds = {r[0] for r in rows}
    assert kinds == {"unicode_loose_md5", "unicode_loose_xxhash", "normalize"} and len(rows) == 35
    for kind, inp, want, src in rows:
        value = None if inp == "NULL" else bytes.fromhex(inp)
        if kind == "normalize":
            assert vitess.collation_key(value).hex() == want, (inp, src)
            continue
        got = vitess.keyspace_id(value, kind)
        assert got.hex() == want, (kind, inp, src)
        assert len(got) == (16 if kind == "unicode_loose_md5" else 8)
        if value is not None:  # the same key as text
            assert vitess.keyspace_id(value.decode("utf-8"), kind) == got


def test_vitess_vectors_batch_path() -> None:
    rows = [r for r in _rows("vitess_unicode_loose.tsv") if r[0] in LOOSE]
    for vindex in LOOSE:
        mine = [r for r in rows if r[0] == vindex]
        values = [None if r[1] == "NULL" else bytes.fromhex(r[1]) for r in mine]
        got = vitess.keyspace_id_array(values, vindex)
        assert got.dtype == np.uint64
        assert [f"{k:016x}" for k in got.tolist()] == [r[2][:16] for r in mine]


def test_folding_matches_x_text() -> None:
    rows = _rows("vitess_unicode_loose_xtext.tsv")
    assert len(rows) > 2000
    bad = []
    for inp, want in rows:
        text = bytes.fromhex(inp).decode("utf-8")
        if _encode(_unicode_loose.primaries(text)).hex() != want:
            bad.append(inp)
    assert not bad, f"{len(bad)} keys differ from x/text, e.g. {bad[:5]}"


def test_folded_keys_of_the_vectors() -> None:
    # loose_key (with its str.translate path for simple text) against x/text's keys
    rows = _rows("vitess_unicode_loose_xtext.tsv")
    bad = [inp for inp, want in rows
           if not bytes.fromhex(inp).endswith(b" ") and vitess.collation_key(bytes.fromhex(inp)).hex() != want]
    assert not bad, f"{len(bad)} keys differ from x/text, e.g. {bad[:5]}"


def test_translate_path_agrees_with_the_iterator() -> None:
    rng = random.Random(21)
    pools = [(0x20, 0x250), (0x370, 0x530), (0x590, 0x700), (0xE00, 0xF00), (0x1E00, 0x2000), (0x3040, 0x3100),
             (0x4E00, 0x9F00), (0xAC00, 0xD7A4), (0xFF00, 0xFFF0), (0x1F300, 0x1F400), (0x300, 0x370)]
    fast = 0
    for _ in range(3000):
        text = "".join(chr(rng.randrange(*rng.choice(pools))) for _ in range(rng.randrange(0, 10)))
        want = _encode(_unicode_loose.primaries(text.rstrip(" ")))
        assert _unicode_loose.loose_key(text.encode()) == want, [hex(ord(c)) for c in text]  # the Python rules
        fast += _unicode_loose._FAST is not None and _unicode_loose._FAST[1].search(text.rstrip(" ")) is None
    assert fast > 1000  # both paths are exercised


def test_keys_of_the_vectors_hash_as_vitess_does() -> None:
    # the keyspace id is the hash of the collation key (checked on x/text's keys, not on ours)
    rows = _rows("vitess_unicode_loose_xtext.tsv")[:300]
    for inp, key in rows:
        data = bytes.fromhex(inp)
        if data.endswith(b" "):
            continue  # Vitess trims trailing spaces before folding; x/text's key keeps them
        k = bytes.fromhex(key)
        assert vitess.keyspace_id(data, "unicode_loose_md5") == hashlib.md5(k).digest()
        assert vitess.keyspace_id(data, "unicode_loose_xxhash") == \
            vitess.keyspace_id(k, "xxhash")  # xxh64 of the key bytes, little-endian


def test_folding_rules() -> None:
    k = vitess.collation_key
    assert k("Tést") == k("TEST") == k("te\u0301st") == k("ＴＥＳＴ") == k("Test   ")
    assert k("Straße") == k("strasse") and k(" Test") != k("Test")
    assert k("") == k(None) == k("   ") == b""
    assert k(42) == k("42")
    # a Hangul syllable weighs as its jamo; an unlisted code point gets an implicit weight
    assert k("\uac00") == k("\u1100\u1161")
    assert k("\u4e00") == bytes([0x80 | 0x01, 0x4E, 0x00])           # CJK: code point + 0x10000
    assert k("\U0010fffd") == (0x10FFFD + 0x50000 | 0x800000).to_bytes(3, "big")


def test_errors() -> None:
    for vindex in LOOSE:
        with pytest.raises(ValueError, match="invalid UTF-8"):
            vitess.keyspace_id(b"ab\xff", vindex)
        with pytest.raises(ValueError, match="position 1.*invalid UTF-8"):
            vitess.keyspace_id_array(["ok", b"\xc3"], vindex)
        with pytest.raises(ValueError, match="value"):
            vitess.keyspace_id("\ud800", vindex)  # a lone surrogate has no UTF-8 form
        with pytest.raises(TypeError):
            vitess.keyspace_id(1.5, vindex)
        with pytest.raises(TypeError, match="position 2"):
            vitess.keyspace_id_array(["a", "b", 2.5], vindex)


@pytest.mark.parametrize("vindex", LOOSE)
def test_router_one_key_and_batch_agree_with_a_scan(vindex: str) -> None:
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyzéÉßüÜøçÇ ǅﬁ한글漢字"
    values: list[object] = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
                            for _ in range(400)]
    values += [None, 0, 123456789, b"bytes", "Tést", "TEST "]
    names = vitess.generate_shard_ranges(512)
    r = vitess.VitessRouter(names, vindex)
    bounds = [vitess.parse_shard_name(n) for n in names]
    want = []
    for v in values:
        ks = int.from_bytes(vitess.keyspace_id(v, vindex)[:8], "big")
        want.append(next(i for i, (lo, hi) in enumerate(bounds) if lo <= ks < hi))
    assert r.route_many(values).tolist() == want
    assert [r.route_index(v) for v in values] == want
    assert [r.route(v) for v in values] == [names[i] for i in want]
    assert r.route_many(np.array(values, dtype=object)).tolist() == want
    # case and accents never change the shard
    assert r.route("Zoë@Example.com") == r.route("zoe@example.com")


def test_router_document_round_trip() -> None:
    from shardhash.routing import load_router
    r = vitess.VitessRouter(vitess.even_shard_names(4), "unicode_loose_md5")
    r2 = load_router(r.to_json())
    assert isinstance(r2, vitess.VitessRouter) and r2.vindex == "unicode_loose_md5"
    vals = ["a", "B", "ç", "Zoë"]
    assert r2.route_many(vals).tolist() == r.route_many(vals).tolist()
