"""shardhash.compat.ketama: twemproxy's other key hashes and explicit server
names, libmemcached's non-weighted KETAMA mode, spymemcached's ketama.

Live oracles: nutcracker (twemproxy) over redis-servers on loopback, once per
``hash:`` setting, with and without ``host:port:weight name`` server names;
libmemcached compiled at test time.  Golden vectors:
tests/vectors/compat/ketama_twemproxy_hashes.tsv (live nutcracker).
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from shardhash.compat import ketama
from tests._support import VECTORS, oracle_missing
from tests.compat._live import _accepts, _daemon_pid, free_port, resp

OTHER_HASHES = ["one_at_a_time", "crc16", "crc32", "crc32a", "fnv1_64", "fnv1_32", "fnv1a_32", "hsieh",
                "murmur", "jenkins"]


def twemproxy_servers(keys: list[bytes], key_hash: str, weights: list[int], names: list[str] | None,
                      workdir: Path) -> tuple[list[str], list[int]]:
    """Where a live nutcracker (ketama, ``hash: key_hash``, ``redis: true``,
    servers ``127.0.0.1:port:weight [name]``) stores each key: the servers in
    configuration order and each key's server index (-1: no server has it)."""
    ports = [free_port() for _ in weights]
    pids: list[int] = []
    try:
        for p in ports:
            subprocess.run(["redis-server", "--port", str(p), "--bind", "127.0.0.1", "--save", "",
                            "--appendonly", "no", "--daemonize", "yes", "--dir", str(workdir),
                            "--pidfile", f"{workdir}/r{p}.pid", "--logfile", f"{workdir}/r{p}.log"], check=True)
        for p in ports:
            pids.append(_daemon_pid(workdir / f"r{p}.pid", ready=partial(_accepts, p)))
        listen = free_port()
        servers = "".join(f"   - 127.0.0.1:{p}:{w}" + (f" {names[i]}" if names else "") + "\n"
                          for i, (p, w) in enumerate(zip(ports, weights)))
        conf = (f"pool:\n  listen: 127.0.0.1:{listen}\n  hash: {key_hash}\n  distribution: ketama\n"
                "  redis: true\n  auto_eject_hosts: false\n  servers:\n" + servers)
        (workdir / "nutcracker.yml").write_text(conf)
        proxy = subprocess.Popen(["nutcracker", "-c", str(workdir / "nutcracker.yml"),
                                  "-o", str(workdir / "nutcracker.log")])
        try:
            for _ in range(400):
                try:
                    s = socket.create_connection(("127.0.0.1", listen), timeout=30)
                    break
                except OSError:
                    time.sleep(0.05)
            else:
                raise RuntimeError("nutcracker did not start: " + (workdir / "nutcracker.log").read_text()[-500:])
            with s:
                replies = resp(s, [[b"SET", k, b"1"] for k in keys])
                if not all(r == b"+OK" for r in replies):
                    raise RuntimeError(f"SET through nutcracker failed: {replies[:3]}")
        finally:
            proxy.terminate()
            proxy.wait()
        owner = [-1] * len(keys)
        for i, p in enumerate(ports):
            with socket.create_connection(("127.0.0.1", p), timeout=30) as c:
                for j, r in enumerate(resp(c, [[b"EXISTS", k] for k in keys])):
                    if r == b":1":
                        owner[j] = i
        return [f"127.0.0.1:{p}" for p in ports], owner
    finally:
        for pid in pids:
            os.kill(pid, 15)


def _need_twemproxy() -> None:
    for exe in ("nutcracker", "redis-server"):
        if shutil.which(exe) is None:
            oracle_missing("twemproxy", f"{exe} not installed")


def _keys(rng: random.Random, n: int) -> list[bytes]:
    keys = [f"user:{i}".encode() for i in range(n // 2)]
    keys += [bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 30))) for _ in range(n - n // 2)]
    keys = [k for k in keys if b" " not in k and b"\r" not in k and b"\n" not in k]  # RESP bulk strings are fine,
    return list(dict.fromkeys(keys))  # but keep them printable-safe for the logs; distinct keys


@pytest.mark.oracle
@pytest.mark.parametrize("key_hash", OTHER_HASHES)
def test_live_twemproxy_key_hashes(key_hash: str, tmp_path: Path) -> None:
    _need_twemproxy()
    rng = random.Random(key_hash)
    keys = _keys(rng, 1200)
    weights = [1, 2, 1, 3]
    servers, owner = twemproxy_servers(keys, key_hash, weights, None, tmp_path)
    assert -1 not in owner
    r = ketama.KetamaRouter(servers, weights, "twemproxy", key_hash=key_hash)
    assert r.route_many(keys).tolist() == owner
    assert [r.route_index(k) for k in keys[:300]] == owner[:300]


@pytest.mark.oracle
@pytest.mark.parametrize("key_hash", ["fnv1a_64", "md5", "murmur"])
def test_live_twemproxy_server_names(key_hash: str, tmp_path: Path) -> None:
    _need_twemproxy()
    rng = random.Random(7)
    keys = _keys(rng, 1000)
    weights = [3, 1, 1]
    names = ["cache-a", "cache-b", "redis.example:6379"]
    servers, owner = twemproxy_servers(keys, key_hash, weights, names, tmp_path)
    assert -1 not in owner
    r = ketama.KetamaRouter(servers, weights, "twemproxy", key_hash=key_hash, names=names)
    assert r.route_many(keys).tolist() == owner
    unnamed = ketama.KetamaRouter(servers, weights, "twemproxy", key_hash=key_hash)
    assert unnamed.route_many(keys).tolist() != owner  # the names, not the addresses, place the points


def _golden() -> list[list[str]]:
    lines = [ln for ln in (VECTORS / "compat" / "ketama_twemproxy_hashes.tsv").read_text().splitlines()
             if ln and not ln.startswith("#")]
    return [ln.split("\t") for ln in lines[1:]]


def test_twemproxy_hash_golden_vectors() -> None:
    rows = _golden()
    assert {r[0] for r in rows} >= set(OTHER_HASHES)
    by_conf: dict[tuple[str, str, str], list[tuple[bytes, int]]] = {}
    for key_hash, servers, names, key_hex, server in rows:
        by_conf.setdefault((key_hash, servers, names), []).append((bytes.fromhex(key_hex), int(server)))
    for (key_hash, servers, names), items in by_conf.items():
        conf = [s.rsplit(":", 1) for s in servers.split(",")]
        r = ketama.KetamaRouter([n for n, _ in conf], [int(w) for _, w in conf], "twemproxy", key_hash=key_hash,
                                names=names.split(",") if names != "-" else None)
        keys = [k for k, _ in items]
        assert r.route_many(keys).tolist() == [s for _, s in items], key_hash
        assert [r.route_index(k) for k in keys] == [s for _, s in items], key_hash


def test_other_hashes_scalar_batch_and_documents() -> None:
    rng = random.Random(3)
    keys: list[bytes | str | int] = [rng.randbytes(rng.randrange(0, 40)) for _ in range(500)]
    keys += ["ключ", "", 12345, -7]
    for key_hash in OTHER_HASHES:
        r = ketama.KetamaRouter(["a:1", "b:2", "c:3"], [1, 2, 3], "twemproxy", key_hash=key_hash,
                                names=["x", "y", "z"])
        assert r.route_many(keys).tolist() == [r.route_index(k) for k in keys]
        assert [r.route(k) for k in keys[:20]] == [r.shards[i] for i in r.route_many(keys[:20]).tolist()]
        from shardhash.routing import load_router

        again = load_router(r.to_json())
        assert again == r and again.names == ["x", "y", "z"]
    # a document without names keeps its old form
    plain = ketama.KetamaRouter(["a:1", "b:2"], flavor="twemproxy")
    assert "names" not in plain.to_dict()["params"]


def test_names_and_hashes_are_checked() -> None:
    with pytest.raises(ValueError, match="only available for the twemproxy flavor"):
        ketama.KetamaRouter(["a"], flavor="libmemcached", key_hash="murmur")
    with pytest.raises(ValueError, match="twemproxy setting"):
        ketama.KetamaRouter(["a"], flavor="libmemcached", names=["x"])
    with pytest.raises(ValueError, match="2 names for 1 nodes"):
        ketama.KetamaRouter(["a"], flavor="twemproxy", names=["x", "y"])
    with pytest.raises(ValueError, match="distinct"):
        ketama.KetamaRouter(["a", "b"], flavor="twemproxy", names=["x", "x"])
    with pytest.raises(ValueError, match="unknown key_hash"):
        ketama.KetamaRouter(["a"], flavor="twemproxy", key_hash="sha1")


# ------------------------------------------------- libmemcached: KETAMA, spymemcached


def _tool() -> Any:
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("make_fidelity_vectors",
                                                  Path(__file__).parents[2] / "tools" / "make_fidelity_vectors.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_fidelity_vectors", mod)
    spec.loader.exec_module(mod)
    return mod


def test_libmemcached_mode_golden_vectors() -> None:
    lines = [ln.split("\t") for ln in (VECTORS / "compat" / "ketama_libmemcached_modes.tsv").read_text().splitlines()
             if ln and not ln.startswith("#")][1:]
    groups: dict[tuple[str, str], list[tuple[bytes, str]]] = {}
    for mode, servers, key_hex, server, _src in lines:
        groups.setdefault((mode, servers), []).append((bytes.fromhex(key_hex), server))
    assert sum(1 for _, _, _, _, src in lines if "ketama_test_cases_spy" in src) == 99
    for (mode, servers), items in groups.items():
        conf = [s.split(":") for s in servers.split(",")]
        flavor = "spymemcached" if mode == "spy" else "libmemcached_ketama"
        r = ketama.KetamaRouter([(h, int(p)) for h, p, _ in conf], [int(w) for _, _, w in conf], flavor)
        hosts = [h for h, _, _ in conf]
        keys = [k for k, _ in items]
        assert [hosts[i] for i in r.route_many(keys).tolist()] == [s for _, s in items], (mode, servers[:40])
        assert [hosts[r.route_index(k)] for k in keys] == [s for _, s in items]


@pytest.mark.oracle
@pytest.mark.parametrize("mode", ["ketama", "spy"])
def test_live_libmemcached_modes(mode: str, tmp_path: Path) -> None:
    tool = _tool()
    try:
        exe = tool.build_libmemcached_modes(tmp_path)
    except LookupError as e:
        oracle_missing("libmemcached oracle", str(e))
    rng = random.Random(mode)
    configs = [
        [("10.0.0.1", 11211, 1), ("10.0.0.2", 11211, 1), ("10.0.0.3", 11212, 1)],
        [(f"s{i}", 11211 + i % 2, 1) for i in range(25)],  # libmemcached's float32 digest counts (spy)
        [(f"h{i}", 11211, 1) for i in range(50)],
    ]
    if mode == "spy":
        configs.append([(f"w{i}", 11211, w) for i, w in enumerate([600, 300, 200, 350, 1000, 800, 950, 100])])
    total = 0
    for conf in configs:
        keys = [f"key{i}".encode() for i in range(1000)] + \
            [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 20))) for _ in range(1000)]
        flavor = "spymemcached" if mode == "spy" else "libmemcached_ketama"
        r = ketama.KetamaRouter([(h, p) for h, p, _ in conf], [w for _, _, w in conf], flavor)
        want = tool.libmemcached_mode_servers(exe, mode, conf, keys)
        assert r.route_many(keys).tolist() == want
        assert [r.route_index(k) for k in keys[:300]] == want[:300]
        total += len(keys)
    assert total >= 6000


def test_libmemcached_ketama_refuses_weights() -> None:
    with pytest.raises(ValueError, match="KETAMA_WEIGHTED"):
        ketama.KetamaRouter(["a:11211", "b:11211"], [1, 2], "libmemcached_ketama")
    with pytest.raises(ValueError, match="one_at_a_time"):
        ketama.KetamaRouter(["a:11211"], flavor="libmemcached_ketama", key_hash="md5")
    r = ketama.KetamaRouter(["a:11211", "b:11211"], flavor="libmemcached_ketama")
    assert len(r.points) == 200 and r.key_hash_name == "one_at_a_time"
    from shardhash.routing import load_router

    assert load_router(r.to_json()) == r
    spy = ketama.KetamaRouter(["a:11211", "b:22122"], [1, 3], "spymemcached")
    assert load_router(spy.to_json()) == spy


def test_one_key_and_batch_hashes_agree_on_every_length() -> None:
    from shardhash.compat import _native
    from shardhash.compat import _twemproxy_hash as tw

    rng = random.Random(99)
    keys = [bytes(rng.randrange(256) for _ in range(n)) for n in range(0, 70) for _ in range(4)]
    data, offsets = _native.pack_keys(keys)
    for name in OTHER_HASHES:
        assert tw.hash_offsets(name, data, offsets).tolist() == [tw.hash_one(name, k) for k in keys], name
