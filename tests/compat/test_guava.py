"""shardhash.compat.guava: Guava's Hashing.consistentHash, to the bit.

Golden vectors (tests/vectors/compat/guava.tsv) come from the real
guava.jar; the live test compiles a tiny Java program against the
machine's guava.jar and compares >= 10,000 pairs in one JVM run.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardhash._reference import guava as ref
from shardhash.compat import guava
from tests._support import VECTORS as VECTOR_ROOT
from tests._support import oracle_missing

VECTORS = VECTOR_ROOT / "compat"
GUAVA_JARS = ("/usr/share/java/guava.jar",)

JAVA_ORACLE = """\
import com.google.common.hash.Hashing;
import java.io.*;

public class GuavaOracle {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        PrintWriter out = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out)));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            String[] p = line.split(" ");
            out.println(Hashing.consistentHash(Long.parseLong(p[0]), Integer.parseInt(p[1])));
        }
        out.flush();
    }
}
"""


def load_vectors() -> list[tuple[int, int, int]]:
    rows = []
    for line in (VECTORS / "guava.tsv").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith(("#", "key")):
            k, b, want = line.split("\t")
            rows.append((int(k), int(b), int(want)))
    return rows


def test_vectors() -> None:
    rows = load_vectors()
    assert len(rows) >= 200
    for k, b, want in rows:
        assert guava.consistent_hash(k, b) == want, (k, b)
        assert ref.consistent_hash(k, b) == want, (k, b)
    for b in sorted({b for _, b, _ in rows}):
        ks = [k for k, bb, _ in rows if bb == b]
        assert guava.consistent_hash_array(ks, b).tolist() == [w for k, bb, w in rows if bb == b]


def test_published_values() -> None:
    # Guava's own HashingTest golden values (consistentHash(i, 100), i = 0..19)
    # and the int-overflow early exit, all confirmed with guava.jar 31.1.
    assert [guava.consistent_hash(i, 100) for i in range(20)] == \
        [0, 55, 62, 8, 45, 59, 86, 97, 82, 59, 73, 37, 17, 56, 86, 21, 90, 37, 38, 83]
    assert guava.consistent_hash(2687259751451158933, 1000000007) == 195
    assert guava.consistent_hash(-1, 100) == guava.consistent_hash((1 << 64) - 1, 100) == 92


def test_differs_from_jump_hash_only_at_overflow() -> None:
    jch = pytest.importorskip("jump")
    assert jch.hash(2687259751451158933, 1000000007) == 844379201
    assert guava.consistent_hash(2687259751451158933, 1000000007) == 195
    rnd = random.Random(5)
    for _ in range(2000):
        k, b = rnd.getrandbits(64), rnd.randrange(1, 1 << 20)
        assert guava.consistent_hash(k, b) == jch.hash(k, b)


@given(st.integers(-(1 << 63), (1 << 64) - 1), st.integers(1, (1 << 31) - 1))
def test_reference(key: int, buckets: int) -> None:
    assert guava.consistent_hash(key, buckets) == ref.consistent_hash(key, buckets)


def test_array_inputs() -> None:
    rng = np.random.default_rng(3)
    u = rng.integers(0, np.iinfo(np.uint64).max, size=5000, dtype=np.uint64, endpoint=True)
    base = guava.consistent_hash_array(u, 1000)
    assert (guava.consistent_hash_array(u.view(np.int64), 1000) == base).all()
    assert base[:200].tolist() == [guava.consistent_hash(int(k), 1000) for k in u[:200]]
    assert (guava.consistent_hash_array(u, 1000, threads=4) == base).all()
    assert guava.consistent_hash_array([], 5).tolist() == []


# ----------------------------------------------------------- live oracle

@pytest.fixture(scope="module")
def guava_oracle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    jar = next((j for j in GUAVA_JARS if Path(j).is_file()), None)
    javac, java = shutil.which("javac"), shutil.which("java")
    why = None
    if jar is None:
        why = "guava.jar not found (Debian: libguava-java)"
    elif not javac or not java:
        why = "javac/java not found (Debian: default-jdk-headless)"
    if why is not None or jar is None or javac is None:
        oracle_missing("Guava oracle", why or "javac/java not found")
    d = tmp_path_factory.mktemp("guava")
    (d / "GuavaOracle.java").write_text(JAVA_ORACLE)
    subprocess.run([javac, "-cp", jar, "GuavaOracle.java"], cwd=d, check=True, timeout=120)
    (d / "classpath").write_text(f"{jar}{os.pathsep}{d}")
    return d


def run_guava(d: Path, pairs: list[tuple[int, int]]) -> list[int]:
    cp = (d / "classpath").read_text()
    proc = subprocess.run([shutil.which("java") or "java", "-cp", cp, "GuavaOracle"],
                          input="".join(f"{k} {b}\n" for k, b in pairs), capture_output=True,
                          text=True, check=True, timeout=120)
    return [int(x) for x in proc.stdout.split()]


def random_pairs(n: int, seed: int) -> list[tuple[int, int]]:
    rnd = random.Random(seed)
    pairs = [(2687259751451158933, 1000000007), (-1, 100), (0, 1), ((1 << 63) - 1, (1 << 31) - 1),
             (-(1 << 63), 7)]
    while len(pairs) < n:
        k = rnd.getrandbits(64) - (1 << 63) if rnd.random() < 0.8 else rnd.randrange(-1000, 1000)
        b = rnd.choice([rnd.randrange(1, 100), rnd.randrange(1, 1 << 16), rnd.randrange(1, 1 << 31)])
        pairs.append((k, b))
    return pairs


@pytest.mark.oracle
def test_live_guava(guava_oracle: Path) -> None:
    pairs = random_pairs(10_000, seed=2026)
    keys = [k for k, _ in pairs[:2000]]
    fixed = [(k, b) for b in (10, 1000, 123457) for k in keys]
    want = run_guava(guava_oracle, pairs + fixed)           # one JVM run
    assert len(want) == len(pairs) + len(fixed)
    assert [guava.consistent_hash(k, b) for k, b in pairs] == want[:len(pairs)]
    got = [guava.consistent_hash_array(keys, b).tolist() for b in (10, 1000, 123457)]
    assert sum(got, []) == want[len(pairs):]


@given(st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=13), st.integers(1, (1 << 31) - 1))
def test_array_lanes_equal_scalar(keys: list[int], buckets: int) -> None:
    # The batch kernel interleaves keys in groups of 4; every length and tail must agree.
    assert guava.consistent_hash_array(keys, buckets).tolist() == [guava.consistent_hash(k, buckets) for k in keys]


def test_array_overflow_key_in_every_lane() -> None:
    k = 2687259751451158933
    for pos in range(6):
        keys = [1, 2, 3, 4, 5, 6]
        keys[pos] = k
        got = guava.consistent_hash_array(keys, 1000000007).tolist()
        assert got[pos] == 195
        assert got == [guava.consistent_hash(x, 1000000007) for x in keys]
