"""Redis Cluster key slots, reproduced to the bit.

Redis Cluster sends a key to slot ``CRC16(k) & 16383`` (CRC16-XMODEM:
polynomial 0x1021, initial value 0, no reflection), where ``k`` is the key's
*hash tag* -- the bytes between the first ``{`` and the next ``}`` after
it -- when that tag is non-empty, and the whole key otherwise.  So
``{user1000}.following`` and ``{user1000}.followers`` share a slot, ``{}x``
is hashed whole, and in ``a{}b{c}`` the first tag is empty so the whole key
is hashed (not ``c``).  Each master node serves some ranges of slots;
:class:`ClusterRouter` routes by a slot -> node table.

What is exact: every slot, for any binary key (checked against
``CLUSTER KEYSLOT`` of a real ``redis-server``).  Keys are bytes as they
are, or ``str`` as UTF-8 (what redis-py sends).

>>> keyslot(b"foo")
12182
>>> keyslot("{user1000}.following") == keyslot("{user1000}.followers") == 3443
True
>>> keyslot(b"a{}b{c}") == keyslot(b"a{}b{c}x")   # empty first tag: whole key
False
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..routing.base import RawKeyRouter, Router, fill_out, register_router_type
from . import _native
from ._doc import doc_field, doc_shards, int_pairs, node_map

__all__ = ["SLOTS", "keyslot", "keyslot_array", "hash_tag", "ClusterRouter", "even_slot_ranges"]

SLOTS = 16384


def _key_bytes(key: Any) -> bytes:
    if isinstance(key, bytes):
        return key
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (bytearray, memoryview)):
        return bytes(key)
    raise TypeError(f"a Redis key must be bytes or str, not {type(key).__name__} ({key!r:.60})")


def hash_tag(key: bytes | str) -> bytes:
    """The bytes Redis hashes for ``key``: its non-empty hash tag, or the key.

    >>> hash_tag(b"{user1000}.following")
    b'user1000'
    >>> hash_tag(b"{{a}}"), hash_tag(b"{}x"), hash_tag(b"foo{bar}{zap}")
    (b'{a', b'{}x', b'bar')
    """
    b = _key_bytes(key)
    s = b.find(b"{")
    if s != -1:
        e = b.find(b"}", s + 1)
        if e != -1 and e != s + 1:
            return b[s + 1:e]
    return b


def _keyslot_py(key: bytes | str) -> int:
    # the reference for keyslot(): every key the compiled path does not take
    # (str with non-ASCII characters, subclasses, bytearray, wrong types)
    return int(_native.redis_keyslot(_key_bytes(key)))


_native._set_fallbacks(keyslot=_keyslot_py)
# keyslot(key): the Redis Cluster slot (0..16383) of one key, as ``CLUSTER
# KEYSLOT``; exact bytes and ASCII str in C, everything else via _keyslot_py.
keyslot = _native.keyslot


def keyslot_array(keys: Any, threads: int | None = None) -> np.ndarray:
    """Slots of many keys at once, as a ``uint16`` array.

    ``keys``: a sequence of bytes/str, a numpy bytes/str/object array, or an
    Arrow binary/string array (used without copying).  Arrays run without
    the GIL on ``threads`` threads (``None``: one thread for small inputs,
    all cores for large ones); a list, tuple or numpy array of keys is read
    in place and hashed as it is read, on the calling thread.

    >>> keyslot_array([b"foo", "bar", b"{foo}x"]).tolist()
    [12182, 5061, 12182]
    """
    if threads is None:  # up to 64 bytes/ASCII str keys: one pass in C
        small = _native.keyslot_small(keys)
        if small is not None:
            return small
    slots = _native.redis_keyslot_seq(keys)
    if slots is not None:  # a Python sequence: read in place, no copy
        return slots
    data, offsets = _native.pack_keys(keys)
    return _native.redis_keyslot_offsets(data, offsets, threads)


def even_slot_ranges(nodes: Sequence[Hashable]) -> dict[Any, list[tuple[int, int]]]:
    """Split the 16384 slots into one contiguous, near-equal range per node.

    Node i ends at ``round((i + 1) * 16384 / n - 1)`` (halves rounded up),
    the last node at 16383; for three masters this is the familiar
    0-5460 / 5461-10922 / 10923-16383 layout of ``redis-cli --cluster create``.

    >>> even_slot_ranges(["a", "b", "c"])
    {'a': [(0, 5460)], 'b': [(5461, 10922)], 'c': [(10923, 16383)]}
    """
    n = len(nodes)
    if n == 0:
        raise ValueError("need at least one node")
    if len(set(nodes)) != n:
        raise ValueError("node names must be distinct")
    if n > SLOTS:
        raise ValueError(f"at most {SLOTS} nodes can own slots, got {n}")
    per = SLOTS / n
    out: dict[Any, list[tuple[int, int]]] = {}
    first = 0
    for i, node in enumerate(nodes):
        last = SLOTS - 1 if i == n - 1 else int(i * per + per - 1 + 0.5)
        last = max(last, first)
        out[node] = [(first, last)]
        first = last + 1
    return out


def _slot_table(slot_ranges: Mapping[Any, Iterable[tuple[int, int]]]) -> tuple[list[Hashable], np.ndarray]:
    """Validate a node -> slot ranges map and build the slot -> node-index table."""
    if not isinstance(slot_ranges, Mapping):
        raise TypeError(f"slot_ranges must be a mapping node -> [(start, end), ...], not {type(slot_ranges).__name__}")
    nodes = list(slot_ranges)
    if not nodes:
        raise ValueError("slot_ranges is empty")
    table = np.full(SLOTS, -1, dtype=np.int32)
    for idx, node in enumerate(nodes):
        ranges = slot_ranges[node]
        if isinstance(ranges, tuple) and len(ranges) == 2 and all(isinstance(x, int) for x in ranges):
            raise TypeError(f"slot ranges of node {node!r} must be a list of (start, end) pairs, "
                            f"not a single pair {ranges!r}")
        for r in ranges:
            if not (isinstance(r, (tuple, list)) and len(r) == 2):
                raise TypeError(f"slot range {r!r} of node {node!r} is not a (start, end) pair")
            start, end = r
            for v in (start, end):
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                    raise TypeError(f"slot range {r!r} of node {node!r}: bounds must be ints, "
                                    f"not {type(v).__name__}")
            start, end = int(start), int(end)
            if not (0 <= start <= end < SLOTS):
                raise ValueError(f"slot range ({start}, {end}) of node {node!r} is not within "
                                 f"0..{SLOTS - 1} with start <= end")
            seg = table[start:end + 1]
            taken = np.flatnonzero(seg >= 0)
            if taken.size:
                slot = start + int(taken[0])
                raise ValueError(f"slot {slot} is assigned twice: to {nodes[int(seg[taken[0]])]!r} "
                                 f"and to {node!r}")
            seg[:] = idx
    missing = np.flatnonzero(table < 0)
    if missing.size:
        raise ValueError(f"{missing.size} slots have no node, the first is slot {int(missing[0])} "
                         "(a cluster must cover all 16384 slots)")
    return nodes, table


def _ranges_of(table: np.ndarray, nodes: list[Hashable]) -> dict[Any, list[tuple[int, int]]]:
    out: dict[Any, list[tuple[int, int]]] = {n: [] for n in nodes}
    change = np.flatnonzero(np.diff(table)) + 1
    starts = np.concatenate(([0], change))
    ends = np.concatenate((change - 1, [SLOTS - 1]))
    for s, e in zip(starts.tolist(), ends.tolist()):
        out[nodes[int(table[s])]].append((s, e))
    return out


@register_router_type("redis_cluster")
class ClusterRouter(RawKeyRouter):
    """Route keys to Redis Cluster masters by slot.

    ``slot_ranges`` maps each node to its inclusive ``(start, end)`` slot
    ranges (as ``CLUSTER SHARDS`` / ``CLUSTER SLOTS`` report them).  Together
    the ranges must cover slots 0..16383 exactly once: a gap or an overlap is
    a ValueError.

    >>> r = ClusterRouter(even_slot_ranges(["a", "b", "c"]))
    >>> r.route("foo"), r.route_many([b"foo", b"{foo}bar", b"baz"]).tolist()
    ('c', [2, 2, 0])
    >>> r.slot_ranges["a"]
    [(0, 5460)]
    """

    _doc_fields = ("slot_ranges",)

    _hashes_refused = ("a Redis Cluster router routes slots, not shardhash hashes: "
                        "use route_many(keys) or route_slots(slots)")
    _hash_refused = "a Redis Cluster router routes slots, not shardhash hashes"

    def hashing_description(self) -> str:
        return "CRC16-XMODEM of the key (or its {hash tag}) mod 16384 (Redis Cluster)"

    cli_options = frozenset()  # shardhash topology new

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Any, load: Callable[[str], Router]) -> Router:
        return cls(even_slot_ranges(shards))

    def explain(self, key: Any) -> list[str]:
        return [f"slot:     {keyslot(key if isinstance(key, (str, bytes)) else str(key))} of 16,384"]

    def ownership(self) -> tuple[list[float], list[str]]:
        c = np.bincount(self._table, minlength=len(self.shards))
        return [float(v) / len(self._table) for v in c], [f"{int(v):,} slots" for v in c]

    def __init__(self, slot_ranges: Mapping[Any, Iterable[tuple[int, int]]], *, version: int = 1) -> None:
        nodes, table = _slot_table(slot_ranges)
        names = [str(n) for n in nodes]
        if len(set(names)) != len(names):
            raise ValueError("node names must be distinct (as strings)")
        super().__init__(names, version=version)
        table.setflags(write=False)
        self._set("_table", table)
        keys = _native.RedisKeys(table)
        self._use_native_keys(keys.capsule(), keys)  # route/route_index of bytes and ASCII str in C
        self._finish()

    def _doc_params(self) -> dict[str, Any]:
        ranges = _ranges_of(self._table, list(self.shards))
        return {"slot_ranges": {n: [list(r) for r in rs] for n, rs in ranges.items()}}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Any, version: int,
                     key_prefix: int | None) -> ClusterRouter:
        if key_prefix is not None:
            raise ValueError("a Redis Cluster router has no key_prefix")
        shards = doc_shards(shards)
        sr = node_map(params["slot_ranges"], "params.slot_ranges", shards, "slot ranges")
        ranges = {s: int_pairs(sr[s], f"params.slot_ranges[{s!r}]", "start, end") for s in shards}
        with doc_field("slot_ranges"):
            return cls(ranges, version=version)

    @property
    def slot_ranges(self) -> dict[str, list[tuple[int, int]]]:
        """Node -> its inclusive slot ranges, merged and sorted."""
        return _ranges_of(self._table, list(self.shards))

    @property
    def slot_table(self) -> np.ndarray:
        """Node index of each of the 16384 slots (read-only int32 array)."""
        return self._table  # type: ignore[no-any-return]

    def _route_index_slow(self, key: Any) -> int:
        # route()/route_index() of the keys the compiled path leaves here
        return int(self._table[_keyslot_py(key)])

    def route_slots(self, slots: Any, *, out: np.ndarray | None = None) -> np.ndarray:
        """Node indices (int32) for slot numbers."""
        s = np.asarray(slots)
        if s.dtype.kind not in "iu":
            raise TypeError(f"slots must be integers, not {s.dtype}")
        if s.size and (int(s.min()) < 0 or int(s.max()) >= SLOTS):
            raise ValueError(f"slots must be in 0..{SLOTS - 1}")
        return fill_out(out, np.take(self._table, s))

    def route_many(self, keys: Any, *, out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
        """Node indices (int32 array) for many keys, via :func:`keyslot_array`."""
        if out is None and threads is None:  # up to 64 common keys: one pass in C
            small = self._route_small_keys(keys)
            if small is not None:
                return small
        return fill_out(out, np.take(self._table, keyslot_array(keys, threads=threads)))

    def owned_ranges(self) -> list[tuple[int, int, int]]:
        """Inclusive ``(lo, hi, node index)`` ranges covering ``[0, 2**64-1]``:
        slot ``s`` is the interval ``[s * 2**50, (s + 1) * 2**50 - 1]``, so
        that ``shardhash.plan.moved_ranges`` reports moved slot ranges
        (divide ``lo`` and ``hi + 1`` by ``2**50``)."""
        out = []
        pos = {n: i for i, n in enumerate(self.shards)}
        for node, ranges in _ranges_of(self._table, list(self.shards)).items():
            for s, e in ranges:
                out.append((s << 50, ((e + 1) << 50) - 1, pos[node]))
        out.sort()
        return out
