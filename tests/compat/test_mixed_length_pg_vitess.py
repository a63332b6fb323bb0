"""PostgreSQL's lookup3 and Vitess's xxh64 batch kernels on many keys of
mixed lengths, against the pure-Python lookup3 reference, the one-key
functions and (for xxh64) the xxhash package.

The lookup3 batch kernels group each chunk of keys by block count (eight
keys per AVX2 vector where the CPU has it) and skip the grouping when a
chunk's keys are all alike; xxh64's run eight keys per AVX-512 vector (the
stripes of a block's long keys first) where the CPU has it, else queue the
keys by length.  The keys that end in the first bytes of an Arrow buffer and
long keys take the one-key path.  So these tests use enough keys to fill
groups and chunks (over 1024 keys), uniform chunks next to mixed ones,
lengths past the grouped range, and sliced Arrow arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from shardhash._reference import postgres as pg_ref
from shardhash.compat import postgres as pg
from shardhash.compat import vitess

pa = pytest.importorskip("pyarrow")


def _keys(seed: int) -> list[bytes]:
    """Random lengths 0..100, then a run of one length (a uniform chunk), then
    lengths up to 300 (past the grouped range), then short keys."""
    rng = np.random.default_rng(seed)
    lens = [int(x) for x in rng.integers(0, 101, 1500)]
    lens += [22] * 1100 + [int(x) for x in rng.integers(0, 301, 300)] + [int(x) for x in rng.integers(0, 13, 200)]
    return [bytes(rng.integers(0, 256, n, dtype=np.uint8)) for n in lens]


def _layouts(ks: list[bytes]) -> list[object]:
    pad = [b"p" * 7, b"", b"q" * 30]
    sliced = pa.array(pad + ks + pad, pa.binary()).slice(len(pad), len(ks))
    return [ks, pa.array(ks, pa.binary()), pa.array(ks, pa.large_binary()), sliced]


@pytest.mark.parametrize("seed", [1, 2])
def test_postgres_bytea_kernels_match_the_reference(seed: int) -> None:
    ks = _keys(seed)
    want_32 = [pg_ref._signed32(pg_ref.hash_bytes(k)) for k in ks]
    want_ext = {s: [pg_ref.hash_bytes_extended(k, s) for k in ks] for s in (0, pg.HASH_PARTITION_SEED)}
    for data in _layouts(ks):
        assert pg.hash32_array(data, "bytea").tolist() == want_32
        assert pg.hash32_array(data, "bytea", threads=2).tolist() == want_32
        for s, want in want_ext.items():
            assert pg.hash_extended_array(data, "bytea", s).tolist() == want
    assert [pg.hash32(k, "bytea") for k in ks[:300]] == want_32[:300]


def test_postgres_text_kernels_match_the_reference() -> None:
    rng = np.random.default_rng(3)
    alphabet = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789{}:._-@é"))
    ks = ["".join(rng.choice(alphabet, int(n))) for n in rng.integers(0, 60, 3000)]
    want = [pg_ref.hash_bytes_extended(k.encode(), pg.HASH_PARTITION_SEED) for k in ks]
    want_32 = [pg_ref._signed32(pg_ref.hash_bytes(k.encode())) for k in ks]
    for data in (ks, pa.array(ks, pa.string()), pa.array(["x" * 9] + ks, pa.large_string()).slice(1)):
        assert pg.hash_extended_array(data, "text").tolist() == want
        assert pg.hash32_array(data, "text").tolist() == want_32
    assert [pg.hash_extended(k, "text") for k in ks[:300]] == want[:300]


@pytest.mark.parametrize("seed", [1, 2])
def test_vitess_xxhash_kernel_matches_xxh64(seed: int) -> None:
    ks = _keys(seed)
    want = [vitess.keyspace_id(k, "xxhash") for k in ks]
    xxhash = pytest.importorskip("xxhash")
    # Vitess's keyspace id is the xxh64 value's little-endian bytes
    assert want == [xxhash.xxh64_intdigest(k).to_bytes(8, "little") for k in ks]
    for data in _layouts(ks):
        for threads in (None, 1, 2):
            got = vitess.keyspace_id_array(data, "xxhash", threads=threads)
            assert [int(x).to_bytes(8, "big") for x in got.tolist()] == want


# Shapes of 256-key blocks for the AVX-512 xxh64 kernel, which hashes the
# stripes of a block's long keys (32 bytes and more) eight at a time, then
# every group of eight keys from those accumulators, with the word, 4-byte
# and byte steps kept or not per lane; a group of long keys whose stripe
# counts differ a lot takes the one-key path.
_XXH_SHAPES: dict[str, Callable[[np.random.Generator, int], Any]] = {
    "short only": lambda rng, n: rng.integers(0, 32, n),
    "long only": lambda rng, n: rng.integers(32, 64, n),
    "mixed 4..40": lambda rng, n: rng.integers(4, 41, n),
    "one long key per group": lambda rng, n: [1000 + i % 97 if i % 8 == 5 else int(x)
                                              for i, x in enumerate(rng.integers(0, 40, n))],
    "several stripes": lambda rng, n: rng.choice([32, 63, 64, 95, 96, 127, 128, 200, 5], n),
    "empty and tiny": lambda rng, n: rng.integers(0, 4, n),
    "a few long keys": lambda rng, n: [33 + i % 40 if i % 61 == 0 else i % 32 for i in range(n)],
    "one length per block": lambda rng, n: [(i // 256) * 7 % 80 for i in range(n)],
}


@pytest.mark.parametrize("shape", sorted(_XXH_SHAPES))
def test_every_xxh64_kernel_matches_xxhash(shape: str) -> None:
    xxhash = pytest.importorskip("xxhash")
    from shardhash.compat import _native

    rng = np.random.default_rng(sorted(_XXH_SHAPES).index(shape))
    n = 2 * 256 + 3 * 8 + 5  # whole blocks, a short block, a last group of fewer than eight
    ks = [bytes(rng.integers(0, 256, int(m), dtype=np.uint8)) for m in _XXH_SHAPES[shape](rng, n)]
    want = [xxhash.xxh64_intdigest(k) for k in ks]
    # keys before them in the buffer: none (the first keys end less than 32
    # bytes into it), a few bytes, and more than 32
    for pad in ([], [b"p" * 5], [b"q" * 40, b"r"]):
        data, offsets = _native.pack_keys(pad + ks)
        for kernel in _native.xxh64_kernels():
            for threads in (1, 2):
                got = _native._xxh64_offsets_with(kernel, data, offsets[len(pad):], threads=threads)
                assert got.tolist() == want, (kernel, threads)
        swapped = _native.xxh64_offsets(data, offsets[len(pad):], swap=True)
        assert swapped.tolist() == [int.from_bytes(h.to_bytes(8, "little"), "big") for h in want]


def test_an_unknown_xxh64_kernel_is_refused() -> None:
    from shardhash.compat import _native

    data, offsets = _native.pack_keys([b"a"])
    assert "scalar" in _native.xxh64_kernels()
    with pytest.raises(ValueError, match="not available"):
        _native._xxh64_offsets_with("avx2", data, offsets)


def test_vitess_xxhash_of_int_arrays_is_swapped_in_the_kernel() -> None:
    # keyspace_id_array over an int64 array hashes each value's decimal text
    # and byte-swaps in the kernel: the same ids as one value at a time
    values = np.array([0, 1, -1, 2**63 - 1, -(2**63), 1234567890123], dtype=np.int64)
    got = vitess.keyspace_id_array(values, "xxhash", threads=1)
    assert [int(x).to_bytes(8, "big") for x in got.tolist()] == [vitess.keyspace_id(int(v), "xxhash") for v in values]


class _Bytes(bytes):
    pass


def test_vitess_xxhash_of_a_list_is_read_in_place() -> None:
    # A list of keys goes through the pointer walk (no packing): exact bytes
    # and ASCII str read in place, every other kind by its SQL byte form, in
    # chunks of 256 with the AVX-512 kernel's blocks inside them.
    rng = np.random.default_rng(9)
    kinds: list[object] = []
    for i in range(3000):
        n = int(rng.integers(0, 70))
        raw = bytes(rng.integers(0, 256, n, dtype=np.uint8))
        pick = i % 11
        value: object = raw
        if pick == 1:
            value = raw.hex()[:n]
        elif pick == 2:
            value = "é€" * (n % 9) + "x"
        elif pick == 3:
            value = bytearray(raw)
        elif pick == 4:
            value = memoryview(raw)
        elif pick == 5:
            value = int(rng.integers(-(2**62), 2**62))
        elif pick == 6:
            value = None
        elif pick == 7:
            value = np.int64(n * 1000 - 7)
        elif pick == 8:
            value = _Bytes(raw)
        kinds.append(value)
    before = list(kinds)
    want = [int.from_bytes(vitess.keyspace_id(v, "xxhash"), "big") for v in kinds]
    assert vitess.keyspace_id_array(kinds, "xxhash").tolist() == want
    assert vitess.keyspace_id_array(tuple(kinds), "xxhash").tolist() == want
    assert vitess.keyspace_id_array(np.array(kinds + [b""], dtype=object)[:-1], "xxhash").tolist() == want
    assert kinds == before


@pytest.mark.parametrize(("bad", "error"), [(True, TypeError), (2.5, TypeError), (2**64, OverflowError),
                                            (object(), TypeError)])
def test_vitess_xxhash_list_errors_name_the_position(bad: object, error: type[Exception]) -> None:
    values: list[object] = [b"a"] * 700 + [bad, b"b"]
    with pytest.raises(error, match="position 700"):
        vitess.keyspace_id_array(values, "xxhash")
