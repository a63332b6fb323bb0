"""shardhash.compat.ketama: the four ketama flavours.

Golden vectors: tests/vectors/compat/ketama_uhashring.tsv (uhashring's own
answers) and ketama_counts.tsv (published libmemcached / uhashring point
counts).  The live test compares against the installed uhashring over
several node sets and weights; every flavour is also checked against the
pure-Python reference built from the flavours' descriptions.
"""

from __future__ import annotations

import bisect
import hashlib
import random
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest

from shardhash import plan
from shardhash._reference import ketama as ref
from shardhash.compat import ketama
from shardhash.routing import load_router
from tests._support import VECTORS as VECTOR_ROOT
from tests._support import oracle_missing
from tests.compat._live import twemproxy_placement

VECTORS = VECTOR_ROOT / "compat"

CONFIGS = {  # as in tools/make_compat_vectors.py
    "three": (["10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211"], [1, 1, 1]),
    "weighted5": ([f"10.0.0.{i}:11211" for i in range(1, 6)], [439, 81, 945, 259, 301]),
    "named": (["cache-a", "cache-b", "cache-c", "cache-d"], [5, 1, 1, 3]),
    "equal25": ([f"s{i}" for i in range(25)], [1] * 25),
}


def _uhashring() -> Any:
    try:
        import uhashring
    except ImportError as e:
        oracle_missing("uhashring", str(e))
    return uhashring


def _tsv(name: str) -> list[list[str]]:
    rows = []
    for line in (VECTORS / name).read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        rows.append(line.split("\t"))
    return rows[1:]


def test_uhashring_golden_vectors() -> None:
    rows = _tsv("ketama_uhashring.tsv")
    assert len(rows) > 300
    routers = {cid: ketama.KetamaRouter(n, w, "uhashring") for cid, (n, w) in CONFIGS.items()}
    for cid, key, node, key_hash in rows:
        r = routers[cid]
        assert r.route(key) == node, (cid, key)
        assert r.key_hash(key) == int(key_hash)
    for cid, r in routers.items():
        sub = [(k, n) for c, k, n, _ in rows if c == cid]
        assert [r.shards[i] for i in r.route_many([k for k, _ in sub])] == [n for _, n in sub]


def test_published_point_counts() -> None:
    for flavor, weights, server, md5s in _tsv("ketama_counts.tsv"):
        if "*" in weights:
            w, n = weights.split("*")
            ws = [int(w)] * int(n)
        else:
            ws = [int(x) for x in weights.split(",")]
        assert ketama.md5_counts(ws, flavor)[int(server)] == int(md5s), (flavor, weights)
        r = ketama.KetamaRouter([f"h{i}:11211" for i in range(len(ws))], ws, flavor)
        assert r.md5_counts[int(server)] == int(md5s)


def test_equal_weight_39_point_counts() -> None:
    # compat-facts: with n equal servers libmemcached and twemproxy give 39 md5s below 200 exactly for
    got = [n for n in range(1, 201) if ketama.md5_counts([1] * n, "libmemcached")[0] == 39]
    assert got == [25, 47, 50, 55, 61, 71, 94, 100, 107, 109, 110, 115, 122, 142, 159, 163, 188, 193, 200]
    assert all(ketama.md5_counts([1] * n, "uhashring")[0] == 40 for n in range(1, 201))
    r = ketama.KetamaRouter([f"s{i}" for i in range(50)], flavor="twemproxy")
    assert len(r.points) == 50 * 39 * 4


def test_point_names_drop_default_port() -> None:
    keys = [f"key{i}" for i in range(5000)]
    mc = ketama.KetamaRouter(["10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211"], flavor="libmemcached")
    plain = ketama.KetamaRouter(["10.0.0.1", "10.0.0.2", "10.0.0.3"], flavor="libketama")
    kt = ketama.KetamaRouter(["10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211"], flavor="libketama")
    assert (mc.route_many(keys) == plain.route_many(keys)).all()  # same point names, 40 md5s each
    assert (mc.route_many(keys) != kt.route_many(keys)).mean() > 0.3  # ":11211" moves many keys
    other = ketama.KetamaRouter([("10.0.0.1", 11212), ("10.0.0.2", 11211)], flavor="libmemcached")
    assert other.shards == ("10.0.0.1:11212", "10.0.0.2:11211")


@pytest.mark.parametrize("flavor", ketama.FLAVORS)
def test_matches_reference(flavor: str) -> None:
    rng = random.Random(ketama.FLAVORS.index(flavor) + 40)
    for _ in range(3):
        n = rng.randrange(1, 9)
        nodes = [f"10.2.{rng.randrange(9)}.{i}:{rng.choice([11211, 11300])}" for i in range(n)]
        w = [rng.randrange(1, 300) for _ in range(n)]
        r = ketama.KetamaRouter(nodes, w, flavor, key_hash="md5")
        names = [ketama._point_name(x, flavor) for x in nodes]
        pts = ref.ketama_points(names, w, flavor)
        assert len(pts) == (len(r.points) if flavor != "uhashring" else len(pts))
        keys = [f"u{rng.randrange(10**9)}" for _ in range(150)]
        expect = [ref.ketama_route(pts, flavor, int.from_bytes(hashlib.md5(k.encode()).digest()[:4], "little"))
                  for k in keys]
        assert r.route_many(keys).tolist() == expect
        assert [r.route_index(k) for k in keys[:100]] == expect[:100]


def test_tie_and_boundary_rules() -> None:
    r_lo = ketama.KetamaRouter(["a", "b", "c"], flavor="libketama")
    r_hi = ketama.KetamaRouter(["a", "b", "c"], flavor="uhashring")
    p = r_lo.points
    # a key hash equal to a point: lower_bound takes that point, bisect_right the next one
    for i in (0, 5, len(p) - 1):
        h = int(p[i])
        assert r_lo.route_key_hashes([h])[0] == r_lo.point_owners[i]
        assert r_hi.route_key_hashes([h])[0] == r_hi.point_owners[(i + 1) % len(r_hi.points)]
    # above the last point: wrap to the first
    assert int(p[-1]) < 2**32 - 1
    assert r_lo.route_key_hashes([2**32 - 1])[0] == r_lo.point_owners[0]
    assert r_hi.route_key_hashes([int(r_hi.points[-1])])[0] == r_hi.point_owners[0]


def test_owned_ranges_agree_with_routing() -> None:
    rng = random.Random(8)
    for flavor in ketama.FLAVORS:
        r = ketama.KetamaRouter(["a:1", "b:2", "c:3", "d:4"], [3, 1, 2, 1], flavor)
        rr = r.owned_ranges()
        assert rr[0][0] == 0 and rr[-1][1] == 2**64 - 1
        assert all(a[1] + 1 == b[0] for a, b in zip(rr, rr[1:]))
        los = [lo for lo, _, _ in rr]
        probes = [rng.randrange(2**32) for _ in range(300)] + [0, 2**32 - 1] + [int(x) for x in r.points[:50]]
        for h in probes:
            s = rr[bisect.bisect_right(los, h << 32) - 1][2]
            assert s == int(r.route_key_hashes([h])[0]), (flavor, h)


def test_twemproxy_empty_key_hashes_to_zero() -> None:
    r = ketama.KetamaRouter(["a", "b", "c"], flavor="twemproxy")
    assert r.route_index(b"") == int(r.point_owners[0])
    assert r.route_many([b"", b"x", b""]).tolist()[0::2] == [int(r.point_owners[0])] * 2


def test_keys_and_documents() -> None:
    r = ketama.KetamaRouter(["a:11211", "b:11211"], {"b:11211": 3}, "libmemcached", version=2)
    assert r.weights == {"a:11211": 1, "b:11211": 3}
    assert r.route(5) == r.route("5") == r.route(b"5")
    again = load_router(r.to_json())
    assert again == r and again.flavor == "libmemcached" and again.version == 2
    u = ketama.KetamaRouter(["x", "y"], flavor="uhashring")
    assert u.route(b"k") == u.route("b'k'")  # uhashring hashes str(key)
    assert u.route_many([b"k", 7]).tolist() == [u.route_index("b'k'"), u.route_index("7")]


def test_plan_memcached_three_to_four() -> None:
    old = ketama.KetamaRouter(["m1:11211", "m2:11211", "m3:11211"], flavor="libmemcached")
    new = ketama.KetamaRouter(["m1:11211", "m2:11211", "m3:11211", "m4:11211"], flavor="libmemcached")
    keys = [f"session:{i}" for i in range(40_000)]
    rep = plan.diff(old, new, keys)
    assert 0.18 < rep.moved_fraction < 0.32
    assert rep.matrix[:, :3].trace() + rep.matrix[:, 3].sum() == rep.total  # keys only move to m4
    mr = plan.moved_ranges(old, new)
    assert {m.destination for m in mr} == {"m4:11211"}
    assert abs(sum(m.share for m in mr) - rep.moved_fraction) < 0.02


@pytest.mark.oracle
def test_live_uhashring() -> None:
    uhashring = _uhashring()
    rng = random.Random(21)
    configs = list(CONFIGS.values()) + [
        ([f"node-{i}" for i in range(12)], [rng.randrange(1, 50) for _ in range(12)]),
        (["solo"], [1]),
        ([f"10.9.0.{i}:6379" for i in range(7)], [1, 2, 3, 4, 5, 6, 7]),
    ]
    total = 0
    for nodes, weights in configs:
        ring = uhashring.HashRing({n: w for n, w in zip(nodes, weights)}, hash_fn="ketama")
        r = ketama.KetamaRouter(nodes, weights, "uhashring")
        assert sorted(set(ring.runtime._keys)) == r.points.tolist()
        keys = [f"user:{rng.randrange(10**12)}" for _ in range(2500)] + [str(i) for i in range(200)]
        expect = [ring.get_node(k) for k in keys]
        got = [r.shards[i] for i in r.route_many(keys)]
        assert got == expect
        total += len(keys)
    assert total >= 10_000


def test_bucket_index_matches_binary_search() -> None:
    from shardhash.compat import _native

    rng = np.random.default_rng(5)
    for flavor in ("libmemcached", "uhashring"):
        r = ketama.KetamaRouter([f"n{i}" for i in range(13)], list(range(1, 14)), flavor)
        h = np.concatenate([rng.integers(0, 2**32, 20_000, dtype=np.uint64).astype(np.uint32),
                            r.points, r.points - 1, r.points + 1, np.array([0, 2**32 - 1], dtype=np.uint32)])
        upper = flavor == "uhashring"
        plain = _native.ketama_lookup(r.points, r.point_owners, upper, h)
        for bits in (1, 4, 12, 16):
            idx = _native.ketama_bucket_index(r.points, bits)
            assert (_native.ketama_lookup(r.points, r.point_owners, upper, h, None, idx) == plain).all()
        side: Literal["left", "right"] = "right" if upper else "left"
        pos = np.searchsorted(r.points, h, side=side) % len(r.points)
        assert (plain == r.point_owners[pos]).all()


def test_shared_routers_across_threads() -> None:
    # Routers are immutable and the kernels release the GIL: many threads
    # hammering the same routers must all get the one-shot answers.
    from concurrent.futures import ThreadPoolExecutor

    from shardhash.compat import cassandra, redis

    keys = [f"user:{i}" for i in range(20_000)]
    kr = ketama.KetamaRouter([f"m{i}:11211" for i in range(7)], flavor="libmemcached")
    expect_k = kr.route_many(keys, threads=1)
    expect_c = cassandra.token_array([k.encode() for k in keys], threads=1)
    expect_r = redis.keyslot_array(keys, threads=1)

    def work(i: int) -> bool:
        ok = (kr.route_many(keys, threads=2) == expect_k).all()
        ok &= (cassandra.token_array([k.encode() for k in keys], threads=2) == expect_c).all()
        ok &= (redis.keyslot_array(keys, threads=2) == expect_r).all()
        return bool(ok)

    with ThreadPoolExecutor(4) as ex:
        assert all(ex.map(work, range(8)))


def test_arrow_keys_follow_each_flavours_key_rules() -> None:
    pa = pytest.importorskip("pyarrow")
    u = ketama.KetamaRouter(["a", "b", "c"], flavor="uhashring")
    raw = [b"k%d" % i for i in range(300)]
    # uhashring hashes str(key): Arrow binary keys are hashed as "b'...'", like the list
    assert (u.route_many(pa.array(raw)) == u.route_many(raw)).all()
    assert u.route_many(pa.array(raw)).tolist() == [u.route_index(k) for k in raw]
    m = ketama.KetamaRouter(["a", "b", "c"], flavor="libmemcached")
    assert (m.route_many(pa.array(raw)) == m.route_many(raw)).all()
    ints = list(range(200))
    assert (m.route_many(pa.array(ints)) == m.route_many([str(i) for i in ints])).all()
    assert (u.route_many(pa.array(ints)) == u.route_many(ints)).all()


# --------------------------------------------------------------- twemproxy


def test_twemproxy_golden_vectors() -> None:
    rows = _tsv("ketama_twemproxy.tsv")
    assert len(rows) >= 900
    by_conf: dict[tuple[str, str], list[tuple[bytes, int]]] = {}
    for key_hash, servers, key_hex, server in rows:
        by_conf.setdefault((key_hash, servers), []).append((bytes.fromhex(key_hex), int(server)))
    assert {h for h, _ in by_conf} == {"md5", "fnv1a_64"}
    for (key_hash, servers), items in by_conf.items():
        r = ketama.KetamaRouter(servers.split(","), flavor="twemproxy", key_hash=key_hash)
        keys = [k for k, _ in items]
        assert sum(1 for k in keys if any(b >= 0x80 for b in k)) > 100  # fnv1a_64's sign extension
        assert r.route_many(keys).tolist() == [s for _, s in items], key_hash
        assert [r.route_index(k) for k in keys[:100]] == [s for _, s in items[:100]]
    assert ketama.KetamaRouter(["a:1"], flavor="twemproxy").key_hash_name == "fnv1a_64"


@pytest.mark.oracle
@pytest.mark.parametrize("key_hash", ["md5", "fnv1a_64"])
def test_live_twemproxy(key_hash: str, tmp_path: Path) -> None:
    import shutil

    missing = [b for b in ("nutcracker", "redis-server") if shutil.which(b) is None]
    if missing:
        oracle_missing("twemproxy oracle", f"{', '.join(missing)} not found")
    weights = [1, 2, 3, 1]
    rng = random.Random(7)
    keys = list(dict.fromkeys(
        [f"user:{i}".encode() for i in range(1500)] +
        [bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 16))) for _ in range(1500)]))
    servers, owner = twemproxy_placement(keys, key_hash, weights, tmp_path)
    r = ketama.KetamaRouter(servers, weights, "twemproxy", key_hash=key_hash)
    assert -1 not in owner
    assert r.route_many(keys).tolist() == owner


# ------------------------------------------------------------- libmemcached

@pytest.mark.oracle
def test_live_libmemcached(tmp_path: Path) -> None:
    try:
        exe = ref.build_libmemcached_oracle(tmp_path)
    except LookupError as e:
        oracle_missing("libmemcached oracle", str(e))
    rng = random.Random(11)
    configs = [
        [("10.0.0.1", 11211, 1), ("10.0.0.2", 11211, 1), ("10.0.0.3", 11211, 1)],
        [(f"s{i}", 11211, 1) for i in range(25)],  # 39 md5s per server
        [(f"h{i}", 11211 + i % 2, w) for i, w in enumerate([439, 81, 945, 259, 301])],
        [(f"10.1.0.{i}", 11211, 1) for i in range(50)],
    ]
    total = 0
    for conf in configs:
        keys = [f"key{i}".encode() for i in range(1500)] + \
            [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 20))) for _ in range(1500)]
        r = ketama.KetamaRouter([(h, p) for h, p, _ in conf], [w for _, _, w in conf], "libmemcached")
        assert r.route_many(keys).tolist() == ref.libmemcached_servers(exe, conf, keys)
        total += len(keys)
    assert total >= 10_000


def test_libmemcached_golden_vectors() -> None:
    rows = _tsv("ketama_libmemcached.tsv")
    assert len(rows) >= 400
    groups: dict[str, list[tuple[bytes, int]]] = {}
    for _cid, servers, key_hex, server in rows:
        groups.setdefault(servers, []).append((bytes.fromhex(key_hex), int(server)))
    for servers, items in groups.items():
        conf = [s.rsplit(":", 2) for s in servers.split(",")]
        r = ketama.KetamaRouter([(h, int(p)) for h, p, _ in conf], [int(w) for _, _, w in conf], "libmemcached")
        assert r.route_many([k for k, _ in items]).tolist() == [s for _, s in items], servers[:40]


def test_libketama_published_test_vector() -> None:
    # libketama's own regression test (RJ/ketama libketama/test.sh): for the
    # repository's ketama.servers and the keys "0".."999999", the lines
    # "<key hash> <point> <server>" printed by ketama_test (after one empty
    # line from ketama_error()) have the md5 5672b131391f5aa2b280936aec1eea74.
    from shardhash.compat import _native

    servers = {"10.0.1.1:11211": 600, "10.0.1.2:11211": 300, "10.0.1.3:11211": 200, "10.0.1.4:11211": 350,
               "10.0.1.5:11211": 1000, "10.0.1.6:11211": 800, "10.0.1.7:11211": 950, "10.0.1.8:11211": 100}
    r = ketama.KetamaRouter(list(servers), list(servers.values()), "libketama")
    data, offsets = _native.pack_keys([str(i) for i in range(1_000_000)])
    h = _native.ketama_hash_offsets(data, offsets)
    idx = np.searchsorted(r.points, h, side="left")
    idx[idx == len(r.points)] = 0
    assert (r.point_owners[idx] == r.route_key_hashes(h)).all()
    names = np.array(r.shards)[r.point_owners[idx]]
    text = "\n" + "".join(f"{a} {b} {c}\n" for a, b, c in zip(h.tolist(), r.points[idx].tolist(), names.tolist()))
    assert hashlib.md5(text.encode()).hexdigest() == "5672b131391f5aa2b280936aec1eea74"
