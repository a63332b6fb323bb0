"""hash_key / Hasher / hash_array over every accepted input kind.

Each batch result is compared key by key with the scalar path (hash_key on
the same key) and with a pure-Python oracle: the key codec's bytes hashed by
the reference packages (``xxhash``, ``mmh3``) or a few-line FNV-1a, widened
to 64 bits the way the array API documents it (32-bit algorithms
zero-extended, murmur3_128 its low 64-bit word h1).

The raw hash functions themselves are pinned by test_vectors.py and
test_differential.py; here the subject is the plumbing around them.
"""

from __future__ import annotations

import copy
import functools
import pickle
import uuid
from collections.abc import Callable
from typing import Any

import mmh3
import numpy as np
import pytest

import shardhash
from shardhash import ALGORITHMS, Hasher, KeyCodec, hash_array, hash_bytes, hash_key
from tests._support import ill_typed
from tests.hashing._oracles import M32, M64, WORD

# A non-trivial seed per algorithm, at the edge of its seed width where it has one.
SEEDS = {"xxh3_64": M64, "xxh64": (1 << 63) + 5, "xxh32": M32, "murmur3_32": 7,
         "murmur3_128": M32, "fnv1a_32": 0, "fnv1a_64": 0}

CODECS = {
    "default": KeyCodec(),
    "decimal": KeyCodec(int_encoding="decimal"),
    "fold": KeyCodec(normalization="NFKC", casefold=True, strip=True),
}


def oracle(keys: list[Any], algorithm: str, seed: int, codec: KeyCodec) -> np.ndarray:
    ref = WORD[algorithm]
    return np.array([ref(codec.encode(k), seed) for k in keys], dtype=np.uint64)


def check_all(obj: Any, pykeys: list[Any], codec: KeyCodec) -> None:
    """obj hashed in batch == scalar path on pykeys == oracle, every algorithm."""
    for algorithm in ALGORITHMS:
        seed = SEEDS[algorithm]
        expected = oracle(pykeys, algorithm, seed, codec)
        got = hash_array(obj, algorithm, seed, codec=codec)
        assert got.dtype == np.uint64 and got.shape == (len(pykeys),)
        bad = np.flatnonzero(got != expected)
        assert bad.size == 0, f"{algorithm}: batch differs from the oracle at {bad[:5]}"
        scalar = np.array([hash_key(k, algorithm, seed, codec) for k in pykeys], dtype=np.uint64)
        bad = np.flatnonzero(scalar != expected)
        assert bad.size == 0, f"{algorithm}: scalar differs from the oracle at {bad[:5]}"
        via_hasher = Hasher(algorithm, seed, codec).hash_array(obj)
        assert np.array_equal(via_hasher, expected), algorithm


# ---------------------------------------------------------------------------
# Input data

RNG = np.random.default_rng(20240611)

STRINGS = [
    "", "a", "abc", "user-42", "héllo", "Straße", "STRASSE", "ﬁle", "Å", "Å",
    "ΣΑΣ", "İstanbul", "ı", "  padded\t", "日本語テキスト", "𝄞 clef", "😀" * 5,
    "x" * 12, "y" * 13, "z" * 100, "long-" * 60,  # around view inlining and xxh3's 240-byte split
] + [f"k{i}-{'é' * (i % 4)}" for i in range(40)]

BYTES = [b"", b"\x00", b"a\x00b", b"abc", b"\xff\xfe", b"q" * 13, b"r" * 300] + [
    bytes(RNG.integers(0, 256, int(n), dtype=np.uint8)) for n in RNG.integers(1, 40, 30)]

INT_DTYPES = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]


def int_values(dt: str) -> np.ndarray:
    info = np.iinfo(np.dtype(dt))
    v = RNG.integers(info.min, info.max, 61, dtype=np.dtype(dt), endpoint=True)
    edges = [info.min, info.max, 0, 1] + ([-1] if info.min < 0 else [])
    v[: len(edges)] = edges
    return v


INT_CASES: dict[str, Callable[[], tuple[Any, list[Any]]]] = {}
for _dt in INT_DTYPES:
    def _make(dt: str = _dt) -> dict[str, Callable[[], tuple[Any, list[Any]]]]:
        def contiguous() -> tuple[Any, list[Any]]:
            v = int_values(dt)
            return v, [int(x) for x in v]

        def swapped() -> tuple[Any, list[Any]]:
            v = int_values(dt)
            sw = v.astype(v.dtype.newbyteorder("S"))
            assert not sw.dtype.isnative or sw.dtype.itemsize == 1
            return sw, [int(x) for x in v]

        def strided() -> tuple[Any, list[Any]]:
            v = int_values(dt)[::3]
            assert not v.flags.c_contiguous
            return v, [int(x) for x in v]

        def reversed_() -> tuple[Any, list[Any]]:
            v = int_values(dt)[::-1]
            return v, [int(x) for x in v]

        def swapped_reversed() -> tuple[Any, list[Any]]:
            v = int_values(dt)
            return v.astype(v.dtype.newbyteorder("S"))[::-2], [int(x) for x in v[::-2]]

        return {f"np-{dt}": contiguous, f"np-{dt}-swapped": swapped, f"np-{dt}-strided": strided,
                f"np-{dt}-reversed": reversed_, f"np-{dt}-swapped-reversed": swapped_reversed}
    INT_CASES.update(_make())

PY_INTS = [0, 1, -1, 2**63 - 1, -(2**63), 2**63, M64, 12345, -98765, 2**32]


def unaligned(a: np.ndarray) -> np.ndarray:
    """The same values in a buffer that starts one byte off any alignment."""
    u = np.frombuffer(b"\x00" + a.tobytes(), dtype=a.dtype, offset=1)
    assert a.dtype.itemsize == 1 or not u.flags.aligned
    return u


def _unaligned_case(dt: str, step: int) -> tuple[Any, list[Any]]:
    v = int_values(dt.lstrip("<>"))
    return unaligned(v.astype(dt))[::step], [int(x) for x in v[::step]]


for _dt in ["i8", ">i8", "u8", "i4", ">u2"]:
    INT_CASES[f"np-{_dt}-unaligned"] = functools.partial(_unaligned_case, _dt, 1)
    INT_CASES[f"np-{_dt}-unaligned-reversed"] = functools.partial(_unaligned_case, _dt, -3)
INT_CASES["np-i8-broadcast"] = lambda: (np.broadcast_to(np.array([-7], ">i8"), (40,)), [-7] * 40)


def _u_array() -> tuple[Any, list[Any]]:
    a = np.array(STRINGS)
    assert a.dtype.kind == "U"
    return a, a.tolist()


def _s_array() -> tuple[Any, list[Any]]:
    # numpy strips trailing NULs on the way out, and so must the hash.
    a = np.array([b"abc", b"a\x00b", b"", b"xyz\x00\x00", b"\x00", b"\x00\x00q", b"full-width"],
                 dtype="S10")
    return a, a.tolist()


def _objects() -> tuple[Any, list[Any]]:
    keys = ["a", b"b", 5, -1, M64, uuid.UUID(int=3), uuid.UUID("12345678-1234-5678-1234-567812345678"),
            ("tenant", 7), ("ab", "c"), ("a", "bc"), (("nested", b"x"), 2**63), "Straße", "𝄞"]
    a = np.empty(len(keys), dtype=object)
    for i, k in enumerate(keys):
        a[i] = k
    return a, keys


def _pd() -> Any:
    return pytest.importorskip("pandas")


def _pa() -> Any:
    return pytest.importorskip("pyarrow")


def _pl() -> Any:
    return pytest.importorskip("polars")


def _string_dtype() -> Any:
    if not hasattr(np, "dtypes") or not hasattr(np.dtypes, "StringDType"):
        pytest.skip("numpy without StringDType")
    return np.dtypes.StringDType()


I64 = [int(x) for x in int_values("i8")]
U64 = [int(x) for x in int_values("u8")]
I32 = [int(x) for x in int_values("i4")]

CASES: dict[str, Callable[[], tuple[Any, list[Any]]]] = {
    **INT_CASES,
    "list-ints": lambda: (list(PY_INTS), PY_INTS),
    "tuple-ints": lambda: (tuple(PY_INTS), PY_INTS),
    "list-strings": lambda: (list(STRINGS), STRINGS),
    "tuple-mixed": lambda: (("a", 1, b"c", uuid.UUID(int=9), ("x", 2)), ["a", 1, b"c", uuid.UUID(int=9), ("x", 2)]),
    "list-bytes": lambda: (list(BYTES), BYTES),
    "np-U": _u_array,
    "np-U-swapped": lambda: (_u_array()[0].astype(_u_array()[0].dtype.newbyteorder("S")), STRINGS),
    "np-U-strided": lambda: (_u_array()[0][::2], STRINGS[::2]),
    "np-U-reversed": lambda: (_u_array()[0][::-1], STRINGS[::-1]),
    "np-U-unaligned": lambda: (unaligned(_u_array()[0]), STRINGS),
    "np-U-broadcast": lambda: (np.broadcast_to(np.array(["𝄞 é"]), (9,)), ["𝄞 é"] * 9),
    "np-S": _s_array,
    "np-S-reversed": lambda: (_s_array()[0][::-2], _s_array()[1][::-2]),
    "np-T": lambda: (np.array(STRINGS, dtype=_string_dtype()), STRINGS),
    "np-T-strided": lambda: (np.array(STRINGS, dtype=_string_dtype())[1::3], STRINGS[1::3]),
    "np-object": _objects,
    "np-object-strided": lambda: (_objects()[0][::-2], _objects()[1][::-2]),
    "np-object-str": lambda: (np.array(STRINGS, dtype=object), STRINGS),
    "np-object-int": lambda: (np.array(PY_INTS, dtype=object), PY_INTS),
    "pd-int64": lambda: (_pd().Series(np.array(I64, dtype=np.int64)), I64),
    "pd-uint64": lambda: (_pd().Series(np.array(U64, dtype=np.uint64)), U64),
    "pd-object": lambda: (_pd().Series(["a", b"b", 3, ("t", 1)], dtype=object), ["a", b"b", 3, ("t", 1)]),
    "pd-str": lambda: (_pd().Series(STRINGS, dtype="str"), STRINGS),
    "pd-string-python": lambda: (_pd().Series(STRINGS, dtype="string[python]"), STRINGS),
    "pd-string-pyarrow": lambda: (_pa() and _pd().Series(STRINGS, dtype="string[pyarrow]"), STRINGS),
    "pd-Int64": lambda: (_pd().Series(I64, dtype="Int64"), I64),
    "pd-int64-pyarrow": lambda: (_pa() and _pd().Series(I64, dtype="int64[pyarrow]"), I64),
    "pd-sliced": lambda: (_pd().Series(STRINGS, dtype="string[pyarrow]").iloc[3:20], STRINGS[3:20]),
    "pa-int64": lambda: (_pa().array(I64, _pa().int64()), I64),
    "pa-uint64": lambda: (_pa().array(U64, _pa().uint64()), U64),
    "pa-int32": lambda: (_pa().array(I32, _pa().int32()), I32),
    "pa-int8": lambda: (_pa().array([-128, -1, 0, 1, 127], _pa().int8()), [-128, -1, 0, 1, 127]),
    "pa-uint16": lambda: (_pa().array([0, 1, 65535], _pa().uint16()), [0, 1, 65535]),
    "pa-int64-sliced": lambda: (_pa().array(I64, _pa().int64())[7:40], I64[7:40]),
    "pa-int32-sliced": lambda: (_pa().array(I32, _pa().int32())[5:], I32[5:]),
    "pa-uint64-chunked": lambda: (_pa().chunked_array([U64[:10], [], U64[10:]], _pa().uint64()), U64),
    "pa-int64-chunked-sliced": lambda: (_pa().chunked_array([I64[:10], I64[10:]], _pa().int64())[4:30], I64[4:30]),
}
for _t in ("string", "large_string", "string_view"):
    def _str_cases(t: str = _t) -> dict[str, Callable[[], tuple[Any, list[Any]]]]:
        def typ() -> Any:
            return getattr(_pa(), t)()
        return {
            f"pa-{t}": lambda: (_pa().array(STRINGS, typ()), STRINGS),
            f"pa-{t}-sliced": lambda: (_pa().array(STRINGS, typ())[3:27], STRINGS[3:27]),
            f"pa-{t}-chunked": lambda: (_pa().chunked_array(
                [STRINGS[:5], [], STRINGS[5:]], typ()), STRINGS),
            f"pa-{t}-chunked-sliced": lambda: (_pa().chunked_array(
                [STRINGS[:5], STRINGS[5:]], typ())[2:40], STRINGS[2:40]),
        }
    CASES.update(_str_cases())
for _t in ("binary", "large_binary", "binary_view"):
    def _bin_cases(t: str = _t) -> dict[str, Callable[[], tuple[Any, list[Any]]]]:
        def typ() -> Any:
            return getattr(_pa(), t)()
        return {
            f"pa-{t}": lambda: (_pa().array(BYTES, typ()), BYTES),
            f"pa-{t}-sliced": lambda: (_pa().array(BYTES, typ())[2:30], BYTES[2:30]),
            f"pa-{t}-chunked": lambda: (_pa().chunked_array([BYTES[:4], BYTES[4:]], typ()), BYTES),
        }
    CASES.update(_bin_cases())
def _multi_buffer_views(binary: bool) -> tuple[Any, list[Any]]:
    # Views pointing into more than one variadic data buffer.
    pa = _pa()
    half = len(STRINGS) // 2
    parts: list[Any] = [STRINGS[:half], STRINGS[half:]]
    if binary:
        parts = [[x.encode() for x in p] for p in parts]
    typ = pa.binary_view() if binary else pa.string_view()
    arr = pa.concat_arrays([pa.array(p, typ) for p in parts])
    assert len(arr.buffers()) > 3
    return arr[3:], (parts[0] + parts[1])[3:]


CASES.update({
    "pa-string_view-multibuffer": lambda: _multi_buffer_views(False),
    "pa-binary_view-multibuffer": lambda: _multi_buffer_views(True),
    "pl-int64": lambda: (_pl().Series(I64, dtype=_pl().Int64), I64),
    "pl-uint64": lambda: (_pl().Series(U64, dtype=_pl().UInt64), U64),
    "pl-int32": lambda: (_pl().Series(I32, dtype=_pl().Int32), I32),
    "pl-str": lambda: (_pl().Series(STRINGS), STRINGS),
    "pl-str-sliced": lambda: (_pl().Series(STRINGS).slice(4, 30), STRINGS[4:34]),
    "pl-binary": lambda: (_pl().Series(BYTES, dtype=_pl().Binary), BYTES),
    "pl-str-unrechunked": lambda: (_pl_unrechunked(STRINGS), STRINGS),
    "pl-int-unrechunked": lambda: (_pl_unrechunked(I64), I64),
})


def _pl_unrechunked(values: list[Any]) -> Any:
    pl = _pl()
    s = pl.concat([pl.Series(values[:7]), pl.Series(values[7:20]), pl.Series(values[20:])], rechunk=False)
    assert s.n_chunks() == 3
    return s


@pytest.mark.parametrize("codec_name", list(CODECS))
@pytest.mark.parametrize("case", list(CASES))
def test_batch_equals_scalar_and_oracle(case: str, codec_name: str) -> None:
    obj, pykeys = CASES[case]()
    check_all(obj, pykeys, CODECS[codec_name])


def test_integer_hashes_by_value_whatever_the_width() -> None:
    # The same small values in every width and byte order give the same hashes
    # (and negative values hash like the Python int, not like its unsigned pattern).
    vals = [0, 1, 2, 100, 127]
    ref = hash_array(vals)
    for dt in INT_DTYPES:
        for typ in (np.dtype(dt).newbyteorder("<"), np.dtype(dt).newbyteorder(">")):
            a = np.array(vals, dtype=typ)
            assert np.array_equal(hash_array(a), ref), typ
    neg = [-1, -2, -128]
    ref = hash_array(neg)
    for dt in ["i1", "i2", "i4", "i8"]:
        assert np.array_equal(hash_array(np.array(neg, dtype=dt)), ref), dt
    # le64: -1 and 2**64-1 are the same key; decimal: they differ.
    assert hash_key(-1) == hash_key(M64) == int(hash_array(np.array([M64], dtype="u8"))[0])
    dec = KeyCodec(int_encoding="decimal")
    assert hash_key(-1, codec=dec) != hash_key(M64, codec=dec)
    assert hash_array(np.array([-1], "i8"), codec=dec)[0] != hash_array(np.array([M64], "u8"), codec=dec)[0]


def test_s_array_strips_trailing_nuls_only() -> None:
    a = np.array([b"ab", b"ab\x00", b"\x00ab", b"a\x00b"], dtype="S5")
    h = hash_array(a)
    assert h[0] == h[1] == hash_key(b"ab")
    assert h[2] == hash_key(b"\x00ab") and h[3] == hash_key(b"a\x00b")


def test_str_bytes_and_uuid_spellings_agree() -> None:
    u = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    assert hash_key(u) == hash_key(u.bytes) == hash_key(bytearray(u.bytes)) == hash_key(memoryview(u.bytes))
    assert hash_key("héllo") == hash_key("héllo".encode()) == hash_key(np.str_("héllo"))
    assert hash_key(np.int16(-5)) == hash_key(-5) == hash_key(np.uint64(M64 - 4))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_out_is_filled_and_returned(algorithm: str) -> None:
    keys = np.arange(-50, 50, dtype=np.int64)
    expected = hash_array(keys, algorithm)
    out = np.full(100, 7, dtype=np.uint64)
    got = hash_array(keys, algorithm, out=out)
    assert got is out and np.array_equal(out, expected)
    # reused for another input kind of the same length
    strs = [str(k) for k in range(100)]
    got = Hasher(algorithm).hash_array(strs, out=out)
    assert got is out and np.array_equal(out, hash_array(strs, algorithm))


def test_out_with_arrow_chunks_and_transforming_codec() -> None:
    pa = _pa()
    codec = CODECS["fold"]
    arr = pa.chunked_array([STRINGS[:10], STRINGS[10:]], pa.string())
    out = np.zeros(len(STRINGS), dtype=np.uint64)
    assert hash_array(arr, codec=codec, out=out) is out
    assert np.array_equal(out, oracle(STRINGS, "xxh3_64", 0, codec))


@pytest.mark.parametrize("algorithm", ["xxh3_64", "murmur3_32", "fnv1a_64"])
def test_threads_give_identical_results(algorithm: str) -> None:
    pa = _pa()
    n = 150_000  # above the size where threads=None goes parallel
    ints = RNG.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    strs = [f"id-{x:x}" for x in ints[:20_000]]
    inputs = [ints, ints[::-3], ints.astype(np.int16), np.array(strs), pa.array(strs),
              pa.array(strs, pa.string_view()), np.array([s.encode() for s in strs])]
    for keys in inputs:
        one = hash_array(keys, algorithm, threads=1)
        for t in (2, 3, None):
            assert np.array_equal(hash_array(keys, algorithm, threads=t), one), (type(keys), t)


EMPTY_NUMPY = ["i1", "i8", "u8", ">i4", "f8", "f4", "?", "c16", "U3", "S3", "O", "M8[s]", "m8[s]", "V4"]


@pytest.mark.parametrize("dtype", EMPTY_NUMPY)
def test_empty_numpy_array_of_any_dtype(dtype: str) -> None:
    got = hash_array(np.empty(0, dtype=dtype))
    assert got.dtype == np.uint64 and got.shape == (0,)


def test_empty_inputs_of_every_kind() -> None:
    empties: list[Any] = [[], (), np.array([]), range(0)]
    if hasattr(np, "dtypes") and hasattr(np.dtypes, "StringDType"):
        empties.append(np.empty(0, dtype=np.dtypes.StringDType()))
    pa = _pa()
    empties += [pa.array([], pa.int64()), pa.array([], pa.string()), pa.array([], pa.string_view()),
                pa.chunked_array([], pa.int64()), pa.array(["a"])[1:]]
    pd = _pd()
    empties += [pd.Series([], dtype=object), pd.Series([], dtype="int64"), pd.Series([], dtype="str"),
                pd.Series([], dtype="Int64"), pd.Series([], dtype=float)]
    pl = _pl()
    empties += [pl.Series([], dtype=pl.Int64), pl.Series([], dtype=pl.String)]
    for e in empties:
        got = hash_array(e)
        assert got.dtype == np.uint64 and got.shape == (0,), type(e)
        out = np.empty(0, np.uint64)
        assert hash_array(e, out=out) is out


def test_iterables_and_indexes() -> None:
    keys = [3, 1, 4, 1, 5]
    ref = hash_array(keys)
    assert np.array_equal(hash_array(iter(keys)), ref)
    assert np.array_equal(hash_array(k for k in keys), ref)
    assert np.array_equal(hash_array(range(5)), hash_array([0, 1, 2, 3, 4]))
    pd = _pd()
    assert np.array_equal(hash_array(pd.Index(keys)), ref)


# ---------------------------------------------------------------------------
# Regressions for fixed bugs

@pytest.mark.parametrize("codec_name", ["fold", "decimal"])
def test_regression_arrow_and_polars_strings_with_transforming_codec(codec_name: str) -> None:
    # Arrow and polars strings once raised NotImplementedError unless the codec
    # hashed strings as plain UTF-8.
    codec = CODECS[codec_name]
    keys = ["  Alice@Example.COM ", "alice@example.com", "STRASSE", "straße", "ﬁ", "fi"]
    expected = oracle(keys, "xxh3_64", 0, codec)
    pa = _pa()
    pl = _pl()
    for obj in (pa.array(keys), pa.array(keys, pa.large_string()), pa.array(keys, pa.string_view()),
                pa.chunked_array([keys[:2], keys[2:]]), pl.Series(keys)):
        assert np.array_equal(hash_array(obj, codec=codec), expected), type(obj)
    if codec_name == "fold":
        h = hash_array(pa.array(keys), codec=codec)
        assert h[0] == h[1] and h[2] == h[3] and h[4] == h[5]


def test_regression_pandas_extension_dtypes_go_through_arrow(monkeypatch: pytest.MonkeyPatch) -> None:
    # Extension dtypes are exported through the Arrow C stream, not converted
    # to Python objects: make the object route fail loudly.
    pd = _pd()
    _pa()
    series = [pd.Series(STRINGS, dtype="str"), pd.Series(STRINGS, dtype="string[pyarrow]"),
              pd.Series(I64, dtype="Int64"), pd.Series(I64, dtype="int64[pyarrow]")]
    expected = [hash_array(STRINGS), hash_array(STRINGS), hash_array(I64), hash_array(I64)]

    def no_to_numpy(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Series.to_numpy should not be used for an extension dtype")

    monkeypatch.setattr(pd.Series, "to_numpy", no_to_numpy)
    for s, e in zip(series, expected):
        assert np.array_equal(hash_array(s), e), s.dtype


# ---------------------------------------------------------------------------
# hash_bytes, Hasher and KeyCodec objects

@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_hash_bytes_natural_width(algorithm: str) -> None:
    bits = {"xxh3_64": 64, "xxh64": 64, "xxh32": 32, "murmur3_32": 32, "murmur3_128": 128,
            "fnv1a_32": 32, "fnv1a_64": 64}[algorithm]
    seed = SEEDS[algorithm]
    tops = []
    for i in range(200):
        data = b"natural-width-%d" % i
        v = hash_bytes(data, algorithm, seed)
        assert isinstance(v, int) and 0 <= v < (1 << bits)
        tops.append(v >> (bits - 8))
        # the array value is the low 64 bits (h1 for murmur3_128), zero-extended
        assert hash_key(data, algorithm, seed) == v & M64
        if algorithm == "murmur3_128":
            assert v == mmh3.hash128(data, seed, x64arch=True, signed=False)
    # the top byte is used: the width is the natural one, not narrower
    assert max(tops) >= 128
    assert hash_bytes(bytearray(b"abc"), algorithm, seed) == hash_bytes(b"abc", algorithm, seed)
    assert hash_bytes(memoryview(b"xabc")[1:], algorithm, seed) == hash_bytes(b"abc", algorithm, seed)
    # any contiguous buffer is accepted at run time (the stub names only bytes/bytearray/memoryview)
    arr = np.frombuffer(b"abcd", np.uint8)
    assert hash_bytes(ill_typed(arr), algorithm, seed) == hash_bytes(b"abcd", algorithm, seed)


SPECS = [Hasher(), Hasher("xxh32", 5), Hasher("murmur3_128", M32, KeyCodec(casefold=True)),
         Hasher("fnv1a_64", 0, KeyCodec(int_encoding="decimal", normalization="NFC", strip=True))]


@pytest.mark.parametrize("h", SPECS, ids=repr)
def test_hasher_documents_equality_pickle(h: Hasher) -> None:
    doc = h.to_dict()
    assert doc["format"] == "shardhash.hasher/1"
    assert doc["algorithm"] == h.algorithm and doc["seed"] == h.seed and doc["codec"] == h.codec.to_dict()
    back = Hasher.from_dict(doc)
    assert back == h and hash(back) == hash(h) and not (back != h)
    assert back(("k", 1)) == h(("k", 1))
    for clone in (pickle.loads(pickle.dumps(h)), copy.copy(h), copy.deepcopy(h)):
        assert clone == h and clone("abc") == h("abc")
    r = repr(h)
    assert r.startswith("Hasher(") and repr(h.algorithm) in r
    assert eval(r, {"Hasher": Hasher, "KeyCodec": KeyCodec}) == h
    others = [s for s in SPECS if s is not h]
    assert all(o != h for o in others)
    assert len({*SPECS}) == len(SPECS)
    assert h != doc and h.__eq__(doc) is NotImplemented
    with pytest.raises(AttributeError):
        h.seed = 3


def test_hasher_differs_by_each_field() -> None:
    base = Hasher("xxh64", 1)
    assert base != Hasher("xxh3_64", 1)
    assert base != Hasher("xxh64", 2)
    assert base != Hasher("xxh64", 1, KeyCodec(strip=True))
    assert base == Hasher("xxh64", 1, KeyCodec())
    assert repr(Hasher()) == "Hasher('xxh3_64')"
    assert "seed=2" in repr(Hasher("xxh64", 2)) and "strip=True" in repr(Hasher(codec=KeyCodec(strip=True)))


CODEC_SPECS = [KeyCodec(), KeyCodec(int_encoding="decimal"), KeyCodec(normalization="NFKC"),
               KeyCodec(casefold=True), KeyCodec(strip=True),
               KeyCodec(int_encoding="decimal", normalization="NFD", casefold=True, strip=True)]


@pytest.mark.parametrize("c", CODEC_SPECS, ids=repr)
def test_codec_documents_equality_pickle(c: KeyCodec) -> None:
    doc = c.to_dict()
    assert doc == {"format": "shardhash.codec/1", "int_encoding": c.int_encoding,
                   "normalization": c.normalization, "casefold": c.casefold, "strip": c.strip}
    back = KeyCodec.from_dict(doc)
    assert back == c and hash(back) == hash(c)
    assert pickle.loads(pickle.dumps(c)) == c
    assert eval(repr(c), {"KeyCodec": KeyCodec}) == c
    assert sum(o == c for o in CODEC_SPECS) == 1
    assert len(set(CODEC_SPECS)) == len(CODEC_SPECS)


def test_public_names() -> None:
    assert shardhash.ALGORITHMS == ("xxh3_64", "xxh64", "xxh32", "murmur3_32", "murmur3_128",
                                    "fnv1a_32", "fnv1a_64")
    for name in ("ALGORITHMS", "Hasher", "KeyCodec", "hash_array", "hash_bytes", "hash_key"):
        assert getattr(shardhash, name) is getattr(shardhash.hashing, name)
    h = Hasher("xxh64", 3, KeyCodec(strip=True))
    assert h.encode(" a ") == b"a" and h(" a ") == hash_key("a", "xxh64", 3)


@pytest.mark.parametrize("layout", ["reversed", "shifted-up", "shifted-down", "bytes-view"])
def test_regression_out_overlapping_the_keys(layout: str) -> None:
    # out= sharing memory with the keys once overwrote keys before they were read.
    buf = np.arange(64, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    keys: Any
    if layout == "reversed":
        keys, out = buf[::-1], buf
    elif layout == "shifted-up":
        keys, out = buf[:-1], buf[1:]
    elif layout == "shifted-down":
        keys, out = buf[1:], buf[:-1]
    else:
        keys, out = buf.view("S8")[::-1], buf
    expected = hash_array(keys.copy())
    got = hash_array(keys, out=out)
    assert got is out and np.array_equal(got, expected)


def test_out_identical_to_the_keys_is_fine() -> None:
    # Exactly the same memory, element for element: each key is read before its slot is written.
    buf = np.arange(64, dtype=np.uint64)
    expected = hash_array(buf.copy())
    assert np.array_equal(hash_array(buf, out=buf), expected)


def test_regression_str_subclass_hashes_its_characters() -> None:
    # The codec once hashed str(value), i.e. whatever a subclass's __str__ said.
    class Tag(str):
        def __str__(self) -> str:
            return "something else"

    for codec in CODECS.values():
        assert hash_key(Tag("abc"), codec=codec) == hash_key("abc", codec=codec)
        assert np.array_equal(hash_array([Tag("abc"), Tag(" X ")], codec=codec),
                              hash_array(["abc", " X "], codec=codec))


def test_pandas_extension_dtypes_without_arrow_export(monkeypatch: pytest.MonkeyPatch) -> None:
    # pyarrow is optional: when the Arrow export is unavailable, extension
    # dtypes fall back to their numpy form and still hash by value.
    pd = _pd()

    def no_arrow(*args: Any, **kwargs: Any) -> Any:
        raise ImportError("pyarrow is not installed")

    monkeypatch.setattr(pd.Series, "__arrow_c_stream__", no_arrow, raising=False)
    assert np.array_equal(hash_array(pd.Series(I64, dtype="Int64")), hash_array(I64))
    assert np.array_equal(hash_array(pd.Series(U64, dtype="UInt64")), hash_array(U64))
    for dtype in ("str", "string[python]"):
        assert np.array_equal(hash_array(pd.Series(STRINGS, dtype=dtype)), hash_array(STRINGS))
        with pytest.raises((TypeError, ValueError), match=r"^key at position 1: "):
            hash_array(pd.Series(["a", None, "b"], dtype=dtype))


@pytest.mark.parametrize("kind", ["pyarrow", "pandas", "polars"])
def test_out_overlapping_zero_copy_columnar_keys(kind: str) -> None:
    buf = np.arange(64, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    expected = hash_array(buf[:-1].copy())
    keys: Any
    if kind == "pyarrow":
        keys = _pa().array(buf[:-1])
    elif kind == "pandas":
        keys = _pd().Series(buf[:-1], copy=False)
    else:
        keys = _pl().Series(buf[:-1])
    assert np.shares_memory(np.asarray(keys), buf)  # really zero-copy
    got = hash_array(keys, out=buf[1:])
    assert np.array_equal(got, expected)
