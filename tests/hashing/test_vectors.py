"""The frozen golden hash vectors (tests/vectors/hashes.tsv).

Two independent checks of every row:

* the reference packages (xxhash, mmh3, a pure-Python FNV-1a) still produce
  it -- the file is what the reference algorithms say, not what we say;
* ``shardhash.hash_bytes`` reproduces it, bit for bit.

Format and buffer rule: tests/vectors/README.md.
"""

from __future__ import annotations

from collections import Counter

import pytest

import shardhash
from tests._support import VECTORS as VECTOR_ROOT
from tests.hashing._oracles import FULL, M32, M64

VECTORS = VECTOR_ROOT / "hashes.tsv"
ALGORITHMS = ("xxh3_64", "xxh64", "xxh32", "murmur3_32", "murmur3_128", "fnv1a_32", "fnv1a_64")
HEX_DIGITS = {"xxh3_64": 16, "xxh64": 16, "xxh32": 8, "murmur3_32": 8, "murmur3_128": 32,
              "fnv1a_32": 8, "fnv1a_64": 16}


def make_buffer(n: int = 2048) -> bytes:
    """byte[i] = ((i * 2654435761 + 1013904223) mod 2**32) >> 24."""
    return bytes(((i * 2654435761 + 1013904223) & M32) >> 24 for i in range(n))


BUF = make_buffer()




def load_rows() -> list[tuple[str, int, int, int]]:
    rows = []
    header_seen = False
    for lineno, line in enumerate(VECTORS.read_text(encoding="utf-8").splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        if not header_seen:
            assert line == "algorithm\tseed\tlength\texpected", f"line {lineno}: bad header"
            header_seen = True
            continue
        algo, seed, length, expected = line.split("\t")
        assert algo in HEX_DIGITS, f"line {lineno}: unknown algorithm {algo!r}"
        assert len(expected) == HEX_DIGITS[algo], f"line {lineno}: width of {expected!r}"
        assert expected == expected.lower(), f"line {lineno}: hex must be lowercase"
        assert 0 <= int(length) <= len(BUF), f"line {lineno}: length {length}"
        rows.append((algo, int(seed), int(length), int(expected, 16)))
    return rows


ROWS = load_rows()


def test_buffer_rule_matches_readme() -> None:
    assert BUF[:8].hex(" ") == "3c da 78 17 b5 53 f1 8f"
    assert len(set(BUF)) == 256


def test_coverage_of_the_vector_file() -> None:
    per_algo = Counter(r[0] for r in ROWS)
    assert set(per_algo) == set(ALGORITHMS)
    lengths = {r[2] for r in ROWS}
    assert set(range(257)) <= lengths
    for boundary in (240, 241, 1023, 1024, 1025, 2047, 2048):
        assert boundary in lengths
    seeds = {a: {r[1] for r in ROWS if r[0] == a} for a in ALGORITHMS}
    for a in ("xxh3_64", "xxh64"):
        assert {0, 1, M32, M64} <= seeds[a]
    for a in ("xxh32", "murmur3_32", "murmur3_128"):
        assert {0, 1, M32} <= seeds[a] and max(seeds[a]) <= M32
    assert seeds["fnv1a_32"] == seeds["fnv1a_64"] == {0}
    # every algorithm/seed pair covers the same lengths
    combos = Counter((r[0], r[1]) for r in ROWS)
    assert len(set(combos.values())) == 1


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_reference_packages_reproduce_vectors(algorithm: str) -> None:
    ref = FULL[algorithm]
    bad = [(seed, n, hex(exp)) for a, seed, n, exp in ROWS
           if a == algorithm and ref(BUF[:n], seed) != exp]
    assert not bad, f"{len(bad)} rows differ from the reference, first: {bad[:5]}"


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_hash_bytes_matches_vectors(algorithm: str) -> None:
    bad = []
    for a, seed, n, exp in ROWS:
        if a != algorithm:
            continue
        got = shardhash.hash_bytes(BUF[:n], algorithm, seed)
        if got != exp:
            bad.append((seed, n, hex(exp), hex(got)))
    assert not bad, f"{len(bad)} rows differ, first (seed, len, expected, got): {bad[:5]}"


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_hash_bytes_keyword_form_and_default_seed(algorithm: str) -> None:
    rows = [r for r in ROWS if r[0] == algorithm and r[1] == 0]
    for _, _, n, exp in rows[::37]:
        assert shardhash.hash_bytes(BUF[:n], algorithm=algorithm) == exp
        assert shardhash.hash_bytes(data=BUF[:n], algorithm=algorithm, seed=0) == exp


def test_hash_bytes_default_algorithm_is_xxh3_64() -> None:
    for _, _seed, n, exp in (r for r in ROWS if r[0] == "xxh3_64" and r[1] == 0):
        assert shardhash.hash_bytes(BUF[:n]) == exp


# Values published independently of any package, so the suite does not rest
# on the vector file alone.
#  - FNV-1a: the FNV specification's test vectors (draft-eastlake-fnv; also
#    test_fnv.c of the FNV reference code).
#  - MurmurHash3_x86_32: the widely cited test values for the reference code.
#  - XXH32/XXH64/XXH3_64 of the empty input, seed 0 (xxHash documentation).
PUBLISHED = [
    ("fnv1a_32", b"", 0, 0x811C9DC5),
    ("fnv1a_32", b"a", 0, 0xE40C292C),
    ("fnv1a_32", b"foobar", 0, 0xBF9CF968),
    ("fnv1a_64", b"", 0, 0xCBF29CE484222325),
    ("fnv1a_64", b"a", 0, 0xAF63DC4C8601EC8C),
    ("fnv1a_64", b"foobar", 0, 0x85944171F73967E8),
    ("murmur3_32", b"", 0, 0),
    ("murmur3_32", b"", 1, 0x514E28B7),
    ("murmur3_32", b"", 0xFFFFFFFF, 0x81F16F39),
    ("murmur3_32", b"Hello, world!", 0x9747B28C, 0x24884CBA),
    ("murmur3_32", b"The quick brown fox jumps over the lazy dog", 0x9747B28C, 0x2FA826CD),
    ("xxh32", b"", 0, 0x02CC5D05),
    ("xxh64", b"", 0, 0xEF46DB3751D8E999),
    ("xxh3_64", b"", 0, 0x2D06800538D394C2),
]


@pytest.mark.parametrize(("algorithm", "data", "seed", "expected"), PUBLISHED)
def test_published_values(algorithm: str, data: bytes, seed: int, expected: int) -> None:
    assert FULL[algorithm](data, seed) == expected
    assert shardhash.hash_bytes(data, algorithm, seed) == expected
