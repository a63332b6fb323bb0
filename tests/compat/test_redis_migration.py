"""shardhash.compat.redis: Redis Cluster during a slot migration (MIGRATING /
IMPORTING, ``-ASK`` redirects), routers from ``CLUSTER NODES``, and a reshard
as ``CLUSTER SETSLOT`` steps.

Live oracle: a three-master redis-server cluster on loopback (private ports,
no persistence).  Keys are written through the router (a wrong owner would
answer ``-MOVED``); a slot is then moved halfway and every key is read from
the node the router names: the owner answers for the keys it still holds and
sends ``-ASK`` to the node :meth:`ClusterRouter.ask_target` names for the
others.  Then :func:`reshard_steps` finishes the move and the cluster's own
``CLUSTER NODES`` must give the planned router.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from shardhash import plan
from shardhash.compat import redis
from shardhash.routing import load_router
from tests._support import oracle_missing
from tests.compat._live import _accepts, _daemon_pid, free_port


class Conn:
    """A minimal RESP client: one command at a time, full replies."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = b""

    def close(self) -> None:
        self.sock.close()

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise RuntimeError("redis closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise RuntimeError("redis closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _reply(self) -> Any:
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RedisError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RuntimeError(f"unexpected reply {line!r}")

    def __call__(self, *args: str | bytes) -> Any:
        parts = [a.encode() if isinstance(a, str) else a for a in args]
        self.sock.sendall(b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))
        return self._reply()


class RedisError(str):
    pass


@contextmanager
def cluster(masters: int, workdir: Path) -> Iterator[list[int]]:
    """``masters`` cluster-enabled redis-servers on loopback, slots split
    evenly (redis.even_slot_ranges), met and stable; yields their ports."""
    if shutil.which("redis-server") is None:
        oracle_missing("redis-server", "not installed")
    ports = [free_port() for _ in range(masters)]
    bus = {p: free_port() for p in ports}
    pids: list[int] = []
    try:
        for p in ports:
            subprocess.run(["redis-server", "--port", str(p), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                            "--cluster-config-file", f"{workdir}/nodes-{p}.conf", "--cluster-port", str(bus[p]),
                            "--save", "", "--appendonly", "no", "--daemonize", "yes", "--dir", str(workdir),
                            "--pidfile", f"{workdir}/r{p}.pid", "--logfile", f"{workdir}/r{p}.log"], check=True)
        for p in ports:
            pids.append(_daemon_pid(workdir / f"r{p}.pid", ready=partial(_accepts, p)))
        ranges = redis.even_slot_ranges([f"127.0.0.1:{p}" for p in ports])
        conns = [Conn(p) for p in ports]
        for c, (lo, hi) in zip(conns, [r[0] for r in ranges.values()]):
            assert c("CLUSTER", "ADDSLOTSRANGE", str(lo), str(hi)) == "OK"
        for p in ports[1:]:
            assert conns[0]("CLUSTER", "MEET", "127.0.0.1", str(p), str(bus[p])) == "OK"
        deadline = time.monotonic() + 60
        while True:
            infos = [c("CLUSTER", "INFO") for c in conns]
            if all(b"cluster_state:ok" in i and b"cluster_known_nodes:%d" % masters in i for i in infos):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the cluster did not converge: {infos[0]!r:.200}")
            time.sleep(0.1)
        for c in conns:
            c.close()
        yield ports
    finally:
        for pid in pids:
            os.kill(pid, 15)


def _nodes(port: int) -> str:
    c = Conn(port)
    try:
        text = c("CLUSTER", "NODES")
        return text.decode() if isinstance(text, bytes) else str(text)
    finally:
        c.close()


@pytest.mark.oracle
def test_live_slot_migration_and_reshard(tmp_path: Path) -> None:
    with cluster(3, tmp_path) as ports:
        names = [f"127.0.0.1:{p}" for p in ports]
        conns = {n: Conn(p) for n, p in zip(names, ports)}
        ids = {n: conns[n]("CLUSTER", "MYID").decode() for n in names}
        steady = redis.from_cluster_nodes(_nodes(ports[0]))
        assert steady.slot_ranges == redis.even_slot_ranges(names) and not steady.migrating
        keys = [f"user:{i}" for i in range(3000)] + [f"{{user:7}}.cart{i}" for i in range(40)]
        for k in keys:  # through the router: a wrong node would answer -MOVED
            assert conns[steady.route(k)]("SET", k, k) == "OK", k
        # move the slot of {user:7} (owned by the first master) halfway to the second
        slot = redis.keyslot("{user:7}")
        src, dst = steady.route("{user:7}"), names[(names.index(steady.route("{user:7}")) + 1) % 3]
        assert conns[dst]("CLUSTER", "SETSLOT", str(slot), "IMPORTING", ids[src]) == "OK"
        assert conns[src]("CLUSTER", "SETSLOT", str(slot), "MIGRATING", ids[dst]) == "OK"
        in_slot = list(conns[src]("CLUSTER", "GETKEYSINSLOT", str(slot), "1000"))
        assert len(in_slot) >= 40
        moved = in_slot[: len(in_slot) // 2]
        host, _, port = dst.rpartition(":")
        assert conns[src]("MIGRATE", host, port, "", "0", "5000", "KEYS", *moved) == "OK"
        mid = redis.from_cluster_nodes(_nodes(ports[names.index(src)]))
        assert mid.migrating == {slot: (src, dst)}
        asked = served = 0
        for k in keys:
            reply = conns[mid.route(k)]("GET", k)
            if isinstance(reply, RedisError):
                assert reply.startswith("ASK "), reply
                _, rslot, target = reply.split()
                assert int(rslot) == slot and mid.ask_target(k) == target == dst
                assert k.encode() in moved
                asked += 1
            else:
                assert reply == k.encode()
                assert k.encode() not in moved
                served += 1
        assert asked == len(moved) and served == len(keys) - len(moved)
        want_ask = [mid.shards.index(dst) if redis.keyslot(k) == slot else -1 for k in keys]
        assert mid.ask_targets(keys).tolist() == want_ask
        assert load_router(mid.to_json()) == mid
        # finish with the planned steps: that slot and its neighbour end on dst
        new = redis.ClusterRouter(_move(steady, [slot, slot + 1], dst))
        steps = redis.reshard_steps(steady, new, ids)
        assert {tuple(c[:2]) for _, c in steps} >= {("CLUSTER", "SETSLOT"), ("MIGRATE", host)}
        _run(steps, conns, ids)
        for n in names:  # every master learns the new owners
            for s in (slot, slot + 1):
                conns[n]("CLUSTER", "SETSLOT", str(s), "NODE", ids[dst])
        after = redis.from_cluster_nodes(_nodes(ports[2]))
        assert after.slot_ranges == new.slot_ranges and not after.migrating
        for k in keys:
            assert conns[after.route(k)]("GET", k) == k.encode(), k
        assert {m.destination for m in plan.moved_ranges(steady, new)} == {dst}
        for c in conns.values():
            c.close()


def _move(r: redis.ClusterRouter, slots: list[int], dst: str) -> dict[str, list[tuple[int, int]]]:
    table = [r.shards[int(i)] for i in r.slot_table.tolist()]
    for s in slots:
        table[s] = dst
    out: dict[str, list[tuple[int, int]]] = {n: [] for n in r.shards}
    for s, n in enumerate(table):
        if out[n] and out[n][-1][1] == s - 1:
            out[n][-1] = (out[n][-1][0], s)
        else:
            out[n].append((s, s))
    return out


def _run(steps: list[tuple[str, list[str]]], conns: dict[str, Conn], ids: dict[str, str]) -> None:
    """Execute reshard_steps: the GETKEYSINSLOT / MIGRATE pair loops until the slot is empty."""
    i = 0
    while i < len(steps):
        node, cmd = steps[i]
        if cmd[:2] == ["CLUSTER", "GETKEYSINSLOT"]:
            migrate_node, migrate = steps[i + 1]
            while True:
                got = conns[node](*cmd)
                if not got:
                    break
                assert conns[migrate_node](*migrate, *got) == "OK"
            i += 2
            continue
        assert conns[node](*cmd) == "OK", (node, cmd)
        i += 1


def test_migrating_is_checked_and_documented() -> None:
    base = {"a": [(0, 8191)], "b": [(8192, 16383)], "c": []}
    r = redis.ClusterRouter(base, migrating={100: "c"})
    assert r.migrating == {100: ("a", "c")}
    key = next(f"k{i}" for i in range(100_000) if redis.keyslot(f"k{i}") == 100)
    assert r.route(key) == "a" and r.ask_target(key) == "c" and r.ask_target("foo") is None
    assert load_router(r.to_json()) == r
    assert "migrating" not in redis.ClusterRouter(base).to_dict()["params"]
    assert redis.ClusterRouter(base) != r
    with pytest.raises(ValueError, match="not a node of the cluster"):
        redis.ClusterRouter(base, migrating={100: "z"})
    with pytest.raises(ValueError, match="already owned by 'a'"):
        redis.ClusterRouter(base, migrating={100: "a"})
    with pytest.raises(ValueError, match="not a slot"):
        redis.ClusterRouter(base, migrating={16384: "c"})
    with pytest.raises(ValueError, match="not a CLUSTER NODES line"):
        redis.from_cluster_nodes("garbage")


def test_reshard_steps_order() -> None:
    old = redis.ClusterRouter({"a:1": [(0, 16383)], "b:2": []})
    new = redis.ClusterRouter({"a:1": [(0, 16381)], "b:2": [(16382, 16383)]})
    steps = redis.reshard_steps(old, new, {"a:1": "A", "b:2": "B"})
    assert len(steps) == 12
    assert steps[:6] == [
        ("b:2", ["CLUSTER", "SETSLOT", "16382", "IMPORTING", "A"]),
        ("a:1", ["CLUSTER", "SETSLOT", "16382", "MIGRATING", "B"]),
        ("a:1", ["CLUSTER", "GETKEYSINSLOT", "16382", "100"]),
        ("a:1", ["MIGRATE", "b", "2", "", "0", "5000", "KEYS"]),
        ("b:2", ["CLUSTER", "SETSLOT", "16382", "NODE", "B"]),
        ("a:1", ["CLUSTER", "SETSLOT", "16382", "NODE", "B"]),
    ]
    assert redis.reshard_steps(old, old) == []


def test_frozen_migration_snapshot() -> None:
    from tests._support import VECTORS

    text = (VECTORS / "compat" / "redis_migration.tsv").read_text()
    nodes = "\n".join(ln.split("\t", 1)[1] for ln in text.splitlines() if ln.startswith("# nodes\t"))
    rows = [ln.split("\t") for ln in text.splitlines() if ln and not ln.startswith("#")][1:]
    r = redis.from_cluster_nodes(nodes)
    assert len(r.migrating) == 1
    (slot, (src, dst)), = r.migrating.items()
    asked = 0
    for key, reply in rows:
        if reply == "served":
            continue
        assert reply == f"ASK {slot} {r.ask_target(key)}" and r.route(key) == src, key
        asked += 1
    in_slot = [k for k, _ in rows if redis.keyslot(k) == slot]
    assert 0 < asked < len(in_slot)  # halfway: some keys moved, some still served by the owner
    assert all(r.ask_target(k) is None for k, _ in rows if redis.keyslot(k) != slot)
