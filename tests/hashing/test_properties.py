"""Property tests (Hypothesis) for the hashing API.

- scalar == batch, for every algorithm, seed, codec and input kind, and both
  equal a pure-Python oracle (codec bytes hashed by xxhash / mmh3 / FNV-1a);
- a list, a numpy array and an Arrow / polars array of the same keys agree;
- the values are the same in another process with another PYTHONHASHSEED.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import uuid
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardhash import ALGORITHMS, Hasher, KeyCodec, hash_array, hash_key
from tests._support import child_env, examples
from tests.hashing._oracles import M64, SEED_TOP, WORD


@st.composite
def hashers(draw: st.DrawFn) -> Hasher:
    algorithm = draw(st.sampled_from(ALGORITHMS))
    top = SEED_TOP[algorithm]
    seed = draw(st.one_of(st.sampled_from(sorted(s for s in {0, 1, top} if s <= top)), st.integers(0, top)))
    codec = draw(st.builds(KeyCodec, int_encoding=st.sampled_from(["le64", "decimal"]),
                           normalization=st.sampled_from([None, "NFC", "NFD", "NFKC", "NFKD"]),
                           casefold=st.booleans(), strip=st.booleans()))
    return Hasher(algorithm, seed, codec)


def oracle(h: Hasher, keys: list[Any]) -> np.ndarray:
    ref = WORD[h.algorithm]
    return np.array([ref(h.codec.encode(k), h.seed) for k in keys], dtype=np.uint64)


def scalar(h: Hasher, keys: list[Any]) -> np.ndarray:
    a = np.array([h(k) for k in keys], dtype=np.uint64)
    b = np.array([hash_key(k, h.algorithm, h.seed, h.codec) for k in keys], dtype=np.uint64)
    assert np.array_equal(a, b)
    return a


ints = st.integers(-(2**63), M64)
texts = st.text(max_size=30)  # no lone surrogates: Hypothesis leaves out category Cs by default
atoms = st.one_of(ints, texts, st.binary(max_size=30), st.uuids())
keys_st = st.recursive(atoms, lambda inner: st.lists(inner, min_size=1, max_size=3).map(tuple), max_leaves=6)


def object_array(keys: list[Any]) -> np.ndarray:
    a = np.empty(len(keys), dtype=object)
    for i, k in enumerate(keys):
        a[i] = k
    return a


@given(hashers(), st.lists(keys_st, max_size=25))
def test_mixed_keys_scalar_equals_batch_equals_oracle(h: Hasher, keys: list[Any]) -> None:
    expected = oracle(h, keys)
    assert np.array_equal(scalar(h, keys), expected)
    for container in (keys, tuple(keys), object_array(keys), object_array(keys[::-1])[::-1]):
        assert np.array_equal(h.hash_array(container), expected)
    assert np.array_equal(hash_array(keys, h.algorithm, h.seed, h.codec), expected)


INT_DTYPES: list[Any] = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def layouts(data: st.DataObject, a: np.ndarray) -> np.ndarray:
    """The same values in another byte order and/or as a strided or reversed view."""
    if data.draw(st.booleans()):
        a = a.astype(a.dtype.newbyteorder("S"))
    step = data.draw(st.sampled_from([1, 2, 3, -1, -2]))
    if step == 1:
        return a
    big = np.zeros(len(a) * abs(step), dtype=a.dtype)
    if step > 0:
        big[::step] = a
        return big[::step]
    view = big[::step]
    view[...] = a
    return view


@given(hashers(), st.lists(ints, max_size=40), st.data())
def test_integer_arrays_agree_with_lists(h: Hasher, values: list[int], data: st.DataObject) -> None:
    expected = oracle(h, values)
    assert np.array_equal(h.hash_array(values), expected)
    assert np.array_equal(scalar(h, values), expected)
    lo, hi = min(values, default=0), max(values, default=0)
    fitting = [t for t in INT_DTYPES if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max]
    for t in fitting:
        a = layouts(data, np.array(values, dtype=t))
        assert [int(x) for x in a] == values
        assert np.array_equal(h.hash_array(a), expected), (t, a.dtype, a.strides)
    if not fitting:
        # mixes of negatives and values >= 2**63: as int64 bit patterns they are
        # the same le64 keys (not the same decimal keys)
        if h.codec.int_encoding == "le64":
            a = np.array([v & M64 for v in values], dtype=np.uint64)
            assert np.array_equal(h.hash_array(a), expected)
        return
    pa = pytest.importorskip("pyarrow")
    t = fitting[0]
    patype = pa.from_numpy_dtype(np.dtype(t))
    arr = pa.array(values, patype)
    cut = data.draw(st.integers(0, len(values)))
    for obj in (arr, pa.chunked_array([arr[:cut], arr[cut:]], patype),
                pa.array([0] + values + [0], patype)[1: len(values) + 1]):
        assert np.array_equal(h.hash_array(obj), expected)
    if t in (np.int64, np.uint64, np.int32):
        pl = pytest.importorskip("polars")
        pl_dtype = {np.int64: pl.Int64, np.uint64: pl.UInt64, np.int32: pl.Int32}[t]
        assert np.array_equal(h.hash_array(pl.Series(values, dtype=pl_dtype)), expected)


@given(hashers(), st.lists(texts, max_size=30), st.data())
def test_string_arrays_agree_with_lists(h: Hasher, strings: list[str], data: st.DataObject) -> None:
    expected = oracle(h, strings)
    assert np.array_equal(h.hash_array(strings), expected)
    assert np.array_equal(scalar(h, strings), expected)
    assert np.array_equal(h.hash_array(np.array(strings, dtype=object)), expected)
    if hasattr(np, "dtypes") and hasattr(np.dtypes, "StringDType"):
        assert np.array_equal(h.hash_array(np.array(strings, dtype=np.dtypes.StringDType())), expected)
    # numpy U arrays drop trailing NUL code points, as numpy itself does on reading
    u_ok = [i for i, s in enumerate(strings) if not s.endswith("\x00")]
    if u_ok:
        u = np.array([strings[i] for i in u_ok])
        if data.draw(st.booleans()):
            u = u.astype(u.dtype.newbyteorder("S"))
        step = data.draw(st.sampled_from([1, -1]))
        assert np.array_equal(h.hash_array(u[::step]), expected[u_ok][::step])
    pa = pytest.importorskip("pyarrow")
    cut = data.draw(st.integers(0, len(strings)))
    for typ in (pa.string(), pa.large_string(), pa.string_view()):
        arr = pa.array(strings, typ)
        padded = pa.array(["pad"] + strings + ["pad"], typ)[1: len(strings) + 1]
        for obj in (arr, padded, pa.chunked_array([arr[:cut], arr[cut:]], typ)):
            assert np.array_equal(h.hash_array(obj), expected), typ
    pl = pytest.importorskip("polars")
    series = pl.concat([pl.Series(strings[:cut], dtype=pl.String), pl.Series(strings[cut:], dtype=pl.String)],
                       rechunk=False)
    assert np.array_equal(h.hash_array(series), expected)


@given(hashers(), st.lists(st.binary(max_size=30), max_size=30), st.data())
def test_bytes_arrays_agree_with_lists(h: Hasher, blobs: list[bytes], data: st.DataObject) -> None:
    expected = oracle(h, blobs)
    assert np.array_equal(h.hash_array(blobs), expected)
    assert np.array_equal(scalar(h, blobs), expected)
    s_ok = [i for i, b in enumerate(blobs) if not b.endswith(b"\x00")]
    if s_ok:
        s = np.array([blobs[i] for i in s_ok], dtype=bytes)
        assert np.array_equal(h.hash_array(s[::-1]), expected[s_ok][::-1])
    pa = pytest.importorskip("pyarrow")
    cut = data.draw(st.integers(0, len(blobs)))
    for typ in (pa.binary(), pa.large_binary(), pa.binary_view()):
        arr = pa.array(blobs, typ)
        for obj in (arr, arr[cut:], pa.chunked_array([arr[:cut], arr[cut:]], typ)):
            n = len(obj)
            assert np.array_equal(h.hash_array(obj), expected[len(blobs) - n:]), typ


# ---------------------------------------------------------------------------
# Another process, another PYTHONHASHSEED

CHILD = r"""
import pickle, sys
import shardhash
keys, specs = pickle.loads(sys.stdin.buffer.read())
out = []
for spec in specs:
    h = shardhash.Hasher.from_dict(spec)
    out.append(([h(k) for k in keys], h.hash_array(keys).tolist()))
sys.stdout.buffer.write(pickle.dumps(out))
"""


def run_child(keys: list[Any], specs: list[dict[str, Any]], hashseed: str) -> Any:
    proc = subprocess.run([sys.executable, "-c", CHILD], input=pickle.dumps((keys, specs)),
                          capture_output=True, env=child_env(PYTHONHASHSEED=hashseed), timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return pickle.loads(proc.stdout)


@settings(max_examples=examples(4))
@given(st.lists(keys_st, min_size=1, max_size=40), st.lists(hashers(), min_size=1, max_size=4),
       st.sampled_from(["0", "1", "12345", "4294967295"]))
def test_same_values_in_another_process(keys: list[Any], hs: list[Hasher], hashseed: str) -> None:
    specs = [h.to_dict() for h in hs]
    here = [([h(k) for k in keys], h.hash_array(keys).tolist()) for h in hs]
    assert run_child(keys, specs, hashseed) == here
    for (one, many), h in zip(here, hs):
        assert one == many == oracle(h, keys).tolist()


def test_fixed_values_in_processes_with_different_hash_seeds() -> None:
    # A fixed key set, two child processes with different PYTHONHASHSEED.
    keys: list[Any] = [0, -1, 2**63, "user-42", "Straße", b"\x00\xff", uuid.UUID(int=7), ("t", 1, ("n", b""))]
    specs = [Hasher(a, SEED_TOP[a] // 3, KeyCodec(casefold=True)).to_dict() for a in ALGORITHMS]
    a = run_child(keys, specs, "1")
    b = run_child(keys, specs, "2")
    assert a == b
    for spec, (one, many) in zip(specs, a):
        h = Hasher.from_dict(spec)
        assert one == many == oracle(h, keys).tolist()
