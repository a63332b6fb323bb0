"""A strategy is one module: its class, its planning hooks and its document.

A toy strategy defined here (equal ranges of the hash space) is planned by
``shardhash.plan`` and driven through the command line (``topology add``,
``plan``, ``route``) without any planner or CLI code knowing it.  Also:
pickles made before ``shardhash.routing`` became a package still load, and
the raw-key routers share one typed base.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from shardhash import Hasher, cli, plan, routing
from shardhash.routing import (
    BucketRouter,
    HashRangeRouter,
    JumpRouter,
    RangeRouter,
    RawKeyRouter,
    Router,
    WatermarkRouter,
    register_router_type,
)

U64 = (1 << 64) - 1


@register_router_type("toy_equal_ranges")
class EqualRangesRouter(Router):
    """Shard ``i`` of ``n`` owns the ``i``-th of ``n`` equal ranges of the hash space."""

    def __init__(self, shards: Iterable[str], *, hasher: Hasher | None = None, version: int = 1,
                 key_prefix: int | None = None) -> None:
        super().__init__(shards, hasher=hasher, version=version, key_prefix=key_prefix)
        n = len(self.shards)
        ends = [((i + 1) << 64) // n - 1 for i in range(n)]
        self._use_ring(np.array(ends, dtype=np.uint64), np.arange(n, dtype=np.int32))
        self._finish()

    def owned_ranges(self) -> list[tuple[int, int, int]]:
        n = len(self.shards)
        return [((i << 64) // n, ((i + 1) << 64) // n - 1, i) for i in range(n)]

    def with_shards(self, shards: Sequence[str], *, weights: Mapping[str, float] | None = None,
                    tokens: Mapping[str, Sequence[int]] | None = None,
                    version: int | None = None) -> EqualRangesRouter:
        return EqualRangesRouter(list(shards), hasher=self.hasher,
                                 version=self.version + 1 if version is None else version)


def test_the_toy_strategy_routes_by_its_ranges() -> None:
    r = EqualRangesRouter(["a", "b", "c", "d"])
    assert r.route_hashes([0, (1 << 62) - 1, 1 << 62, U64]).tolist() == [0, 0, 1, 3]
    assert routing.load_router(r.to_json()) == r
    assert pickle.loads(pickle.dumps(r)) == r


def test_plan_uses_the_toy_strategy_hooks() -> None:
    old = EqualRangesRouter(["a", "b"])
    new, steps = plan.add_shards(old, "c", max_step_share=0.5)
    assert isinstance(new, EqualRangesRouter) and new.shards == ("a", "b", "c") and new.version == 2
    moved = plan.moved_ranges(old, new)
    assert all(m.kind == "range" and m.exact for m in moved)
    # a third of the space changes owner ([1/3, 1/2) from a to b, [2/3, 1) from b to c)
    assert sum(m.share for m in moved) == pytest.approx(1 / 2)
    assert sum(s.share for s in steps) == pytest.approx(1 / 2)
    rep = plan.diff(old, new, np.arange(20_000))
    assert rep.moved_fraction == pytest.approx(0.5, abs=0.02)
    back, _ = plan.remove_shards(new, "c")
    assert back.shards == ("a", "b") and back.version == 3
    with pytest.raises(ValueError, match="no planner for"):
        plan.add_shards(RangeRouter([10], ["a", "b"]), "c")


def _cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> str:
    capsys.readouterr()
    assert cli.main([str(a) for a in args]) == 0
    return capsys.readouterr().out


def test_the_command_line_plans_and_routes_the_toy_strategy(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old_path, new_path = tmp_path / "old.json", tmp_path / "new.json"
    old = EqualRangesRouter(["a", "b"]).with_key_type("int")
    old_path.write_text(old.to_json())
    _cli(capsys, "topology", "add", old_path, "--shards", "c", "--output", new_path)
    new = routing.load_router(new_path.read_text())
    assert isinstance(new, EqualRangesRouter) and new.shards == ("a", "b", "c")

    out = _cli(capsys, "plan", old_path, new_path, "--json")
    doc = json.loads(out)
    assert doc["moved_share"] == pytest.approx(0.5)
    assert {(s["source"], s["destination"]) for s in doc["steps"]} == {("a", "b"), ("b", "c")}

    show = _cli(capsys, "topology", "show", new_path)
    assert "toy_equal_ranges (EqualRangesRouter)" in show and "1 ranges" in show

    out = _cli(capsys, "route", new_path, "--key", "7", "--explain")
    h = int(new.hasher(7))
    assert f"7 -> {new.route(7)}" in out and f"{h:#018x}" in out and "hash range: [" in out

    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(str(i) for i in range(100)) + "\n")
    routed = tmp_path / "routed.csv"
    _cli(capsys, "route", new_path, ids, "--output", routed)
    rows = routed.read_text().splitlines()
    assert rows[1:] == [f"{i},{new.route(i)}" for i in range(100)]


# Pickles made when shardhash.routing was one module: a router pickles as
# shardhash.routing.load_router(document), a class by its shardhash.routing name.
OLD_PICKLES = {
    "jump": (
        b"\x80\x02cshardhash.routing\nload_router\nq\x00}q\x01(X\x06\x00\x00\x00formatq\x02X\x12\x00\x00\x00"
        b"shardhash.router/1q\x03X\x04\x00\x00\x00typeq\x04X\x04\x00\x00\x00jumpq\x05X\x07\x00\x00\x00version"
        b"q\x06K\x01X\x06\x00\x00\x00shardsq\x07]q\x08(X\x01\x00\x00\x00aq\tX\x01\x00\x00\x00bq\neX\x06\x00\x00"
        b"\x00hasherq\x0b}q\x0c(h\x02X\x12\x00\x00\x00shardhash.hasher/1q\rX\t\x00\x00\x00algorithmq\x0eX\x07"
        b"\x00\x00\x00xxh3_64q\x0fX\x04\x00\x00\x00seedq\x10K\x00X\x05\x00\x00\x00codecq\x11}q\x12(h\x02X\x11"
        b"\x00\x00\x00shardhash.codec/1q\x13X\x0c\x00\x00\x00int_encodingq\x14X\x04\x00\x00\x00le64q\x15X\r\x00"
        b"\x00\x00normalizationq\x16NX\x08\x00\x00\x00casefoldq\x17\x89X\x05\x00\x00\x00stripq\x18\x89uuX\x06"
        b"\x00\x00\x00paramsq\x19}q\x1aX\x0b\x00\x00\x00fingerprintq\x1bX@\x00\x00\x00a15b7c173fca1f010ae5b6f1"
        b"c8478c4bb230e5688036585afac74040dbaabbdfq\x1cu\x85q\x1dRq\x1e."
    ),
    "bucket": (
        b"\x80\x02cshardhash.routing\nload_router\nq\x00}q\x01(X\x06\x00\x00\x00formatq\x02X\x12\x00\x00\x00"
        b"shardhash.router/1q\x03X\x04\x00\x00\x00typeq\x04X\x06\x00\x00\x00bucketq\x05X\x07\x00\x00\x00version"
        b"q\x06K\x01X\x06\x00\x00\x00shardsq\x07]q\x08(X\x01\x00\x00\x00aq\tX\x01\x00\x00\x00bq\neX\x06\x00\x00"
        b"\x00hasherq\x0b}q\x0c(h\x02X\x12\x00\x00\x00shardhash.hasher/1q\rX\t\x00\x00\x00algorithmq\x0eX\x07"
        b"\x00\x00\x00xxh3_64q\x0fX\x04\x00\x00\x00seedq\x10K\x00X\x05\x00\x00\x00codecq\x11}q\x12(h\x02X\x11"
        b"\x00\x00\x00shardhash.codec/1q\x13X\x0c\x00\x00\x00int_encodingq\x14X\x04\x00\x00\x00le64q\x15X\r\x00"
        b"\x00\x00normalizationq\x16NX\x08\x00\x00\x00casefoldq\x17\x89X\x05\x00\x00\x00stripq\x18\x89uuX\x06"
        b"\x00\x00\x00paramsq\x19}q\x1aX\t\x00\x00\x00placementq\x1b]q\x1c(K\x00K\x01K\x01esX\x0b\x00\x00\x00"
        b"fingerprintq\x1dX@\x00\x00\x00d9050a7fa328fdc3d39a69464f3e39a667563bfe77b7be69407012b1be65473dq\x1eu"
        b"\x85q\x1fRq ."
    ),
    "hash_range": (
        b"\x80\x02cshardhash.routing\nload_router\nq\x00}q\x01(X\x06\x00\x00\x00formatq\x02X\x12\x00\x00\x00"
        b"shardhash.router/1q\x03X\x04\x00\x00\x00typeq\x04X\n\x00\x00\x00hash_rangeq\x05X\x07\x00\x00\x00"
        b"versionq\x06K\x01X\x06\x00\x00\x00shardsq\x07]q\x08(X\x01\x00\x00\x00aq\tX\x01\x00\x00\x00bq\neX\x06"
        b"\x00\x00\x00hasherq\x0b}q\x0c(h\x02X\x12\x00\x00\x00shardhash.hasher/1q\rX\t\x00\x00\x00algorithmq"
        b"\x0eX\x07\x00\x00\x00xxh3_64q\x0fX\x04\x00\x00\x00seedq\x10K\x00X\x05\x00\x00\x00codecq\x11}q\x12(h"
        b"\x02X\x11\x00\x00\x00shardhash.codec/1q\x13X\x0c\x00\x00\x00int_encodingq\x14X\x04\x00\x00\x00le64q"
        b"\x15X\r\x00\x00\x00normalizationq\x16NX\x08\x00\x00\x00casefoldq\x17\x89X\x05\x00\x00\x00stripq\x18"
        b"\x89uuX\x06\x00\x00\x00paramsq\x19}q\x1a(X\x06\x00\x00\x00splitsq\x1b]q\x1c\x8a\t\x00\x00\x00\x00"
        b"\x00\x00\x00\x80\x00aX\x06\x00\x00\x00ownersq\x1d]q\x1e(h\th\neuX\x0b\x00\x00\x00fingerprintq\x1fX@"
        b"\x00\x00\x0088fe91bf495aabc7a6852d2990a3ca888da94bf3387bff923da96aca82bf61bfq u\x85q!Rq\"."
    ),
}
OLD_CLASS_PICKLE = b"\x80\x02cshardhash.routing\nJumpRouter\nq\x00."


def test_pickles_from_the_single_module_still_load() -> None:
    expected = {
        "jump": JumpRouter(["a", "b"]),
        "bucket": BucketRouter(["a", "b"], ["a", "b", "b"]),
        "hash_range": HashRangeRouter([2**63], ["a", "b"]),
    }
    for name, data in OLD_PICKLES.items():
        r = pickle.loads(data)
        assert r == expected[name] and r.fingerprint == expected[name].fingerprint
        assert pickle.dumps(expected[name], protocol=2) == data  # and new pickles are the same bytes
    assert pickle.loads(OLD_CLASS_PICKLE) is JumpRouter
    assert pickle.dumps(JumpRouter, protocol=2) == OLD_CLASS_PICKLE


def test_public_objects_keep_their_import_path() -> None:
    for name in routing.__all__:
        obj = getattr(routing, name)
        if (isinstance(obj, type) or callable(obj)) and obj.__module__ != "shardhash.routing._kernels":  # compiled
            assert obj.__module__ == "shardhash.routing", name


def test_document_types_are_the_internal_names() -> None:
    types = routing.router_types()
    assert types["bucket"] is BucketRouter and types["hash_range"] is HashRangeRouter
    assert BucketRouter.type_name == "bucket" and HashRangeRouter.type_name == "hash_range"


def test_bucket_router_default_placement_is_balanced() -> None:
    r = BucketRouter(["a", "b", "c"])
    assert r.bucket_count == 4096
    assert np.bincount(r.placement).tolist() == [1366, 1365, 1365]
    assert list(r.placement) == sorted(r.placement)  # contiguous blocks in shard order
    assert BucketRouter(["a", "b", "c"], buckets=4096) == r
    r8 = BucketRouter(["a", "b", "c"], buckets=8)
    assert r8.placement_ids == ("a", "a", "a", "b", "b", "b", "c", "c")
    assert routing.load_router(r8.to_json()) == r8
    # an explicit placement document loads as before
    explicit = BucketRouter(["a", "b"], ["b", "a", "a"])
    assert routing.load_router(explicit.to_dict()).placement_ids == ("b", "a", "a")
    weighted = BucketRouter.balanced(["a", "b"], 6, weights={"b": 2.0})
    assert weighted.placement_ids == ("a", "a", "b", "b", "b", "b")
    with pytest.raises(ValueError, match="either placement or buckets"):
        BucketRouter(["a"], ["a"], buckets=4)
    with pytest.raises(ValueError, match="fewer than the 3 shards"):
        BucketRouter(["a", "b", "c"], buckets=2)
    with pytest.raises(TypeError, match="buckets must be an int"):
        BucketRouter(["a"], buckets="4")  # type: ignore[arg-type]  # the wrong type on purpose


def test_raw_key_routers_share_one_base() -> None:
    from shardhash.compat import cassandra, citus, ketama, mongo, postgres, redis, vitess

    classes: list[type[Router]] = [
        RangeRouter, WatermarkRouter, cassandra.TokenRouter, citus.CitusRouter, ketama.KetamaRouter,
        mongo.HashedChunkRouter, postgres.HashPartitionRouter, redis.ClusterRouter, vitess.VitessRouter,
    ]
    for cls in classes:
        assert issubclass(cls, RawKeyRouter), cls
    r = redis.ClusterRouter(redis.even_slot_ranges(["a", "b"]))
    assert not r.routes_on_hash
    with pytest.raises(TypeError, match="routes slots, not shardhash hashes: use route_many"):
        r.route_hashes(np.zeros(2, dtype=np.uint64))
    with pytest.raises(TypeError, match="routes slots, not shardhash hashes"):
        r.route_hash(1)
    rr = RangeRouter([10], ["a", "b"])
    with pytest.raises(TypeError, match="RangeRouter routes on raw keys, not on hashes; use route_many"):
        rr.route_hashes([1])
    with pytest.raises(TypeError, match="RangeRouter routes on raw keys"):
        rr.route_hash(1)


def test_help_documents_the_constructor_parameters() -> None:
    import pydoc

    text = pydoc.render_doc(routing.RingRouter, renderer=pydoc.TextDoc())
    for word in ("vnodes", "256", "hasher", "version", "key_prefix"):
        assert word in text, word
    assert "buckets=4096" in pydoc.render_doc(BucketRouter, renderer=pydoc.TextDoc())


def test_every_builtin_strategy_owns_its_successor() -> None:
    four = ["a", "b", "c", "d"]
    for r in (routing.ModuloRouter(four), JumpRouter(four), routing.RingRouter(four, vnodes=8),
              routing.RendezvousRouter(four), routing.MaglevRouter(four, table_size=1009),
              BucketRouter(four, buckets=64), HashRangeRouter([2**62, 2**63, 3 * 2**62], four),
              routing.MultiProbeRouter(four), routing.BoundedLoadRouter(four, vnodes=8)):
        nxt = r.with_shards([*four, "e"])
        assert type(nxt) is type(r) and "e" in nxt.shards and nxt.version == r.version + 1
        assert nxt.hasher == r.hasher


def test_successors_keep_the_key_prefix() -> None:
    """A router that routes tuple keys on their first part must hand that to
    its successor: otherwise every composite key of the new topology routes on
    the whole tuple, which the application does not do."""
    four = ["a", "b", "c", "d"]
    builds = (lambda kp: routing.ModuloRouter(four, key_prefix=kp),
              lambda kp: JumpRouter(four, key_prefix=kp),
              lambda kp: routing.RingRouter(four, vnodes=8, key_prefix=kp),
              lambda kp: routing.RendezvousRouter(four, key_prefix=kp),
              lambda kp: routing.MaglevRouter(four, table_size=1009, key_prefix=kp),
              lambda kp: BucketRouter(four, buckets=64, key_prefix=kp),
              lambda kp: HashRangeRouter([2**62, 2**63, 3 * 2**62], four, key_prefix=kp),
              lambda kp: routing.MementoRouter(["a", "b", "c", "d"], buckets=5, removed=[2], key_prefix=kp),
              lambda kp: routing.MultiProbeRouter(four, key_prefix=kp),
              lambda kp: routing.BoundedLoadRouter(four, vnodes=8, key_prefix=kp))
    keys = [(f"tenant-{i % 37}", i) for i in range(500)]
    for build in builds:
        r = build(1)
        successors = [r.with_shards([*four, "e"]), r.with_shards(["a", "c", "d"])]
        if not isinstance(r, (routing.RendezvousRouter, routing.MultiProbeRouter)):  # planners need keys
            successors += [plan.add_shards(r, ["e"])[0], plan.remove_shards(r, ["b"])[0]]
        for nxt in successors:
            assert nxt.key_prefix == 1, type(r).__name__
            # Every key of a tenant routes where the tenant's first key does.
            assert [nxt.route(k) for k in keys] == [nxt.route((k[0], 0)) for k in keys]
