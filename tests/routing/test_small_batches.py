"""Small batches: route_many and hash_array on a few keys take a one-pass
path (no thread pool, no hash temporary); their answers must be the large
path's, on both sides of every threshold (route_many: 64 keys; hash_array
on int64/uint64 arrays: 4096 keys), for lists, tuples and numpy arrays of
every layout, and for every router and hasher."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from shardhash import Hasher
from shardhash.routing import JumpRouter, MementoRouter, RingRouter, Router
from tests._router_cases import ALL_ROUTERS, HASH_ROUTERS

SIZES = [0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100]


def _int_keys(n: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    small = rng.integers(-(2**30) + 1, 2**30, size=n).tolist()   # one-digit ints (the inline path)
    # some big and negative ints (beyond one digit: the Hasher decides)
    return [k if i % 5 else k * 2**33 for i, k in enumerate(small)]


def _str_keys(n: int) -> list[str]:
    return [f"user:{i}" if i % 7 else f"ключ-{i}" for i in range(n)]   # ASCII and non-ASCII


def _one_by_one(r: Router, keys: Any) -> np.ndarray:
    return np.array([r.route_index(k) for k in keys], dtype=np.int32)


@pytest.mark.parametrize("name", sorted(HASH_ROUTERS))
@pytest.mark.parametrize("n", SIZES)
def test_route_many_small_equals_scalar_and_hashes(name: str, n: int) -> None:
    r = HASH_ROUTERS[name]()
    for keys in (_int_keys(n, n), _str_keys(n), [f"k{i}" for i in range(n)], list(range(n))):
        want = _one_by_one(r, keys)
        big = r.route_hashes(r.hasher.hash_array(keys))   # the general path, in two steps
        assert np.array_equal(big, want)
        for form in (keys, tuple(keys)):
            got = r.route_many(form)
            assert got.dtype == np.int32 and got.shape == (n,)
            assert np.array_equal(got, want), (name, n)
        for dt in (np.int64, np.uint64) if r.key_prefix is None else ():  # prefix routers take tuples
            a = np.arange(n, dtype=dt) * dt(2**40 + 7) if n else np.arange(0, dtype=dt)
            want_a = _one_by_one(r, [int(x) for x in a])
            assert np.array_equal(r.route_many(a), want_a)
            assert np.array_equal(r.route_many(a, threads=1), want_a)   # the general path
            rev = a[::-1]                                                  # negative stride
            assert np.array_equal(r.route_many(rev), want_a[::-1])
            if n:
                two = np.repeat(a, 2)[::2]                                 # stride 16
                assert np.array_equal(r.route_many(two), want_a)
                ro = a.copy()
                ro.setflags(write=False)
                assert np.array_equal(r.route_many(ro), want_a)
                sw = a.astype(a.dtype.newbyteorder(">"))                  # non-native order
                assert np.array_equal(r.route_many(sw), want_a)


# The key kinds each router takes (the others: int and str); every other kind
# must be refused by route_many as by route_index.
_KEY_KINDS = {"range_int": ("int",), "watermark": ("int",), "range_str": ("str",)}


def _keys_of_kind(kind: str, n: int) -> list[Any]:
    return list(range(1, n + 1)) if kind == "int" else [f"user:{i:04d}" for i in range(n)]


@pytest.mark.parametrize("name", sorted(ALL_ROUTERS))
def test_route_many_small_every_router(name: str) -> None:
    r = ALL_ROUTERS[name]()
    takes = _KEY_KINDS.get(name, ("int", "str"))
    for n in (1, 16, 64, 65):
        for kind in ("int", "str"):
            keys = _keys_of_kind(kind, n)
            if kind not in takes:  # refused alike, one by one and in a batch
                with pytest.raises((TypeError, ValueError)):
                    _one_by_one(r, keys)
                with pytest.raises((TypeError, ValueError)):
                    r.route_many(keys)
                continue
            want = _one_by_one(r, keys)
            assert np.array_equal(r.route_many(keys), want), (name, kind, n)
            assert np.array_equal(r.route_many(tuple(keys)), want), (name, kind, n)
            if kind == "int" and r.key_prefix is None:
                assert np.array_equal(r.route_many(np.array(keys, dtype=np.int64)), want)
            if kind == "str":
                assert np.array_equal(r.route_many(np.array(keys, dtype=object)), want)


def test_route_many_small_mixed_and_bad_keys_take_the_general_path() -> None:
    r = JumpRouter([f"s{i}" for i in range(10)])
    keys = ["a", 1, b"raw", ("t", 2), 2**63, -5, "é"]
    assert np.array_equal(r.route_many(keys), _one_by_one(r, keys))
    with pytest.raises(TypeError, match="position 2"):
        r.route_many(["a", "b", 1.5])
    with pytest.raises(OverflowError, match="position 1"):
        r.route_many([1, 2**70])
    with pytest.raises(TypeError):
        r.route_many(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="masked"):
        r.route_many(np.ma.array([1, 2], mask=[False, True]))
    out = np.empty(3, dtype=np.int32)
    assert r.route_many([1, 2, 3], out=out) is out
    assert np.array_equal(out, _one_by_one(r, [1, 2, 3]))


def test_route_many_small_other_hashers_and_prefix() -> None:
    for h in (Hasher("xxh64", seed=9), Hasher("xxh3_64", seed=2**64 - 1), Hasher("murmur3_128", seed=1)):
        r = RingRouter(["a", "b", "c"], vnodes=20, hasher=h)
        keys: list[Any]
        for keys in ([1, 2, 3], ["x", "y"], list(range(64)), list(range(65))):
            assert np.array_equal(r.route_many(keys), _one_by_one(r, keys))
            if isinstance(keys[0], int):
                assert np.array_equal(r.route_many(np.array(keys, dtype=np.int64)), _one_by_one(r, keys))
    p = JumpRouter(["a", "b", "c"], key_prefix=1)
    keys = [("u", 1), ("v", 2), ("u", 3)]
    assert np.array_equal(p.route_many(keys), _one_by_one(p, keys))


@pytest.mark.parametrize("algo", ["xxh3_64", "xxh64", "murmur3_128", "fnv1a_64"])
@pytest.mark.parametrize("n", [0, 1, 16, 64, 4095, 4096, 4097])
def test_hash_array_small_equals_hash_one(algo: str, n: int) -> None:
    h = Hasher(algo, seed=0 if algo.startswith("fnv") else 5)
    a = (np.arange(n, dtype=np.int64) - n // 2) * np.int64(2**33 + 3)
    want = np.array([h(int(x)) for x in a], dtype=np.uint64)
    assert np.array_equal(h.hash_array(a), want)
    assert np.array_equal(h.hash_array(a, threads=1), want)
    assert np.array_equal(h.hash_array(a[::-1]), want[::-1])
    u = a.view(np.uint64)
    want_u = np.array([h(int(x)) for x in u], dtype=np.uint64)
    assert np.array_equal(h.hash_array(u), want_u)
    lst = a.tolist()
    assert np.array_equal(h.hash_array(lst), want)
    assert np.array_equal(h.hash_array(tuple(lst)), want)


def test_hash_array_small_decimal_codec() -> None:
    from shardhash import KeyCodec

    h = Hasher("xxh3_64", codec=KeyCodec(int_encoding="decimal"))
    for dt in (np.int64, np.uint64):
        a = np.array([0, 1, 2**62, 7], dtype=dt)
        assert np.array_equal(h.hash_array(a), np.array([h(int(x)) for x in a], dtype=np.uint64))


# -- numpy arrays of every integer layout, every size up to one past the threshold
#
# The small path reads a native-order integer array in place (NumPy's C API:
# item size, sign, stride, unaligned items) and leaves every other array to
# the general path; both must give route_index's answers, item by item.

SMALL_PATH_ROUTERS: dict[str, Any] = {
    **HASH_ROUTERS,
    # the default hasher (xxh3_64 over the default encodings) takes the inline
    # path for numpy arrays; HASH_ROUTERS' jump and memento use other hashers
    "jump_default": lambda: JumpRouter(["a", "b", "c", "d", "e"]),
    "memento_default": lambda: MementoRouter(["a", "c", "d"], buckets=6, removed=[1, 4, 5]),
}

LAYOUTS = ["int64", "uint64", "int32", "uint32", "int16", "uint16", "int8", "uint8", ">i8", ">u8", ">i4",
           "slice", "reversed", "unaligned", "readonly"]


def _layout(layout: str, n: int, rng: np.random.Generator) -> np.ndarray:
    base = {"slice": "int64", "reversed": "int64", "unaligned": "int64", "readonly": "uint64"}.get(layout, layout)
    dt = np.dtype(base)
    info = np.iinfo(dt)
    edges = [info.min, info.max, 0, 1, info.min + 1, info.max - 1]
    # random values over the type's whole range, its edges in front
    vals = [int(v) for v in rng.integers(info.min, info.max, size=n, dtype=dt.newbyteorder("="), endpoint=True)]
    vals = (edges + vals)[:n]
    if layout == "slice":
        return np.repeat(np.array(vals, dtype=dt), 3)[::3]          # stride 24
    if layout == "reversed":
        return np.array(vals[::-1], dtype=dt)[::-1]                  # negative stride
    if layout == "unaligned":
        raw = np.array(vals, dtype=dt).tobytes()
        return np.frombuffer(b"\0" + raw, dtype=dt, offset=1, count=n)
    a = np.array(vals, dtype=dt)
    if layout == "readonly":
        a.setflags(write=False)
    return a


@pytest.mark.parametrize("name", sorted(SMALL_PATH_ROUTERS))
def test_route_many_small_arrays_every_layout(name: str) -> None:
    r = SMALL_PATH_ROUTERS[name]()
    if r.key_prefix is not None:   # prefix routers take tuple keys only
        with pytest.raises(TypeError, match="needs tuple keys, not an array of dtype int64"):
            r.route_many(np.arange(3))
        return
    rng = np.random.default_rng(len(name))
    for n in range(66):
        for layout in LAYOUTS:
            a = _layout(layout, n, rng)
            if layout == "unaligned" and n:
                assert not a.flags.aligned
            want = _one_by_one(r, [int(x) for x in a])
            got = r.route_many(a)
            assert got.dtype == np.int32 and got.shape == (n,), (name, layout, n)
            assert got.flags.c_contiguous and got.flags.writeable and got.flags.owndata
            assert np.array_equal(got, want), (name, layout, n)
            assert np.array_equal(r.route_many(a, threads=1), want), (name, layout, n)   # the general path
        keys = [int(x) for x in _layout("int64", n, rng)]
        want = _one_by_one(r, keys)
        assert np.array_equal(r.route_many(keys), want), (name, n)
        assert np.array_equal(r.route_many(tuple(keys)), want), (name, n)


def test_route_many_small_arrays_other_inputs_take_the_general_path() -> None:
    r = JumpRouter(["a", "b", "c", "d", "e"])
    keys = [3, 1, 4, 1, 5, 9, 2, 6]
    want = _one_by_one(r, keys)

    class Sub(np.ndarray):
        pass

    for a in (np.array(keys, dtype=np.int64).view(Sub),             # a subclass
              np.array(keys, dtype=object),                           # Python ints in an object array
              [np.int64(k) for k in keys],                            # numpy scalars in a list
              np.ma.array(keys, mask=False)):                        # a masked array without masked entries
        assert np.array_equal(r.route_many(a), want), type(a)
    # errors: the general path's, unchanged
    with pytest.raises(TypeError, match=r"^cannot hash a boolean array"):
        r.route_many(np.array([True, False]))
    with pytest.raises(TypeError, match=r"^cannot hash a boolean array"):
        r.route_many(np.array([True]))
    assert r.route_many(np.array([], dtype=bool)).shape == (0,)
    with pytest.raises(TypeError, match=r"^cannot hash a float64 array: floating-point"):
        r.route_many(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"^keys must be a 1-dimensional array, got 2 dimensions$"):
        r.route_many(np.arange(4).reshape(2, 2))
    with pytest.raises(TypeError, match=r"^key at position 2: "):
        r.route_many(np.array([1, 2, None], dtype=object))
    with pytest.raises(TypeError, match=r"^key at position 1: "):
        r.route_many([1, 2.5, 3])
    with pytest.raises(TypeError, match=r"^key at position 1: "):
        r.route_many((1, 2.5, 3))
    out = np.zeros(8, dtype=np.int32)
    assert r.route_many(np.array(keys, dtype=np.int64), out=out) is out and np.array_equal(out, want)
    with pytest.raises(TypeError, match=r"^out must have dtype int32"):
        r.route_many(np.array(keys, dtype=np.int64), out=np.zeros(8, dtype=np.int64))
    with pytest.raises(ValueError, match=r"^out has length 7 but there are 8 keys"):
        r.route_many(np.array(keys, dtype=np.int64), out=np.zeros(7, dtype=np.int32))
    with pytest.raises(ValueError, match=r"threads"):
        r.route_many(np.array(keys, dtype=np.int64), threads=0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_hash_array_small_every_layout(layout: str) -> None:
    rng = np.random.default_rng(11)
    for h in (Hasher(), Hasher("xxh64", seed=3), Hasher("murmur3_128", seed=1)):
        for n in (0, 1, 2, 7, 8, 16, 63, 64, 65, 4096, 4097):
            a = _layout(layout, n, rng)
            want = np.array([h(int(x)) for x in a], dtype=np.uint64)
            got = h.hash_array(a)
            assert got.dtype == np.uint64 and got.shape == (n,) and got.flags.c_contiguous
            assert np.array_equal(got, want), (layout, n, h)
            assert np.array_equal(h.hash_array(a, threads=1), want), (layout, n, h)


def test_hash_array_small_errors_unchanged() -> None:
    h = Hasher()
    with pytest.raises(TypeError, match=r"^cannot hash a boolean array"):
        h.hash_array(np.array([True, False]))
    with pytest.raises(ValueError, match=r"^keys must be a 1-dimensional array, got 2 dimensions$"):
        h.hash_array(np.arange(4).reshape(2, 2))
    with pytest.raises(TypeError, match=r"^key at position 1: "):
        h.hash_array([1, 2.5])
    out = np.zeros(2, dtype=np.uint64)
    assert h.hash_array([1, 2], out=out) is out
    assert np.array_equal(out, [h(1), h(2)])
    with pytest.raises(ValueError, match=r"^out must be writeable"):
        ro = np.zeros(2, dtype=np.uint64)
        ro.setflags(write=False)
        h.hash_array([1, 2], out=ro)
