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
from ._common import text_or_bytes
from ._doc import doc_field, int_pairs, node_map, raw_doc_shards

__all__ = ["SLOTS", "keyslot", "keyslot_array", "hash_tag", "ClusterRouter", "even_slot_ranges",
           "from_cluster_nodes", "reshard_steps"]

SLOTS = 16384


def _key_bytes(key: Any) -> bytes:
    b = text_or_bytes(key)
    if b is not None:
        return b
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


def _migrating_table(migrating: Any, names: list[str], table: np.ndarray) -> np.ndarray:
    """slot -> index of the node importing it (-1: not migrating)."""
    ask = np.full(SLOTS, -1, dtype=np.int32)
    if migrating is None:
        return ask
    if not isinstance(migrating, Mapping):
        raise TypeError(f"migrating must map slot -> importing node, not {type(migrating).__name__}")
    pos = {n: i for i, n in enumerate(names)}
    for slot, dst in migrating.items():
        if isinstance(slot, bool) or not isinstance(slot, (int, np.integer)) or not 0 <= int(slot) < SLOTS:
            raise ValueError(f"migrating: {slot!r} is not a slot in 0..{SLOTS - 1}")
        if str(dst) not in pos:
            raise ValueError(f"migrating: slot {slot} goes to {dst!r}, which is not a node of the cluster "
                             "(list it in slot_ranges, with [] if it owns no slots yet)")
        if pos[str(dst)] == int(table[int(slot)]):
            raise ValueError(f"migrating: slot {slot} is already owned by {dst!r}")
        ask[int(slot)] = pos[str(dst)]
    return ask


def _parse_slot_field(field: str) -> tuple[str, int, int, str | None]:
    """One slot field of a CLUSTER NODES line: ("own", lo, hi, None),
    ("migrating", slot, slot, target id) or ("importing", slot, slot, source id)."""
    if field.startswith("["):
        body = field.strip("[]")
        if "->-" in body:
            slot, target = body.split("->-", 1)
            return "migrating", int(slot), int(slot), target
        slot, source = body.split("-<-", 1)
        return "importing", int(slot), int(slot), source
    lo, _, hi = field.partition("-")
    return "own", int(lo), int(hi or lo), None


def from_cluster_nodes(text: str, *, version: int = 1) -> ClusterRouter:
    r"""A :class:`ClusterRouter` from the output of ``CLUSTER NODES``: masters
    named by their ``host:port`` (in address order, as that output has no
    fixed order), their slots, and the slots in migration (``[slot->-target]``,
    which the migrating node reports on its own line).

    >>> r = from_cluster_nodes(
    ...     "a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-8191 [100->-b2]\n"
    ...     "b2 127.0.0.1:7001@17001 master - 0 0 2 connected 8192-16383 [100-<-a1]\n")
    >>> r.route_slots([100]).tolist(), r.migrating
    ([0], {100: ('127.0.0.1:7000', '127.0.0.1:7001')})
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be the CLUSTER NODES reply (str), not {type(text).__name__}")
    addr: dict[str, str] = {}
    own: dict[str, list[tuple[int, int]]] = {}
    migrating: dict[int, str] = {}  # slot -> target id (the source's view)
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if len(parts) < 8:
            raise ValueError(f"not a CLUSTER NODES line: {line!r:.80}")
        node_id, address, flags = parts[0], parts[1].split("@", 1)[0], parts[2].split(",")
        if "master" not in flags:
            continue
        addr[node_id] = address
        own[address] = []
        for field in parts[8:]:
            kind, lo, hi, other = _parse_slot_field(field)
            if kind == "own":
                own[address].append((lo, hi))
            elif kind == "migrating":
                migrating[lo] = str(other)
    # A slot only the target reports as importing is not redirected yet: the
    # source answers for it until it is MIGRATING, so only those count.
    mig: dict[int, str] = {}
    for slot, target in migrating.items():
        if target not in addr:
            raise ValueError(f"slot {slot} migrates to unknown node {target!r}")
        mig[slot] = addr[target]
    def order(a: str) -> tuple[str, int]:  # CLUSTER NODES lists nodes in no fixed order
        host, _, port = a.rpartition(":")
        return (host, int(port)) if port.isdigit() else (a, -1)

    ordered = {a: own[a] for a in sorted(own, key=order)}
    return ClusterRouter(ordered, migrating=mig or None, version=version)


def reshard_steps(old: ClusterRouter, new: ClusterRouter, node_ids: Mapping[str, str] | None = None,
                  *, batch: int = 100, timeout_ms: int = 5000) -> list[tuple[str, list[str]]]:
    """The commands that move a cluster from ``old``'s slot map to ``new``'s,
    as ``redis-cli --cluster reshard`` issues them: for every slot that
    changes owner, ``(node, command)`` pairs --

    1. on the target: ``CLUSTER SETSLOT <slot> IMPORTING <source id>``
    2. on the source: ``CLUSTER SETSLOT <slot> MIGRATING <target id>``
    3. on the source, until it returns no keys: ``CLUSTER GETKEYSINSLOT <slot> <batch>``,
       then ``MIGRATE <target host> <target port> "" 0 <timeout> KEYS <key>...``
       (given here once, as a template with the key list left out)
    4. on the target, then the source: ``CLUSTER SETSLOT <slot> NODE <target id>``

    ``node_ids`` maps node names (``host:port``) to their ``CLUSTER MYID``;
    without it the names stand for the ids.

    >>> old = ClusterRouter({"a:1": [(0, 16383)], "b:2": []})
    >>> new = ClusterRouter({"a:1": [(0, 16382)], "b:2": [(16383, 16383)]})
    >>> [node + " " + " ".join(cmd) for node, cmd in reshard_steps(old, new)][:2]
    ['b:2 CLUSTER SETSLOT 16383 IMPORTING a:1', 'a:1 CLUSTER SETSLOT 16383 MIGRATING b:2']
    """
    if not isinstance(old, ClusterRouter) or not isinstance(new, ClusterRouter):
        raise TypeError("old and new must be ClusterRouter objects")
    ids = dict(node_ids or {})
    steps: list[tuple[str, list[str]]] = []
    for slot in range(SLOTS):
        src = old.shards[int(old.slot_table[slot])]
        dst = new.shards[int(new.slot_table[slot])]
        if src == dst:
            continue
        sid, did = ids.get(src, src), ids.get(dst, dst)
        host, _, port = dst.rpartition(":")
        steps += [
            (dst, ["CLUSTER", "SETSLOT", str(slot), "IMPORTING", sid]),
            (src, ["CLUSTER", "SETSLOT", str(slot), "MIGRATING", did]),
            (src, ["CLUSTER", "GETKEYSINSLOT", str(slot), str(batch)]),
            (src, ["MIGRATE", host, port, "", "0", str(timeout_ms), "KEYS"]),
            (dst, ["CLUSTER", "SETSLOT", str(slot), "NODE", did]),
            (src, ["CLUSTER", "SETSLOT", str(slot), "NODE", did]),
        ]
    return steps


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

    _doc_fields = ("slot_ranges", "migrating")

    _routes_instead = ("a Redis Cluster router routes slots", "use route_many(keys) or route_slots(slots)")
    _hashing = "CRC16-XMODEM of the key (or its {hash tag}) mod 16384 (Redis Cluster)"

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

    def __init__(self, slot_ranges: Mapping[Any, Iterable[tuple[int, int]]], *,
                 migrating: Mapping[int, Any] | None = None, version: int = 1) -> None:
        nodes, table = _slot_table(slot_ranges)
        names = [str(n) for n in nodes]
        if len(set(names)) != len(names):
            raise ValueError("node names must be distinct (as strings)")
        ask = _migrating_table(migrating, names, table)
        super().__init__(names, version=version)
        table.setflags(write=False)
        ask.setflags(write=False)
        self._set("_table", table)
        self._set("_ask", ask)
        keys = _native.RedisKeys(table)
        self._use_native_keys(keys.capsule(), keys)  # route/route_index of bytes and ASCII str in C
        self._finish()

    def _doc_params(self) -> dict[str, Any]:
        ranges = _ranges_of(self._table, list(self.shards))
        doc: dict[str, Any] = {"slot_ranges": {n: [list(r) for r in rs] for n, rs in ranges.items()}}
        mig = self.migrating
        if mig:  # only then: documents of clusters at rest keep their fingerprints
            doc["migrating"] = [[slot, dst] for slot, (_src, dst) in sorted(mig.items())]
        return doc

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Any, version: int,
                     key_prefix: int | None) -> ClusterRouter:
        shards = raw_doc_shards(shards, key_prefix, "a Redis Cluster router")
        sr = node_map(params["slot_ranges"], "params.slot_ranges", shards, "slot ranges")
        ranges = {s: int_pairs(sr[s], f"params.slot_ranges[{s!r}]", "start, end") for s in shards}
        mig = params.get("migrating")
        migrating: dict[int, Any] | None = None
        if mig is not None:
            if not isinstance(mig, list) or not all(isinstance(p, list) and len(p) == 2 for p in mig):
                raise TypeError("params.migrating must be a list of [slot, importing node] pairs")
            migrating = {p[0]: p[1] for p in mig}
        with doc_field("slot_ranges"):
            return cls(ranges, migrating=migrating, version=version)

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

    @property
    def migrating(self) -> dict[int, tuple[str, str]]:
        """Slots in migration: slot -> (owner, the node importing it)."""
        out: dict[int, tuple[str, str]] = {}
        for slot in np.flatnonzero(self._ask >= 0).tolist():
            out[int(slot)] = (self.shards[int(self._table[slot])], self.shards[int(self._ask[slot])])
        return out

    def ask_target(self, key: Any) -> str | None:
        """Where a cluster client is sent with ``-ASK`` for ``key``: the
        importing node when the key's slot is migrating (the owner answers
        for keys it still holds, and redirects the others there), else None."""
        a = int(self._ask[_keyslot_py(key)])
        return None if a < 0 else self.shards[a]

    def ask_targets(self, keys: Any, threads: int | None = None) -> np.ndarray:
        """:meth:`ask_target` of many keys as node indices (int32; -1: no migration)."""
        res: np.ndarray = np.take(self._ask, keyslot_array(keys, threads=threads))
        return res

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
        return self._route_keys(keys, out, threads,
                                lambda: fill_out(out, np.take(self._table, keyslot_array(keys, threads=threads))))

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
