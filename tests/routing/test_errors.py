"""Bad input to routers: a clear TypeError/ValueError/OverflowError naming what and where."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shardhash.routing import (
    BucketRouter,
    DirectoryRouter,
    HashRangeRouter,
    JumpRouter,
    MaglevRouter,
    ModuloRouter,
    RangeRouter,
    RendezvousRouter,
    RingRouter,
    Router,
    WatermarkRouter,
    jump_hash,
    jump_hash_array,
    load_router,
)
from tests._support import ill_typed

SIMPLE = [ModuloRouter, JumpRouter, RingRouter, RendezvousRouter, MaglevRouter]


@pytest.mark.parametrize("cls", SIMPLE)
def test_empty_shards(cls: Callable[..., Router]) -> None:
    with pytest.raises(ValueError, match="shards must not be empty"):
        cls([])


@pytest.mark.parametrize("cls", SIMPLE)
def test_duplicate_shards(cls: Callable[..., Router]) -> None:
    with pytest.raises(ValueError, match=r"duplicate shard id 'b' at shards\[1\] and shards\[3\]"):
        cls(["a", "b", "c", "b"])


@pytest.mark.parametrize("cls", SIMPLE)
def test_bad_shard_ids(cls: Callable[..., Router]) -> None:
    with pytest.raises(TypeError, match=r"shards\[1\]: shard ids must be str"):
        cls(["a", 5])
    with pytest.raises(ValueError, match=r"shards\[0\]: shard ids must be non-empty"):
        cls([""])
    with pytest.raises(TypeError, match="shards must be a sequence"):
        cls("abc")


@pytest.mark.parametrize("cls", [RingRouter, RendezvousRouter, MaglevRouter])
@pytest.mark.parametrize("w", [0, -1, float("nan"), float("inf"), -0.0])
def test_bad_weights(cls: Callable[..., Router], w: float) -> None:
    with pytest.raises(ValueError, match="weight of shard 'b' must be positive and finite"):
        cls(["a", "b"], weights={"b": w})


@pytest.mark.parametrize("cls", [RingRouter, RendezvousRouter, MaglevRouter])
def test_weights_wrong_type_or_unknown(cls: Callable[..., Router]) -> None:
    with pytest.raises(TypeError, match="weight of shard 'a' must be a number"):
        cls(["a", "b"], weights={"a": "2"})
    with pytest.raises(ValueError, match="weights names unknown shard 'z'"):
        cls(["a", "b"], weights={"z": 2})
    with pytest.raises(TypeError, match="weights must be a mapping"):
        cls(["a", "b"], weights=[1, 2])


def test_bad_vnodes() -> None:
    with pytest.raises(ValueError, match="vnodes must be >= 1, got 0"):
        RingRouter(["a"], vnodes=0)
    with pytest.raises(TypeError, match="vnodes must be an int"):
        RingRouter(["a"], vnodes=ill_typed(2.5))


def test_bad_ring_tokens() -> None:
    with pytest.raises(ValueError, match="shard 'b' has no tokens"):
        RingRouter(["a", "b"], tokens={"a": [1]})
    with pytest.raises(ValueError, match="tokens names unknown shard 'z'"):
        RingRouter(["a"], tokens={"a": [1], "z": [2]})
    with pytest.raises(ValueError, match=r"tokens\['a'\]\[1\] must be <= 18446744073709551615"):
        RingRouter(["a"], tokens={"a": [1, 2**64]})
    with pytest.raises(ValueError, match="not both"):
        RingRouter(["a"], tokens={"a": [1]}, vnodes=3)
    with pytest.raises(ValueError, match="a:0 and a:1 both sit at position 5"):
        RingRouter(["a"], tokens={"a": [5, 5]}, collisions="first")
    with pytest.raises(ValueError, match="collisions must be one of"):
        RingRouter(["a"], collisions="last")


def test_bad_placement() -> None:
    with pytest.raises(ValueError, match=r"placement\[2\] names unknown shard 'z'"):
        BucketRouter(["a", "b"], ["a", "b", "z"])
    with pytest.raises(TypeError, match=r"placement\[0\] must be a shard id string"):
        BucketRouter(["a", "b"], [ill_typed(0), ill_typed(1)])
    with pytest.raises(ValueError, match="placement must not be empty"):
        BucketRouter(["a"], [])
    with pytest.raises(ValueError, match="first range must start at bucket 0"):
        BucketRouter.from_ranges({5: "a"}, 10)
    with pytest.raises(ValueError, match="strictly increasing"):
        BucketRouter.from_ranges([(0, "a"), (5, "b"), (5, "c")], 10)
    with pytest.raises(ValueError, match="must be <= 9"):
        BucketRouter.from_ranges({0: "a", 10: "b"}, 10)


@pytest.mark.parametrize("cls", [HashRangeRouter, RangeRouter])
def test_bad_splits(cls: Callable[..., Router]) -> None:
    with pytest.raises(ValueError, match=r"strictly increasing: splits\[0\] = 20, splits\[1\] = 10"):
        cls([20, 10], ["a", "b", "c"])
    with pytest.raises(ValueError, match=r"strictly increasing: splits\[0\] = 10, splits\[1\] = 10"):
        cls([10, 10], ["a", "b", "c"])
    with pytest.raises(ValueError, match="2 splits need 3 shards, got 2"):
        cls([10, 20], ["a", "b"])


def test_hash_range_split_bounds() -> None:
    with pytest.raises(ValueError, match=r"splits\[0\] must be >= 1"):
        HashRangeRouter([0], ["a", "b"])
    with pytest.raises(ValueError, match=r"splits\[0\] must be <= 18446744073709551615"):
        HashRangeRouter([2**64], ["a", "b"])


def test_range_router_key_types() -> None:
    r = RangeRouter([10, 20], ["a", "b", "c"])
    with pytest.raises(TypeError, match="splits integer keys; got 'x'"):
        r.route("x")
    with pytest.raises(TypeError, match="splits integer keys"):
        r.route(True)
    with pytest.raises(TypeError, match=r"keys\[1\]: this RangeRouter splits integer keys"):
        r.route_many([1, "x"])
    with pytest.raises(TypeError, match="dtype float64"):
        r.route_many(np.array([1.5]))
    s = RangeRouter(["m"], ["a", "b"])
    with pytest.raises(TypeError, match="splits string keys; got 5"):
        s.route(5)
    with pytest.raises(TypeError, match="splits mix ints and strings"):
        RangeRouter(ill_typed([1, "m"]), ["a", "b", "c"])
    with pytest.raises(TypeError, match="routes on raw keys, not on hashes"):
        r.route_hashes([1, 2])
    with pytest.raises(ValueError, match="too few distinct keys"):
        RangeRouter.from_sample([1, 1, 1, 1], 3)


def test_maglev_sizes() -> None:
    with pytest.raises(ValueError, match="table_size must be prime, got 100"):
        MaglevRouter(["a"], table_size=100)
    with pytest.raises(ValueError, match="table_size 3 is smaller than the number of shards"):
        MaglevRouter(["a", "b", "c", "d"], table_size=3)
    with pytest.raises(ValueError, match="table_size must be >= 2"):
        MaglevRouter(["a"], table_size=1)
    with pytest.raises(TypeError, match="table_size must be an int"):
        MaglevRouter(["a"], table_size=ill_typed(101.0))


def test_version_and_prefix_and_hasher() -> None:
    with pytest.raises(ValueError, match="version must be >= 0"):
        JumpRouter(["a"], version=-1)
    with pytest.raises(TypeError, match="version must be an int"):
        JumpRouter(["a"], version=ill_typed("1"))
    with pytest.raises(ValueError, match="key_prefix must be >= 1"):
        JumpRouter(["a"], key_prefix=0)
    with pytest.raises(TypeError, match="hasher must be a shardhash.Hasher"):
        JumpRouter(["a"], hasher=ill_typed("xxh3_64"))
    r = JumpRouter(["a", "b"], key_prefix=2)
    with pytest.raises(TypeError, match="first 2 part"):
        r.route("x")
    with pytest.raises(ValueError, match="fewer than 2 parts"):
        r.route(("x",))


def test_bad_hashes_and_out() -> None:
    r = JumpRouter(["a", "b"])
    with pytest.raises(ValueError, match=r"hashes\[1\] = -3 is negative"):
        r.route_hashes(np.array([1, -3], dtype=np.int64))
    with pytest.raises(ValueError, match=r"hashes\[2\] = -1 is outside|hashes\[2\] = -1 is negative"):
        r.route_hashes([1, 2, -1])
    with pytest.raises(ValueError, match=r"hashes\[0\] = 18446744073709551616 is outside"):
        r.route_hashes([2**64])
    with pytest.raises(TypeError, match=r"hashes\[1\] = 2.5 is not an integer"):
        r.route_hashes([1, ill_typed(2.5)])
    with pytest.raises(TypeError, match="dtype float64"):
        r.route_hashes(np.array([1.0]))
    with pytest.raises(ValueError, match="one-dimensional"):
        r.route_hashes(np.zeros((2, 2), dtype=np.uint64))
    with pytest.raises(TypeError, match="hashes must be an array or sequence"):
        r.route_hashes(ill_typed(5))
    with pytest.raises(TypeError, match="out must have dtype int32"):
        r.route_hashes([1, 2], out=np.empty(2, dtype=np.int64))
    with pytest.raises(ValueError, match=r"out must have shape \(2,\)"):
        r.route_hashes([1, 2], out=np.empty(3, dtype=np.int32))
    ro = np.empty(2, dtype=np.int32)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        r.route_hashes([1, 2], out=ro)
    with pytest.raises(ValueError, match="C-contiguous"):
        r.route_hashes([1, 2], out=np.empty(4, dtype=np.int32)[::2])
    with pytest.raises(ValueError, match="threads must be >= 1"):
        r.route_hashes([1, 2], threads=0)
    with pytest.raises(TypeError, match="threads must be an int"):
        r.route_hashes([1, 2], threads=ill_typed(1.5))
    with pytest.raises(ValueError, match=r"hash -1 is outside"):
        r.route_hash(-1)


def test_python_kernel_routers_validate_threads() -> None:
    class Zero(Router):
        def __init__(self, shards: list[str]) -> None:
            super().__init__(shards)
            self._use_python()
            self._finish()

        def _route_hashes_kernel(self, hashes: np.ndarray, out: np.ndarray) -> None:
            out[:] = 0

    z = Zero(["a"])
    assert z.route_hashes([1, 2], threads=2).tolist() == [0, 0]
    with pytest.raises(ValueError, match="threads must be >= 1"):
        z.route_hashes([1], threads=0)


def test_jump_hash_arguments() -> None:
    with pytest.raises(ValueError, match="num_buckets must be >= 1, got 0"):
        jump_hash(1, 0)
    with pytest.raises(OverflowError, match="num_buckets must be < 2\\*\\*31"):
        jump_hash(1, 2**31)
    with pytest.raises(OverflowError, match="key -1 is outside"):
        jump_hash(-1, 10)
    with pytest.raises(TypeError, match="key must be an int"):
        jump_hash(ill_typed("1"), 10)
    with pytest.raises(TypeError, match="num_buckets must be an int"):
        jump_hash_array([1], ill_typed(2.0))


def test_directory_and_watermark_errors() -> None:
    base = JumpRouter(["a", "b"])
    with pytest.raises(TypeError, match="override keys must be int or str"):
        DirectoryRouter(base, {b"x": "a"})
    with pytest.raises(TypeError, match="base must be a Router"):
        DirectoryRouter(ill_typed("ring"), {})
    w = WatermarkRouter(ModuloRouter(["a"]), JumpRouter(["a", "b"]), 10)
    with pytest.raises(TypeError, match="routes integer ids; got 'x'"):
        w.route("x")
    with pytest.raises(TypeError, match=r"keys\[1\]: WatermarkRouter routes integer ids"):
        w.route_many([1, "x"])
    with pytest.raises(TypeError, match="watermark must be an int"):
        WatermarkRouter(base, base, ill_typed("10"))
    with pytest.raises(ValueError, match="key prefix"):
        WatermarkRouter(base, JumpRouter(["a"], key_prefix=1), 10)


# -- documents -------------------------------------------------------------------


def _doc() -> dict[str, Any]:
    return RingRouter(["a", "b"], vnodes=4).to_dict()


def test_document_unknown_fields() -> None:
    d = _doc()
    d["colour"] = "red"
    with pytest.raises(ValueError, match="unknown field\\(s\\): 'colour'"):
        load_router(d)
    d = _doc()
    d["params"]["spin"] = 1
    with pytest.raises(ValueError, match="ring params have unknown field\\(s\\): 'spin'"):
        load_router(d)


def test_document_format_type_fingerprint() -> None:
    d = _doc()
    d["format"] = "shardhash.router/2"
    with pytest.raises(ValueError, match="unsupported format 'shardhash.router/2'"):
        load_router(d)
    d = _doc()
    d["type"] = "wormhole"
    with pytest.raises(ValueError, match="unknown router type 'wormhole'"):
        load_router(d)
    d = _doc()
    d["params"]["vnodes"] = 5
    with pytest.raises(ValueError, match="fingerprint mismatch"):
        load_router(d)
    d = _doc()
    d["shards"] = ["b", "a"]
    with pytest.raises(ValueError, match="fingerprint mismatch"):
        load_router(d)
    d = _doc()
    del d["params"]
    with pytest.raises(ValueError, match="lacks field\\(s\\): 'params'"):
        load_router(d)
    d = _doc()
    del d["params"]["vnodes"]
    with pytest.raises(ValueError, match="ring params lack field 'vnodes'"):
        load_router(d)


def test_document_sources(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not valid JSON"):
        load_router("{not json")
    with pytest.raises(ValueError, match="cannot read router document"):
        load_router("/nonexistent/dir/router.json")
    with pytest.raises(TypeError, match="load_router takes a dict"):
        load_router(ill_typed(42))
    with pytest.raises(ValueError, match="a router document is a JSON object"):
        (tmp_path / "list.json").write_text(json.dumps([1]))
        load_router(tmp_path / "list.json")


def _number_paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every number (not bool) in a document."""
    out: list[tuple[Any, ...]] = []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(prefix + (k,))
        else:
            out.extend(_number_paths(v, prefix + (k,)))
    return out


def test_document_numbers_out_of_range_are_value_errors() -> None:
    """Any number of a router document replaced by one no field takes
    (beyond 64 bits, negative, huge) loads or fails with TypeError/ValueError,
    never OverflowError or a crash (a DirectoryRouter override key or a
    hasher seed of 2**64 raised a bare OverflowError)."""
    import copy

    from shardhash import (
        BucketRouter,
        DirectoryRouter,
        JumpRouter,
        MaglevRouter,
        RendezvousRouter,
        RingRouter,
        load_router,
    )

    routers = [
        DirectoryRouter(JumpRouter(["a", "b", "c"]), {5: "b", "k": "a"}),
        RingRouter(["a", "b"], vnodes=4),
        MaglevRouter(["a", "b", "c"], table_size=13),
        BucketRouter(["a", "b"], buckets=8),
        RendezvousRouter(["a", "b"], weights={"a": 1.0, "b": 2.0}),
    ]
    for r in routers:
        doc = r.to_dict()
        doc.pop("fingerprint", None)
        for path in _number_paths(doc):
            for bad in (2**64, 10**30, -(2**63) - 1, -1):
                d = copy.deepcopy(doc)
                node: Any = d
                for p in path[:-1]:
                    node = node[p]
                node[path[-1]] = bad
                try:
                    load_router(d)
                except (TypeError, ValueError) as exc:  # anything else fails the test
                    assert str(exc), (path, bad)
    with pytest.raises(OverflowError, match=r"^overrides\[1\]: integer key 18446744073709551616 is out of range"):
        DirectoryRouter(JumpRouter(["a"]), {1: "a", 2**64: "a"})


def test_unaligned_arrays_are_copied_or_refused() -> None:
    """Arrays whose items start off their alignment (np.frombuffer at an odd
    offset): inputs are copied before a kernel reads them (the same answers),
    an ``out`` array is refused (a kernel's typed stores into it would be
    undefined behaviour)."""
    from shardhash import hash_array
    from shardhash.compat import cassandra

    vals = np.arange(-50, 50, dtype=np.int64)
    raw = b"\0" + vals.tobytes()
    odd = np.frombuffer(raw, dtype=np.int64, offset=1, count=len(vals))
    assert not odd.flags.aligned
    r = JumpRouter(["a", "b", "c"])
    assert r.route_many(odd, threads=1).tolist() == r.route_many(vals, threads=1).tolist()
    assert hash_array(odd, threads=1).tolist() == hash_array(vals, threads=1).tolist()
    assert cassandra.token_array(odd, "bigint").tolist() == cassandra.token_array(vals, "bigint").tolist()
    h = np.frombuffer(b"\0" + hash_array(np.abs(vals)).tobytes(), dtype=np.uint64, offset=1, count=len(vals))
    assert r.route_hashes(h).tolist() == r.route_hashes(h.copy()).tolist()
    out = np.frombuffer(bytearray(8 * len(vals) + 1), dtype=np.uint64, offset=1, count=len(vals))
    with pytest.raises(ValueError, match="out must be aligned"):
        hash_array(vals, out=out)


def test_version_is_a_signed_64_bit_integer() -> None:
    top = (1 << 63) - 1
    assert JumpRouter(["a"], version=top).version == top
    with pytest.raises(ValueError, match="version must be <= 9223372036854775807"):
        JumpRouter(["a"], version=top + 1)
    # a successor of the largest version is refused where it is made, not by a
    # metadata store's BIGINT column later
    with pytest.raises(ValueError, match="version must be <= "):
        JumpRouter(["a"], version=top).with_shards(["a", "b"])
    doc = JumpRouter(["a"], version=top).to_dict()
    doc["version"] = top + 1
    with pytest.raises(ValueError, match="version must be <= "):
        load_router(doc)
