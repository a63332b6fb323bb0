"""shardhash.compat.citus: Citus shard ranges and routing.

Citus is not installable here; its hash is PostgreSQL's 32-bit hash
(``worker_hash``), checked against frozen vectors from a real PostgreSQL
server (tests/vectors/compat/citus.tsv) and, when a server is configured,
live.  Shard ranges follow Citus' documented rule and its published
examples.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import shutil
import subprocess
import uuid
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardhash import plan
from shardhash.compat import citus
from shardhash.compat import postgres as pg
from shardhash.routing import load_router
from tests._postgres import need_postgres
from tests._support import VECTORS as VECTOR_ROOT
from tests._support import oracle_missing

VECTORS = VECTOR_ROOT / "compat"
I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1


def decode(t: str, s: str) -> Any:
    if t in ("int4", "int8"):
        return int(s)
    if t == "text":
        return json.loads(s)
    if t == "uuid":
        return uuid.UUID(s)
    return dt.date.fromisoformat(s)


def load_vectors() -> list[tuple[str, Any, int, int, int]]:
    out = []
    for line in (VECTORS / "citus.tsv").read_text(encoding="utf-8").splitlines():
        if not line or line.startswith(("#", "type\t")):
            continue
        t, v, h, n, idx = line.split("\t")
        out.append((t, decode(t, v), int(h), int(n), int(idx)))
    return out


def test_vectors() -> None:
    rows = load_vectors()
    assert len(rows) >= 100
    for t, v, h, n, idx in rows:
        assert pg.hash32(v, t) == h
        r = citus.CitusRouter([f"s{i}" for i in range(n)], t)
        assert r.route_index(v) == idx, (t, v, n)
        assert r.route_many([v]).tolist() == [idx]


def test_published_examples() -> None:
    # Ranges: Citus create_shards.c rule, examples from the reference facts
    # (n = 4 and n = 3, as pg_dist_shard shows them).
    assert citus.shard_ranges(4) == [(-2147483648, -1073741825), (-1073741824, -1),
                                     (0, 1073741823), (1073741824, 2147483647)]
    assert citus.shard_ranges(3) == [(-2147483648, -715827884), (-715827883, 715827881),
                                     (715827882, 2147483647)]
    # Citus' regression expectations (multi_utilities.out): worker_hash values.
    assert pg.hash32(123, "int4") == -205084363
    assert pg.hash32(dt.date(1997, 8, 8), "date") == -499701663


@given(st.integers(1, citus.MAX_SHARD_COUNT))
def test_shard_ranges_tile_the_hash_space(n: int) -> None:
    rs = citus.shard_ranges(n)
    assert len(rs) == n and rs[0][0] == I32_MIN and rs[-1][1] == I32_MAX
    assert all(rs[i][1] + 1 == rs[i + 1][0] for i in range(n - 1))
    widths = {hi - lo + 1 for lo, hi in rs[:-1]}
    assert widths <= {(1 << 32) // n}


@given(st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=200), st.integers(1, 300))
def test_uniform_lookup_matches_citus_index_rule(values: list[int], n: int) -> None:
    # CalculateUniformHashRangeIndex: (h - INT32_MIN) / (2**32 / n), clamped to n - 1
    r = citus.CitusRouter([f"s{i}" for i in range(n)], "int8")
    inc = (1 << 32) // n
    want = [min((pg.hash32(v, "int8") - I32_MIN) // inc, n - 1) for v in values]
    assert r.route_many(values).tolist() == want
    assert [r.route_index(v) for v in values] == want


def test_explicit_ranges_after_a_split() -> None:
    base = citus.shard_ranges(4)
    lo, hi = base[1]
    mid = (lo + hi) // 2
    ranges = [base[0], (lo, mid), (mid + 1, hi), base[2], base[3]]
    names = ["s0", "s1a", "s1b", "s2", "s3"]
    r = citus.CitusRouter(names, "text", ranges)
    old = citus.CitusRouter(["s0", "s1", "s2", "s3"], "text")
    words = [f"tenant-{i}" for i in range(20_000)]
    h = pg.hash32_array(words, "text")
    got = r.route_many(words)
    for _w, hv, g in zip(words[:500], h[:500], got[:500]):
        assert ranges[g][0] <= hv <= ranges[g][1]
    rep = plan.diff(old, r, words)
    # Only keys of the split shard s1 change shard name.
    o = old.route_many(words)
    changed = np.array([old.shards[a] != r.shards[b] for a, b in zip(o, got)])
    assert set(np.asarray(o)[changed].tolist()) == {1}
    assert rep.moved == int(changed.sum()) > 0
    # shuffled order of (shard, range) pairs routes the same
    perm = [3, 0, 4, 2, 1]
    r2 = citus.CitusRouter([names[i] for i in perm], "text", [ranges[i] for i in perm])
    assert [r2.shards[i] for i in r2.route_many(words[:1000])] == [r.shards[i] for i in got[:1000]]


def test_documents_roundtrip() -> None:
    r = citus.CitusRouter([f"s{i}" for i in range(7)], "uuid", version=3)
    back = load_router(r.to_json())
    assert isinstance(back, citus.CitusRouter)
    assert back == r and back.ranges == r.ranges and back.type == "uuid" and back.version == 3
    ids = [uuid.UUID(int=random.Random(1).getrandbits(128)) for _ in range(50)]
    assert back.route_many(ids).tolist() == r.route_many(ids).tolist()


def test_owned_ranges_cover_the_64bit_space() -> None:
    r = citus.CitusRouter([f"s{i}" for i in range(5)], "int4")
    rs = r.owned_ranges()
    assert rs[0][0] == 0 and rs[-1][1] == (1 << 64) - 1
    assert all(rs[i][1] + 1 == rs[i + 1][0] for i in range(len(rs) - 1))
    for lo, hi, s in rs:
        clo, chi = citus.shard_ranges(5)[s]
        assert (lo >> 32) - (1 << 31) == clo and (hi >> 32) - (1 << 31) == chi


@pytest.mark.oracle
def test_live_worker_hash() -> None:
    exe = shutil.which("psql")
    if not exe:
        oracle_missing("PostgreSQL oracle", "psql is not installed")
    dsn = need_postgres(psycopg=False)
    rnd = random.Random(77)
    values = [rnd.getrandbits(64) - (1 << 63) for _ in range(10_000)]
    sql = ("SELECT hashint8(v) FROM unnest('{" + ",".join(map(str, values)) +
           "}'::int8[]) WITH ORDINALITY AS t(v, i) ORDER BY i;")
    proc = subprocess.run([exe, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-f", "-"],
                          input=sql, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    want = [int(x) for x in proc.stdout.split()]
    assert pg.hash32_array(values, "int8").tolist() == want
    r = citus.CitusRouter([f"s{i}" for i in range(32)], "bigint")
    inc = (1 << 32) // 32
    assert r.route_many(values).tolist() == [min((h - I32_MIN) // inc, 31) for h in want]
