"""``plan.diff(..., replicas=n)``: replica movement, checked against a
brute-force count over ``route_replicas``; planners keep zones; the command
line's ``--replicas`` and ``--zones``."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shardhash import plan, routing
from shardhash.routing import Router
from tests.cli.test_cli import fails, run


def _brute(old: Router, new: Router, keys: list[Any], n: int) -> tuple[int, Counter[str], Counter[str]]:
    moved = 0
    into: Counter[str] = Counter()
    out: Counter[str] = Counter()
    for k in keys:
        a, b = old.route_replicas(k, n), new.route_replicas(k, n)
        for s in b:
            if s not in a:
                moved += 1
                into[s] += 1
        for s in a:
            if s not in b:
                out[s] += 1
    return moved, into, out


ZONES = {"a": "z1", "b": "z1", "c": "z2", "d": "z3", "e": "z2"}

PAIRS: dict[str, Callable[[], tuple[Router, Router]]] = {
    "ring_add": lambda: (routing.RingRouter(list("abcd"), vnodes=32),
                         routing.RingRouter(list("abcde"), vnodes=32)),
    "jump_remove_last": lambda: (routing.JumpRouter(list("abcde")), routing.JumpRouter(list("abcd"))),
    "rendezvous_remove_middle": lambda: (routing.RendezvousRouter(list("abcde")),
                                         routing.RendezvousRouter(list("abde"))),
    "maglev_to_ring": lambda: (routing.MaglevRouter(list("abcd")), routing.RingRouter(list("dcba"), vnodes=8)),
    "bucket_zoned": lambda: (routing.BucketRouter(list("abcd"), buckets=64).with_zones(
        {s: ZONES[s] for s in "abcd"}), routing.BucketRouter(list("abcd"), buckets=64)),
    "ring_zoned_add": lambda: (routing.RingRouter(list("abcd"), vnodes=16).with_zones({s: ZONES[s] for s in "abcd"}),
                               routing.RingRouter(list("abcde"), vnodes=16).with_zones(ZONES)),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
@pytest.mark.parametrize("n", [1, 2, 3])
def test_replica_counts_match_brute_force(name: str, n: int) -> None:
    old, new = PAIRS[name]()
    keys: list[Any] = [*range(1500), *(f"user-{i}" for i in range(500))]
    rep = plan.diff(old, new, keys, replicas=n, chunk_size=700)
    moved, into, out = _brute(old, new, keys, n)
    assert rep.replicas == n and rep.replica_total == len(keys) * n
    assert rep.replica_moved == moved
    assert rep.replica_in is not None and rep.replica_out is not None
    assert dict(zip(rep.new_shards, rep.replica_in.tolist())) == {s: into[s] for s in new.shards}
    assert dict(zip(rep.old_shards, rep.replica_out.tolist())) == {s: out[s] for s in old.shards}
    # the primary counts are those of a diff without replicas
    plain = plan.diff(old, new, keys)
    assert rep.moved == plain.moved and (rep.matrix == plain.matrix).all()
    d = rep.to_dict()["replicas"]
    assert d["moved"] == moved and d["placements"] == len(keys) * n
    assert "replicas:" in rep.summary()
    if n == 1:
        assert rep.replica_moved == rep.moved


def test_adding_a_ring_shard_moves_replicas_only_onto_it() -> None:
    old = routing.RingRouter(list("abcd"), vnodes=64)
    new, _ = plan.add_shards(old, "e")
    rep = plan.diff(old, new, np.arange(20000), replicas=3)
    assert rep.replica_in is not None
    assert rep.replica_in.tolist() == [0, 0, 0, 0, rep.replica_moved]
    assert 0.15 < rep.replica_moved_fraction < 0.30  # about 3/5 of keys gain e, one placement each


def test_diff_without_replicas_has_no_replica_section() -> None:
    r = routing.JumpRouter(list("abc"))
    rep = plan.diff(r, r, range(100))
    assert rep.replicas is None and "replicas" not in rep.to_dict() and rep.replica_moved_fraction == 0.0


def test_replica_diff_refusals() -> None:
    j = routing.JumpRouter(list("abc"))
    with pytest.raises(ValueError, match="replicas = 4: the old router has 3"):
        plan.diff(j, routing.JumpRouter(list("abcd")), range(10), replicas=4)
    with pytest.raises(ValueError, match="replicas = 0"):
        plan.diff(j, j, range(10), replicas=0)
    bad: Any = "2"
    with pytest.raises(TypeError, match="replicas must be an int"):
        plan.diff(j, j, range(10), replicas=bad)
    rr = routing.RangeRouter([5], ["a", "b"])
    with pytest.raises(TypeError, match="the new router .RangeRouter. has no replica lists"):
        plan.diff(j, rr, range(10), replicas=1)


def test_planners_keep_zones() -> None:
    r = routing.RingRouter(list("abcd"), vnodes=16).with_zones({s: ZONES[s] for s in "abcd"})
    new, _ = plan.add_shards(r, "e", zones={"e": "z2"})
    assert new.zones == ZONES
    with pytest.raises(ValueError, match="give a zone for the new shard"):
        plan.add_shards(r, "e")
    with pytest.raises(ValueError, match="keeps its zone"):
        plan.add_shards(r, "e", zones={"e": "z2", "a": "z9"})
    gone, _ = plan.remove_shards(r, "b")
    assert gone.zones == {s: ZONES[s] for s in "acd"}
    heavier, _ = plan.reweight(r, {"a": 2.0})
    assert heavier.zones == r.zones
    plain, _ = plan.add_shards(routing.JumpRouter(list("ab")), "c")
    assert plain.zones is None and "zones" not in plain.to_dict()
    zoned, _ = plan.add_shards(routing.JumpRouter(list("ab")), "c", zones={"a": "x", "b": "y", "c": "x"})
    assert zoned.zones == {"a": "x", "b": "y", "c": "x"}


def test_cli_replicas_and_zones(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    run("topology", "new", "ring", "--shards", "a,b,c,d", "--zones", "a=z1,b=z1,c=z2,d=z3", "-o", a)
    assert json.loads(a.read_text())["zones"] == {s: ZONES[s] for s in "abcd"}
    assert "zones:       3" in run("topology", "show", a).stdout
    p = run("topology", "add", a, "--shards", "e", "--zones", "e=z2", "--replicas", "3", "-o", b)
    assert "(key, replica) placements" in p.stderr
    assert json.loads(b.read_text())["zones"] == ZONES
    fails("topology", "add", a, "--shards", "e", "-o", tmp_path / "c.json", match="give a zone for the new shard")
    fails("topology", "new", "jump", "--shards", "a,b", "--zones", "a=z1,b", match="expected id=zone pairs")
    out = json.loads(run("plan", a, b, "--replicas", "2", "--json").stdout)
    rep = plan.diff(routing.load_router(a.read_text()), routing.load_router(b.read_text()),
                    np.arange(1 << 18, dtype=np.int64), replicas=2)
    assert out["replicas"]["moved"] == rep.replica_moved and out["replicas"]["sampled_ids"] == 1 << 18
    assert "replicas: 2 per key" in run("plan", a, b, "--replicas", "2").stdout
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(str(i) for i in range(300)) + "\n")
    out = json.loads(run("plan", a, b, "--replicas", "2", "--ids", ids, "--id-type", "int", "--json").stdout)
    assert out["replicas"]["placements"] == 600 and "sampled_ids" not in out["replicas"]
    fails("plan", a, b, "--replicas", "9", match="replicas = 9")
