"""The jump batch kernel (AVX2 where the CPU has it, else the portable one)
against the scalar reference, key by key.

``JumpRouter.route_hashes`` and ``jump_hash_array`` run ``sh_jump_batch``;
``jump_hash`` runs the scalar ``sh_jump`` (the paper's reference code).  The
plain-C test (tests/c/test_place.c) checks both batch kernels directly.
"""

import numpy as np
import pytest

from shardhash import JumpRouter, jump_hash, jump_hash_array
from shardhash.routing import _kernels

MULT = 2862933555777941757
MASK = (1 << 64) - 1
MULT_INV = pow(MULT, -1, 1 << 64)


def _keys(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    k = rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)
    k[:4] = [0, MASK, 0, MASK]
    k[-2:] = [MASK, 0]
    return k


def _exact_boundary_keys(num_buckets: int, count: int, seed: int) -> np.ndarray:
    """Keys whose first step gives p == num_buckets exactly (num_buckets a
    power of two): the key must stop there."""
    e = num_buckets.bit_length() - 1
    assert num_buckets == 1 << e and e <= 31
    rng = np.random.default_rng(seed)
    out = []
    for low in rng.integers(0, 1 << 33, size=count):
        k1 = (((1 << (31 - e)) - 1) << 33) | int(low)
        out.append(((k1 - 1) * MULT_INV) & MASK)
    return np.array(out, dtype=np.uint64)


def _reference(keys: np.ndarray, num_buckets: int) -> np.ndarray:
    return np.array([jump_hash(int(k), num_buckets) for k in keys], dtype=np.int32)


def test_kernel_name() -> None:
    """The AVX2 kernel is the one that runs on x86-64 CPUs with AVX2 (so its
    figures are what users get there), NEON on aarch64; other machines say
    portable.  The choice is made once, at import (cpuid/xgetbv)."""
    import os
    import platform
    import sys
    from pathlib import Path

    assert _kernels._JUMP_KERNEL in ("avx2", "neon", "portable")
    assert _kernels._JUMP_SCALAR in ("sse4.1", "portable")
    machine = platform.machine().lower()
    simd = "SH_NO_SIMD" not in os.environ.get("CFLAGS", "")
    if machine in ("aarch64", "arm64"):
        assert _kernels._JUMP_KERNEL == ("neon" if simd else "portable")
    elif machine not in ("x86_64", "amd64"):
        assert _kernels._JUMP_KERNEL == "portable"
    elif (sys.platform.startswith("linux") and Path("/proc/cpuinfo").exists()
          and "SH_NO_SIMD" not in os.environ.get("CFLAGS", "")):
        flags = next((line.split(":", 1)[1].split() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("flags")), [])
        assert _kernels._JUMP_KERNEL == ("avx2" if "avx2" in flags else "portable")
        assert _kernels._JUMP_SCALAR == ("sse4.1" if "sse4_1" in flags else "portable")


@pytest.mark.parametrize("num_buckets", [1, 2, 3, 7, 10, 100, 1000, 1024, 4099, 65536,
                                         1_000_003, 2**31 - 1])
def test_jump_hash_array_matches_scalar(num_buckets: int) -> None:
    keys = _keys(20_000, seed=num_buckets)
    ref = _reference(keys, num_buckets)
    got = jump_hash_array(keys, num_buckets)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, ref)
    # every short length and offset (the kernel's tail paths)
    for n in list(range(0, 40)) + list(range(120, 136)) + list(range(250, 270)) + [511, 512, 777, 1000]:
        off = (n * 37) % 1000
        np.testing.assert_array_equal(jump_hash_array(keys[off:off + n], num_buckets),
                                      ref[off:off + n])


@pytest.mark.parametrize("num_buckets", [1, 2, 64, 1024, 65536, 2**20, 2**30])
def test_exact_boundary_keys_stop(num_buckets: int) -> None:
    keys = np.concatenate([_keys(3000, seed=7), _exact_boundary_keys(num_buckets, 200, seed=1),
                           _keys(3000, seed=8)])
    ref = _reference(keys, num_buckets)
    np.testing.assert_array_equal(jump_hash_array(keys, num_buckets), ref)


@pytest.mark.parametrize("nshards", [1, 2, 5, 100, 1000, 4096])
def test_router_route_hashes_matches_scalar(nshards: int) -> None:
    router = JumpRouter([f"s{i}" for i in range(nshards)])
    keys = _keys(30_000, seed=1000 + nshards)
    ref = _reference(keys, nshards)
    np.testing.assert_array_equal(router.route_hashes(keys), ref)
    np.testing.assert_array_equal(router.route_hashes(keys, threads=2), ref)
    np.testing.assert_array_equal(router.route_hashes(keys[5:7777]), ref[5:7777])


def test_matches_jump_package() -> None:
    jump = pytest.importorskip("jump")
    keys = _keys(3000, seed=42)
    for num_buckets in (1, 3, 100, 1000, 65536, 2**31 - 1):
        expected = np.array([jump.hash(int(k), num_buckets) for k in keys], dtype=np.int32)
        np.testing.assert_array_equal(jump_hash_array(keys, num_buckets), expected)
