"""shardhash.compat.vitess: the unicode_loose_* folding and hashing in C
(shardhash/_core/compat/sh_unicode_loose.c) against the pure-Python rules
(compat/_unicode_loose.py, the oracle): the collation keys of the golden
inputs and of random text heavy in the hard cases, the keyspace ids of the
one-key and batch paths, and the errors of bad input.
"""

from __future__ import annotations

import hashlib
import random
import unicodedata
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardhash.compat import _native, _native_vitess, _unicode_loose, vitess
from tests._support import VECTORS

LOOSE = ("unicode_loose_md5", "unicode_loose_xxhash")


def _rows(name: str) -> list[list[str]]:
    lines = [ln for ln in (VECTORS / "compat" / name).read_text(encoding="utf-8").splitlines()
             if ln and not ln.startswith("#")]
    return [ln.split("\t") for ln in lines[1:]]


def oracle_key(value: str | bytes) -> bytes:
    """The collation key by the Python rules."""
    return _unicode_loose.loose_key(value.encode("utf-8") if isinstance(value, str) else value)


def oracle_ksid(value: str | bytes, vindex: str) -> int:
    """The first 8 bytes of the keyspace id by the Python rules, as a big-endian number."""
    key = oracle_key(value)
    if vindex == "unicode_loose_md5":
        return int.from_bytes(hashlib.md5(key).digest()[:8], "big")
    return int.from_bytes(int(_native.xxh64(key)).to_bytes(8, "little"), "big")


def native_key(value: str | bytes) -> bytes | None:
    return _native_vitess.unicode_loose_key(value)


# -- the golden inputs -----------------------------------------------------------

def test_keys_of_the_golden_inputs() -> None:
    inputs = [bytes.fromhex(r[0]) for r in _rows("vitess_unicode_loose_xtext.tsv")]
    inputs += [bytes.fromhex(r[1]) for r in _rows("vitess_unicode_loose.tsv") if r[1] != "NULL"]
    assert len(inputs) > 2000
    bad = []
    for data in inputs:
        want = oracle_key(data)
        if native_key(data) != want or native_key(data.decode("utf-8")) != want:
            bad.append(data.hex())
    assert not bad, f"{len(bad)} keys differ from the Python rules, e.g. {bad[:5]}"


def test_batch_of_the_golden_inputs() -> None:
    texts = [bytes.fromhex(r[0]).decode("utf-8") for r in _rows("vitess_unicode_loose_xtext.tsv")]
    for vindex in LOOSE:
        want = [oracle_ksid(t, vindex) for t in texts]
        assert vitess.keyspace_id_array(texts, vindex).tolist() == want
        assert vitess.keyspace_id_array([t.encode() for t in texts], vindex, threads=2).tolist() == want


# -- random text heavy in the hard cases ------------------------------------------

_STARTERS = sorted(_unicode_loose._CONTRACT)
_SUFFIX_CHARS = sorted({c for sfx in _unicode_loose._CONTRACT.values() for s in sfx for c in s})
_MARKS = [c for c in range(0x300, 0x2000) if unicodedata.combining(chr(c))] + [0x0F71, 0x0F72, 0x0F80, 0x3099]
_EDGES = [0x9FFC, 0x9FFD, 0x9FFF, 0xA000, 0x2A6DE, 0x2A6DF, 0x2B738, 0x2B739, 0x31350, 0x323AF, 0x323B0,
          0x20000, 0xF900, 0xFAFF, 0x1F600, 0xE0100, 0x10FFFD, 0x10FFFF, 0xFDFA, 0xD7A3, 0xAC00, 0xFFFD, 0]

_CHARS = st.one_of(
    st.sampled_from(_STARTERS), st.sampled_from(_SUFFIX_CHARS), st.sampled_from(_MARKS),
    st.integers(0xAC00, 0xD7A3), st.integers(0x1100, 0x11FF),                 # Hangul syllables, jamo
    st.integers(0x4E00, 0x9FFF), st.integers(0x20000, 0x323AF),               # ideographs
    st.sampled_from(_EDGES), st.integers(0x10000, 0x10FFFF),                   # astral
    st.integers(0x20, 0x7E), st.just(0x20), st.integers(0x80, 0x24F),          # ASCII, spaces, Latin
).map(chr)
_TEXT = st.lists(_CHARS, max_size=24).map("".join)


@given(_TEXT)
def test_random_text_folds_as_the_python_rules(text: str) -> None:
    want = oracle_key(text)
    assert native_key(text) == want
    assert native_key(text.encode("utf-8")) == want
    assert vitess.collation_key(text) == want
    for vindex in LOOSE:  # the one-key keyspace id, folded and hashed in C
        assert _native_vitess.unicode_loose_ksid(text, vindex == "unicode_loose_md5") == oracle_ksid(text, vindex)


@given(st.lists(st.one_of(_TEXT, _TEXT.map(str.encode), st.just("")), max_size=40),
       st.sampled_from(LOOSE), st.sampled_from([None, 1, 3]))
def test_random_batches_hash_as_the_python_rules(values: list[str | bytes], vindex: str,
                                                 threads: int | None) -> None:
    want = [oracle_ksid(v, vindex) for v in values]
    got = vitess.keyspace_id_array(values, vindex, threads=threads)
    assert got.dtype == np.uint64 and got.tolist() == want
    assert [int.from_bytes(vitess.keyspace_id(v, vindex)[:8], "big") for v in values] == want


@given(st.lists(st.one_of(_CHARS, st.integers(0xD800, 0xDFFF).map(chr)), min_size=1, max_size=12).map("".join))
def test_lone_surrogates_are_refused_as_by_the_python_rules(text: str) -> None:
    try:
        want: bytes | None = oracle_key(text)
    except UnicodeEncodeError:
        want = None
    assert native_key(text) == want  # None: left to the Python rules, which raise
    if want is None:
        assert _native_vitess.unicode_loose_ksid(text, True) is None
        for vindex in LOOSE:
            with pytest.raises(ValueError, match="value: 'utf-8' codec can't encode.*surrogates not allowed"):
                vitess.VitessRouter(["-"], vindex).route(text)


def test_strings_of_every_storage_width_and_long_runs() -> None:
    rng = random.Random(3)
    texts = ["", " ", "   ", "a  ", " a", "\u00e9\u00e9 ", "\u0100\u0301", "\U0001f600 ", "l\u00b7l", "L\u00b7L",
             "a" + "\u0301\u0316" * 40, "a" + "".join(chr(rng.choice(_MARKS)) for _ in range(200)),
             "".join(chr(rng.choice(_STARTERS + _MARKS + _SUFFIX_CHARS)) for _ in range(3000)),
             "\u0f71" * 80 + "\u0f72" * 80, "x" * 5000, "\ufdfa" * 100, "\uac01\ud7a3" * 50]
    # runs of weighted marks about colltab's 30-mark limit, a lower class at the end
    # (U+0363 and U+0E38: classes 230 and 103; U+094D: class 9): reordered, or cut there
    texts += [base + "\u0363\u0e38" * (k // 2) + "\u0363" * (k % 2) + low
              for k in range(24, 40) for base in ("a", "\u00e0") for low in ("\u094d", "\u0e38", "b")]
    for t in texts:
        assert native_key(t) == oracle_key(t), t[:20]
    for vindex in LOOSE:
        assert vitess.keyspace_id_array(texts, vindex).tolist() == [oracle_ksid(t, vindex) for t in texts]


def test_tables_bound_and_flat_tables() -> None:
    # the kernel's bound on elements per code point matches the Python tables
    flat = _unicode_loose.flat_tables()
    most = max(max(len(e) for e in _unicode_loose._EXPLICIT.values()),
               max(len(e) for d in _unicode_loose._CONTRACT.values() for e in d.values()))
    assert _native_vitess._unicode_loose_max_elems() >= most
    assert len(flat["explicit_cp"]) == len(_unicode_loose._EXPLICIT)  # type: ignore[arg-type]


# -- one key and batch, and the input types ----------------------------------------

@pytest.mark.parametrize("vindex", LOOSE)
def test_one_key_and_batch_agree_over_every_input_type(vindex: str) -> None:
    class S(str):
        pass

    values: list[Any] = ["Tést", "TEST ", b"Stra\xc3\x9fe", bytearray(b"strasse"), memoryview(b"abc"), None, 0,
                         -17, 2**63, S("caf\u00e9"), "\u4e00\u00e9\U0001f600", "", np.int64(5)]
    one = [int.from_bytes(vitess.keyspace_id(v, vindex)[:8], "big") for v in values]
    assert vitess.keyspace_id_array(values, vindex).tolist() == one
    assert vitess.keyspace_id_array(tuple(values), vindex, threads=2).tolist() == one
    assert vitess.keyspace_id_array(np.array(values, dtype=object), vindex).tolist() == one
    assert one[0] == one[1] and one[2] == one[3]
    assert one[5] == oracle_ksid(b"", vindex)  # NULL: no bytes, as the xxhash vindex reads it
    assert one[7] == oracle_ksid(b"-17", vindex) and one[9] == oracle_ksid("caf\u00e9", vindex)
    r = vitess.VitessRouter(vitess.generate_shard_ranges(64), vindex)
    assert r.route_many(values).tolist() == [r.route_index(v) for v in values]


@pytest.mark.parametrize("vindex", LOOSE)
def test_bad_values_name_their_position(vindex: str) -> None:
    good: list[Any] = ["a", "b\u00e9", "\u4e00"] * 700
    for bad, exc, msg in [(1.5, TypeError, "position 1234.*float"), (True, TypeError, "position 1234.*boolean"),
                          (object(), TypeError, "position 1234.*object"),
                          (b"ab\xff", ValueError, "position 1234: cannot normalize.*invalid UTF-8"),
                          (b"\xed\xa0\x80", ValueError, "position 1234: cannot normalize.*invalid UTF-8"),
                          ("x\ud800", ValueError, "position 1234: 'utf-8' codec can't encode.*surrogates")]:
        values = [*good]
        values[1234] = bad
        for threads in (None, 2):
            with pytest.raises(exc, match=msg):
                vitess.keyspace_id_array(values, vindex, threads=threads)
    with pytest.raises(TypeError, match="bytes or str"):
        _native_vitess.unicode_loose_key(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bytes or str"):
        _native_vitess.unicode_loose_ksid(bytearray(b"a"), True)  # type: ignore[arg-type]
    assert _native_vitess.unicode_loose_ksid(b"\xff", False) is None
    with pytest.raises(TypeError, match="list or tuple"):
        _native_vitess.unicode_loose_ksids(iter(["a"]), True, vitess._loose_sql_bytes,  # type: ignore[arg-type]
                                           lambda v, i: 0)


def test_a_refused_key_goes_to_the_fallback_and_the_batch_goes_on() -> None:
    seen: list[tuple[object, int]] = []

    def fallback(value: Any, i: int) -> int:
        seen.append((value, i))
        return 7

    values = ["a", b"\xff", "b", "\udfff", "c"]
    got = _native_vitess.unicode_loose_ksids(values, False, vitess._loose_sql_bytes, fallback)
    assert seen == [(b"\xff", 1), ("\udfff", 3)]
    want = [oracle_ksid(v, "unicode_loose_xxhash") for v in ("a", "b", "c")]
    assert got.tolist() == [want[0], 7, want[1], 7, want[2]]
    assert _native_vitess.unicode_loose_ksids([], True, vitess._loose_sql_bytes, fallback).tolist() == []


@pytest.mark.parametrize("threads", [None, 1, 2])
def test_batches_longer_than_a_block(threads: int | None) -> None:
    # one thread walks the keys a block (16,384) at a time: positions and results carry over
    words: list[Any] = ["a", "\u00e9t\u00e9", "\u6f22\u5b57", b"b\xc3\xa9", 12, None, "\uac00 "]
    values = [words[i % len(words)] for i in range(40_000)]
    want = {i: int.from_bytes(vitess.keyspace_id(w, "unicode_loose_md5")[:8], "big") for i, w in enumerate(words)}
    got = vitess.keyspace_id_array(values, "unicode_loose_md5", threads=threads).tolist()
    assert got == [want[i % len(words)] for i in range(40_000)]
    values[30_001] = b"\xc0\xaf"  # an overlong "/"
    with pytest.raises(ValueError, match="position 30001: cannot normalize"):
        vitess.keyspace_id_array(values, "unicode_loose_md5", threads=threads)
    values[30_001] = 2.5
    with pytest.raises(TypeError, match="position 30001"):
        vitess.keyspace_id_array(tuple(values), "unicode_loose_md5", threads=threads)
