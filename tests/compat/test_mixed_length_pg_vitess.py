"""PostgreSQL's lookup3 and Vitess's xxh64 batch kernels on many keys of
mixed lengths, against the pure-Python lookup3 reference, the one-key
functions and (for xxh64) the xxhash package.

The batch kernels group each chunk of keys by block count (lookup3: eight
keys per AVX2 vector where the CPU has it) or by length (xxh64: four keys
side by side), and skip the grouping when a chunk's keys are all alike; the
keys that start in the first 16 bytes of an Arrow buffer and long keys take
the one-key path.  So these tests use enough keys to fill groups and chunks
(over 1024 keys), uniform chunks next to mixed ones, lengths past the grouped
range, and sliced Arrow arrays.
"""

from __future__ import annotations

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
