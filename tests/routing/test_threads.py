"""Threads: many readers route while the application swaps in new router versions.

Routers are immutable, so publishing a new topology is a reference swap;
every batch must equal the one-shot answer of the router object it used.
"""

from __future__ import annotations

import threading

import numpy as np

from shardhash import DirectoryRouter, JumpRouter, MaglevRouter, RingRouter
from shardhash.routing import Router


def _versions() -> list[Router]:
    names = [f"db-{i}" for i in range(12)]
    rs: list[Router] = []
    for v in range(1, 7):
        n = 6 + v
        if v % 3 == 0:
            rs.append(JumpRouter(names[:n], version=v))
        elif v % 3 == 1:
            rs.append(RingRouter(names[:n], vnodes=64, version=v))
        else:
            rs.append(DirectoryRouter(MaglevRouter(names[:n]), {"user:1": "vip"}, version=v))
    return rs


def test_route_many_while_swapping_versions() -> None:
    keys = [f"user:{i}" for i in range(20_000)]
    arr = np.array(keys, dtype=object)
    versions = _versions()
    expected = {id(r): r.route_many(keys, threads=1) for r in versions}
    current = [versions[0]]
    stop = threading.Event()
    errors: list[BaseException] = []
    checked = [0] * 8

    def swapper() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            current[0] = versions[i % len(versions)]  # publish a new version

    def reader(t: int) -> None:
        try:
            for it in range(25):
                r = current[0]
                got = r.route_many(arr if it % 2 else keys, threads=1 + (t + it) % 3)
                assert np.array_equal(got, expected[id(r)]), (t, r.version)
                h = r.hasher.hash_array(arr)
                assert np.array_equal(r.route_hashes(h, threads=2), expected[id(r)])
                k = (t * 997 + it * 31) % len(keys)
                assert r.route_index(keys[k]) == expected[id(r)][k]
                checked[t] += 1
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    sw = threading.Thread(target=swapper)
    readers = [threading.Thread(target=reader, args=(t,)) for t in range(8)]
    sw.start()
    for th in readers:
        th.start()
    for th in readers:
        th.join()
    stop.set()
    sw.join()
    assert not errors, errors[0]
    assert checked == [25] * 8


def test_one_router_shared_by_threads_large_batches() -> None:
    r = RingRouter([f"s{i}" for i in range(40)], vnodes=128)
    h = np.random.default_rng(3).integers(0, 2**64 - 1, 400_000, dtype=np.uint64, endpoint=True)
    want = r.route_hashes(h, threads=1)
    results: list[np.ndarray] = [np.empty(0, dtype=np.int32)] * 6

    def work(i: int) -> None:
        results[i] = r.route_hashes(h, threads=2)

    ths = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    for res in results:
        assert np.array_equal(res, want)
