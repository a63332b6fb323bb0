"""The scalar route path has its own data layouts and shortcuts, chosen for
one key at a time; they must answer exactly like the batch kernels:

* small Python ints are hashed inline (not through ``Hasher.hash_one``) when
  the hasher is xxh3_64 over 8-byte little-endian ints;
* bucket / Maglev tables are read from 1- or 2-byte copies when the shard
  count allows (<= 256, <= 65536), else from the 4-byte table;
* rings with fewer than 2**15 tokens and owners are looked up in a compact
  16-bit index, bigger ones in the batch kernel's index;
* RangeRouter and WatermarkRouter route exact ints (and str for string
  ranges) in C, everything else through their Python method.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardhash import Hasher, KeyCodec, hash_key
from shardhash._reference.routing import ReferenceRouter
from shardhash.routing import BucketRouter, JumpRouter, MaglevRouter, RingRouter, Router
from tests._support import examples

U64 = 2**64 - 1
RNG = np.random.default_rng(20261129)

# Around every boundary of the inline int path (one internal digit of 30
# bits) and of the 64-bit key space.
EDGE_INTS = sorted({s * v for v in (0, 1, 2, 2**15, 2**30 - 1, 2**30, 2**30 + 1, 2**31,
                                    2**60, 2**62, 2**63 - 1) for s in (1, -1)}
                   | {-(2**63), 2**63, U64 - 1, U64})


def _probe_hashes(extra: list[int] | None = None) -> np.ndarray:
    edges = [0, 1, 2, U64, U64 - 1, 2**63, 2**63 - 1, 2**48, 2**48 - 1] + (extra or [])
    return np.concatenate([np.array(edges, dtype=np.uint64),
                           RNG.integers(0, U64, 20_000, dtype=np.uint64, endpoint=True)])


def _scalar_equals_batch(r: Router, hs: np.ndarray) -> None:
    batch = r.route_hashes(hs, threads=1)
    scalar = [r.route_hash(int(h)) for h in hs]
    assert scalar == batch.tolist()


@pytest.mark.parametrize("nshards", [1, 7, 256, 257, 300, 65536, 65537, 70_000])
def test_bucket_table_widths(nshards: int) -> None:
    shards = [f"s{i}" for i in range(nshards)]
    nb = max(4096, nshards)
    placement = [shards[(i * 7919) % nshards] for i in range(nb)]
    r = BucketRouter(shards, placement)
    hs = _probe_hashes()
    _scalar_equals_batch(r, hs)
    # every shard index survives the narrow copy: route a hash to each bucket
    probe = np.arange(nb, dtype=np.uint64)
    assert [r.route_hash(int(h)) for h in probe] == r.route_hashes(probe).tolist()


@pytest.mark.parametrize("nshards", [3, 256, 300])
def test_maglev_table_widths(nshards: int) -> None:
    r = MaglevRouter([f"m{i}" for i in range(nshards)])
    _scalar_equals_batch(r, _probe_hashes())


@pytest.mark.parametrize(("nshards", "vnodes"), [(1, 1), (3, 5), (100, 160), (200, 163),
                                                 (128, 256), (40_000, 1)])
def test_ring_scalar_index(nshards: int, vnodes: int) -> None:
    """200 x 163 = 32,600 tokens (compact index), 128 x 256 = 32,768 and
    40,000 owners (too big for it): the same answers either way."""
    r = RingRouter([f"r{i}" for i in range(nshards)], vnodes=vnodes)
    tokens = [int(t) for t in r.tokens[:200]]
    extra = [x for t in tokens for x in (t, max(t - 1, 0), min(t + 1, U64))]
    hs = _probe_hashes(extra)
    _scalar_equals_batch(r, hs)
    if nshards < 40_000:  # the pure-Python reference is slow for 40,000 shards
        ref = ReferenceRouter(r.to_dict())
        sample = [int(h) for h in hs[:3000]]
        assert [r.route_hash(h) for h in sample] == [ref.route_hash(h) for h in sample]


@settings(max_examples=examples(60))
@given(tokens=st.dictionaries(st.sampled_from("ABCDEFGH"),
                              st.lists(st.sampled_from([0, 1, 2, 2**63, U64 - 1, U64])
                                       | st.integers(0, U64), min_size=1, max_size=6, unique=True),
                              min_size=1, max_size=8),
       hs=st.lists(st.sampled_from([0, 1, 2, 2**63, U64 - 1, U64]) | st.integers(0, U64), max_size=40))
def test_ring_scalar_index_explicit_tokens(tokens: dict[str, list[int]], hs: list[int]) -> None:
    r = RingRouter(sorted(tokens), tokens=tokens, collisions="first")
    arr = np.array(hs, dtype=np.uint64)
    assert [r.route_hash(h) for h in hs] == r.route_hashes(arr).tolist()
    ref = ReferenceRouter(r.to_dict())
    assert [r.route_hash(h) for h in hs] == [ref.route_hash(h) for h in hs]


HASHERS = [Hasher(), Hasher("xxh3_64", 12345), Hasher("xxh64", 7), Hasher("murmur3_32", 1),
           Hasher("xxh3_64", 0, KeyCodec(int_encoding="decimal")),
           Hasher("xxh3_64", 3, KeyCodec(normalization="NFC", casefold=True, strip=True))]

# ASCII strings of every length class xxh3 distinguishes (0, 1-3, 4-8, 9-16,
# 17-128, 129-240, longer) and strings the inline path must leave to the Hasher.
EDGE_STRS = ["", "a", "ab", "abc", "abcd", "user:1", "12345678", "123456789", "x" * 16, "y" * 17,
             "z" * 128, "w" * 129, "v" * 240, "u" * 241, "t" * 1000, " padded ", "MiXeD",
             "caf\u00e9", "\u00c5ngstr\u00f6m", "\u65e5\u672c", "\U0001f600 emoji", "e\u0301", "\x00nul"]


@pytest.mark.parametrize("hasher", HASHERS, ids=repr)
@pytest.mark.parametrize("cls", [JumpRouter, RingRouter, BucketRouter])
def test_inline_hashing(hasher: Hasher, cls: type[Router]) -> None:
    shards = [f"x{i}" for i in range(37)]
    r = BucketRouter(shards, shards * 3, hasher=hasher) if cls is BucketRouter else cls(shards, hasher=hasher)
    keys = EDGE_INTS + [int(v) for v in RNG.integers(-(2**40), 2**40, 2000)] + EDGE_STRS + [
        f"user:{v}" for v in RNG.integers(0, 10**12, 500)]
    want = [r.route_hash(hash_key(k, hasher.algorithm, hasher.seed, hasher.codec)) for k in keys]
    assert [r.route_index(k) for k in keys] == want
    assert [r.route(k) for k in keys] == [shards[i] for i in want]
    assert r.route_many(keys).tolist() == want


def test_inline_hashing_leaves_other_types_alone() -> None:
    r = JumpRouter([f"x{i}" for i in range(10)])

    class MyInt(int):
        pass

    class MyStr(str):
        pass

    for k in (True, False, MyInt(5), 5.0, "5", b"5", MyStr("abc"), ("a", 1), "\ud800"):
        try:
            want = r.route_hash(r.hasher(k))
        except (TypeError, ValueError) as e:
            with pytest.raises(type(e)):
                r.route_index(k)
            continue
        assert r.route_index(k) == want
    with pytest.raises(OverflowError):
        r.route(2**64)
    with pytest.raises(OverflowError):
        r.route(-(2**63) - 1)


_LCG = 2862933555777941757
_LCG_INV = pow(_LCG, -1, 2**64)


def _lands_on(n: int) -> list[int]:
    """Keys whose first jump step computes exactly p = n (n a power of two:
    d = 2**31 / n), the boundary between stopping and going on."""
    if n < 1 or n & (n - 1) or n > 2**31:
        return []
    d = 2**31 // n
    return [(((((d - 1) << 33) | low) - 1) * _LCG_INV) % 2**64 for low in (0, 1, 2**33 - 1)]


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 100, 1000, 65536, 1_000_003, 2**30, 2**31 - 1])
def test_scalar_jump_matches_the_reference_loop(n: int) -> None:
    """jump_hash (and so route on a JumpRouter) may run a shorter-latency
    loop (SSE4.1 on x86-64); it must equal the paper's loop, written here
    in Python, and the jump-consistent-hash package."""
    from shardhash import jump_hash
    from shardhash._reference.jump import jump as py_jump

    keys = [0, 1, 2, U64, U64 - 1, 2**63] + _lands_on(n) + _lands_on(n // 2) + [
        int(k) for k in RNG.integers(0, U64, 3000, dtype=np.uint64, endpoint=True)]
    got = [jump_hash(k, n) for k in keys]
    assert got == [py_jump(k, n) for k in keys]
    jump = pytest.importorskip("jump")
    assert got == [jump.hash(k, n) for k in keys]
    r = JumpRouter([f"j{i}" for i in range(n)]) if n <= 1000 else None
    if r is not None:
        assert [r.route_hash(k) for k in keys] == got


# -- routers on the raw key: RangeRouter and WatermarkRouter ----------------------------

def _bisect_reference(splits: list[Any], owners: list[int], key: Any) -> int:
    import bisect
    return owners[bisect.bisect_right(splits, key)]


INT_SPLITS = [-(2**64), -(2**63) - 1, -(2**63), -5, 0, 7, 2**40, 2**63 - 1, 2**63, 2**64 + 3]


def test_int_ranges_compiled_path_matches_bisect() -> None:
    from shardhash.routing import RangeRouter

    shards = [f"r{i}" for i in range(len(INT_SPLITS) + 1)]
    r = RangeRouter(INT_SPLITS, shards)
    keys = sorted({s + d for s in INT_SPLITS for d in (-1, 0, 1)} | {-(2**70), 2**70, 0, 1, -1}
                  | {int(v) for v in RNG.integers(-(2**62), 2**62, 2000)})
    want = [_bisect_reference(INT_SPLITS, list(range(len(shards))), k) for k in keys]
    assert [r.route_index(k) for k in keys] == want
    assert [r.route(k) for k in keys] == [shards[i] for i in want]
    small = [k for k in keys if -(2**63) <= k < 2**63]
    assert [r.route_index(np.int64(k)) for k in small] == [r.route_index(k) for k in small]
    with pytest.raises(TypeError, match="integer keys"):
        r.route("5")
    with pytest.raises(TypeError, match="integer keys"):
        r.route(True)


def test_str_ranges_compiled_path_matches_bisect() -> None:
    from shardhash.routing import RangeRouter

    splits = sorted(["", "b", "m", "m\u00e9", "z", "z\u0301", "\u65e5", "\U0001f600"])
    shards = [f"s{i}" for i in range(len(splits) + 1)]
    owners = [3, 1, 4, 1, 5, 0, 2, 6, 7]
    r = RangeRouter(splits, [shards[i] for i in owners])
    keys = splits + ["a", "ba", "l", "mz", "m\u00e9\u00e9", "y", "zz", "\u65e4", "\U0001f601", "~", " "]

    class MyStr(str):
        pass

    for k in keys + [MyStr("n")]:
        assert r.shards[r.route_index(k)] == [shards[i] for i in owners][
            __import__("bisect").bisect_right(splits, str(k))]
        assert r.route(k) == r.shards[r.route_index(k)]
    with pytest.raises(TypeError, match="string keys"):
        r.route(5)


@pytest.mark.parametrize("splits", [
    ["ab", "ab\x00", "ab\x00\x00c", "abcdefg", "abcdefgh", "abcdefgh\x00", "abcdefghi", "abcdefgi", "b"],
    ["user:1", "user:10", "user:100", "user:2", "user:20000000", "user:20000001", "user:3\u00e9", "user:4"],
])
def test_str_ranges_with_shared_prefixes(splits: list[str]) -> None:
    """ASCII keys compare through 8-byte prefixes, then the whole bytes:
    padding, embedded NULs and prefixes of each other must order exactly
    like Python's str comparison."""
    import bisect
    import itertools

    from shardhash.routing import RangeRouter

    splits = sorted(splits)
    r = RangeRouter(splits, [f"s{i}" for i in range(len(splits) + 1)])
    pieces = ["", "\x00", "a", "b", "c", "i", "1", "2", "0", "3", ":", "user:", "abcdefg", "abcdefgh"]
    keys = set(splits) | {s + x for s in splits for x in pieces} | {
        "".join(t) for t in itertools.product(["ab", "abcdefgh", "user:2", ""], ["", "\x00", "0", "h", "i"])}
    keys |= {s[:k] for s in splits for k in range(len(s))}
    for k in sorted(keys):
        assert r.route_index(k) == bisect.bisect_right(splits, k), repr(k)


def test_ranges_with_a_key_prefix_take_the_tuple_path() -> None:
    from shardhash.routing import RangeRouter

    r = RangeRouter([10, 20], ["a", "b", "c"], key_prefix=1)
    assert [r.route((k, "x")) for k in (9, 10, 19, 20)] == ["a", "b", "b", "c"]
    assert r.route(15) == "b"  # a one-part prefix of a plain key is the key
    r2 = RangeRouter([10, 20], ["a", "b", "c"], key_prefix=2)
    with pytest.raises(TypeError, match="first 2 parts"):
        r2.route(15)


@pytest.mark.parametrize("wm", [-(2**63), -1, 0, 5000, 2**63 - 1, 2**63, 2**64 - 1])
def test_watermark_compiled_path_matches_its_definition(wm: int) -> None:
    from shardhash.routing import RangeRouter, WatermarkRouter

    class Shifted(JumpRouter):  # a Python override the compiled path must call
        def route_index(self, key: Any) -> int:
            return (super().route_index(key) + 1) % len(self.shards)

    olds = [BucketRouter(["a", "b", "c"], ["a", "b", "c", "c"]), Shifted(["a", "b"])]
    news = [JumpRouter(["a", "b", "c", "d"]), RangeRouter([0, 2**62], ["d", "e", "a"]),
            Shifted(["e", "a", "f"])]
    keys = sorted({wm + d for d in (-2, -1, 0, 1, 2)} | {0, 1, -1, 2**62, 2**63 - 1, 2**63, 2**64 - 1,
                                                          -(2**63)}
                  | {int(v) for v in RNG.integers(-(2**62), 2**62, 300)})
    keys = [k for k in keys if -(2**63) <= k <= 2**64 - 1]
    for old in olds:
        for new in news:
            w = WatermarkRouter(old, new, wm)
            pos = {s: i for i, s in enumerate(w.shards)}
            want = [pos[new.shards[new.route_index(k)]] if k >= wm else pos[old.shards[old.route_index(k)]]
                    for k in keys]
            assert [w.route_index(k) for k in keys] == want
            assert [w.route(k) for k in keys] == [w.shards[i] for i in want]
            with pytest.raises(TypeError, match="integer ids"):
                w.route("7")
