"""Live differential tests: shardhash's hash functions against the reference
packages (xxhash, mmh3) and a pure-Python FNV-1a, on random inputs and seeds.

The frozen vectors (test_vectors.py) pin a fixed grid; these explore
everything else: any byte content, lengths 0..2100, any valid seed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import shardhash
from tests.hashing._oracles import FULL, M32, M64, SEED_TOP

# algorithm -> (reference (data, seed) -> int, largest seed)
REFERENCE: dict[str, tuple[Callable[[bytes, int], int], int]] = {a: (FULL[a], SEED_TOP[a]) for a in FULL}
ALGORITHMS = tuple(REFERENCE)


def seeds_for(algorithm: str) -> st.SearchStrategy[int]:
    top = REFERENCE[algorithm][1]
    edges = sorted(s for s in {0, 1, top, top >> 1, (top >> 1) + 1, M32} if s <= top)
    return st.one_of(st.sampled_from(edges), st.integers(0, top))


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, bytes, int]:
    algorithm = draw(st.sampled_from(ALGORITHMS))
    data = draw(st.binary(min_size=0, max_size=2100))
    return algorithm, data, draw(seeds_for(algorithm))


@given(cases())
def test_hash_bytes_matches_reference(case: tuple[str, bytes, int]) -> None:
    algorithm, data, seed = case
    expected = REFERENCE[algorithm][0](data, seed)
    assert shardhash.hash_bytes(data, algorithm, seed) == expected


@given(st.sampled_from(ALGORITHMS), st.integers(0, 2100), st.data())
def test_hash_bytes_matches_reference_on_long_patterned_inputs(
        algorithm: str, length: int, data: st.DataObject) -> None:
    # Random lengths with structured content (repeats, zeros, 0xff runs),
    # which random binary rarely produces at these sizes.
    unit = data.draw(st.binary(min_size=1, max_size=9))
    payload = (unit * (length // len(unit) + 1))[:length]
    seed = data.draw(seeds_for(algorithm))
    expected = REFERENCE[algorithm][0](payload, seed)
    assert shardhash.hash_bytes(payload, algorithm, seed) == expected


@given(st.sampled_from(ALGORITHMS),
       st.lists(st.integers(0, M64), min_size=0, max_size=64), st.data())
def test_hash_array_of_uint64_matches_reference_on_8_le_bytes(
        algorithm: str, words: list[int], data: st.DataObject) -> None:
    """The inline single-word fast paths: each uint64 hashed as its 8
    little-endian bytes, widened to 64 bits (murmur3_128: its low word h1)."""
    seed = data.draw(seeds_for(algorithm))
    ref = REFERENCE[algorithm][0]
    expected = [ref(w.to_bytes(8, "little"), seed) & M64 for w in words]
    got = shardhash.hash_array(np.array(words, dtype=np.uint64), algorithm=algorithm, seed=seed)
    assert got.dtype == np.uint64
    assert [int(x) for x in got] == expected
