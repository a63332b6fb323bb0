"""uhashring's ``HashRing``, both of its rings, reproduced to the bit.

Most Python users build ``uhashring.HashRing(nodes)`` without ``hash_fn``;
that ring is not the ketama continuum (``hash_fn='ketama'``, the
``"uhashring"`` flavour of :class:`shardhash.compat.ketama.KetamaRouter`):

=================  ============================================  ==========================================
                   default (``hash_fn=None``)                    ``hash_fn='ketama'``
=================  ============================================  ==========================================
points per node    ``vnodes * weight`` (``vnodes`` 160)          ``vnodes * n * weight // sum(weights)``
                                                                 digests (``vnodes`` 40), ``replicas`` (4)
                                                                 points each
point              ``md5("<node>-<i>")`` as a 128-bit            little-endian 32-bit word ``r`` of
                   big-endian integer                            ``md5("<node>-<i>")``, r < replicas
key hash           ``md5(str(key))``, 128-bit big-endian         first little-endian word of ``md5(str(key))``
lookup             first point > key hash, wrapping              first point > key hash, wrapping
=================  ============================================  ==========================================

(``n`` nodes; a node's ``vnodes`` and ``weight`` come from its
configuration, as in uhashring: ``{"a": 2}`` is weight 2,
``{"a": {"weight": 2, "vnodes": 80}}`` sets both.)  Equal points: the
node configured last wins (a Python dict keyed by point); for the default
ring's 128-bit points that never happens in practice.

Removing a node (``HashRing.remove_node``) leaves exactly the ring of the
remaining nodes in their order, and adding one (``add_node``) appends it:
build the router from the nodes the ring has (:meth:`HashRingRouter.from_hashring`
reads a live ``HashRing``).

What is exact: every key's node, checked against uhashring itself (both
rings; weights, per-node ``vnodes``, ``replicas``, nodes added and removed).
Keys are hashed as ``str(key)`` in UTF-8, as uhashring does (so ``b"k"`` is
hashed as ``"b'k'"``).  Not modelled: a user's own ``hash_fn`` callable and
``weight_fn``; give the weights it returns.

>>> r = HashRingRouter(["10.0.0.1", "10.0.0.2", "10.0.0.3"])
>>> r.route("foo"), r.key_hash("foo") >> 96
('10.0.0.3', 2898073819)
>>> HashRingRouter({"a": 1, "b": 2}).points_per_node
{'a': 160, 'b': 320}
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Mapping, Sequence
from hashlib import md5 as _md5
from typing import Any

import numpy as np

from ..routing.base import RawKeyRouter, Router, _describe, fill_out, register_router_type
from . import _native
from ._doc import doc_field, raw_doc_shards
from ._ring import point_index

__all__ = ["HASH_FNS", "HashRingRouter", "key_hash"]

HASH_FNS = (None, "ketama")
_CONF_KEYS = ("weight", "vnodes")


def key_hash(key: Any) -> int:
    """uhashring's default key hash: ``md5(str(key))`` as a 128-bit big-endian integer.

    >>> hex(key_hash("foo"))
    '0xacbd18db4cc2f85cedef654fccc4a4d8'
    """
    return int.from_bytes(hashlib.md5(str(key).encode("utf-8")).digest(), "big")


def _str_utf8(k: Any) -> bytes:
    return str(k).encode("utf-8")


def _pos_int(v: Any, what: str, lo: int = 1) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{what} must be an int, not {_describe(v)} (type {type(v).__name__})")
    if not lo <= int(v) < (1 << 31):
        raise ValueError(f"{what} must be in {lo}..2**31-1, got {int(v)}")
    return int(v)


def _node_confs(nodes: Any, default_vnodes: int) -> list[tuple[str, int, int]]:
    """``(name, weight, vnodes)`` per node, in configuration order."""
    if isinstance(nodes, str):
        nodes = [nodes]
    if isinstance(nodes, Mapping):
        items = list(nodes.items())
    elif isinstance(nodes, (Sequence, np.ndarray)) and not isinstance(nodes, bytes):
        items = [(n, None) for n in nodes]
    else:
        raise TypeError(f"nodes must be a list of node names or a mapping name -> weight or "
                        f"{{'weight': w, 'vnodes': v}}, not {type(nodes).__name__}")
    out: list[tuple[str, int, int]] = []
    seen: set[str] = set()
    for name, conf in items:
        if not isinstance(name, str) or not name:
            raise TypeError(f"a node name must be a non-empty str, not {_describe(name)}")
        if name in seen:
            raise ValueError(f"node {name!r} is configured twice")
        seen.add(name)
        weight, vnodes = 1, default_vnodes
        if conf is None:
            pass
        elif isinstance(conf, Mapping):
            unknown = [k for k in conf if k not in _CONF_KEYS and k not in ("hostname", "port", "instance",
                                                                            "nodename")]
            if unknown:
                raise ValueError(f"node {name!r}: unknown configuration key(s) {unknown!r}")
            if "nodename" in conf and conf["nodename"] != name:
                raise ValueError(f"node {name!r}: a 'nodename' other than the node's key is not supported")
            if "weight" in conf:
                weight = _pos_int(conf["weight"], f"weight of node {name!r}")
            if "vnodes" in conf:
                vnodes = _pos_int(conf["vnodes"], f"vnodes of node {name!r}")
        else:
            weight = _pos_int(conf, f"weight of node {name!r}")
        out.append((name, weight, vnodes))
    if not out:
        raise ValueError("a ring needs at least one node")
    return out


def _last_wins(points: np.ndarray, owners: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique points; for equal points the owner inserted last (``order``: by point)."""
    p, o = points[order], owners[order]
    keep = np.ones(len(p), dtype=bool)
    keep[:-1] = p[1:] != p[:-1]  # a stable sort keeps insertion order among equal points: keep the last
    return p[keep], o[keep]


@register_router_type("uhashring")
class HashRingRouter(RawKeyRouter):
    """A ``uhashring.HashRing``: its default ring, or ``hash_fn="ketama"``.

    ``nodes``: node names (weight 1 each), or a mapping name -> weight, or
    name -> ``{"weight": w, "vnodes": v}`` (uhashring's own format; the
    keys ``hostname``, ``port`` and ``instance`` are accepted and ignored),
    in the order the ring got them.  ``vnodes``: the ring's default (160,
    or 40 with ``hash_fn="ketama"``).  ``replicas``: points per digest of
    the ketama ring (1..4, default 4; the default ring has none).

    >>> r = HashRingRouter({"a": 1, "b": {"weight": 2, "vnodes": 100}})
    >>> r.route_many(["k1", "k2", "k3"]).tolist() == [r.route_index(k) for k in ("k1", "k2", "k3")]
    True
    """

    _doc_fields = ("nodes", "hash_fn", "replicas")
    _routes_instead = ("a uhashring router routes its own MD5 key hashes", "use route_many(keys)")

    cli_options = frozenset({"shard_weights"})  # shardhash topology new

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Any, load: Callable[[str], Router]) -> Router:
        return cls(shards if weights is None else {s: int(round(weights.get(s, 1))) for s in shards})

    def hashing_description(self) -> str:
        return "uhashring HashRing, " + ("MD5 ketama (hash_fn='ketama')" if self._hash_fn else
                                         "128-bit MD5 (default hash_fn)")

    def __init__(self, nodes: Sequence[str] | Mapping[str, Any], *, hash_fn: str | None = None,
                 vnodes: int | None = None, replicas: int | None = None, version: int = 1) -> None:
        if hash_fn is not None and not isinstance(hash_fn, str):
            raise TypeError(f"hash_fn must be None or 'ketama' (a callable is not modelled), not "
                            f"{_describe(hash_fn)}")
        if hash_fn not in HASH_FNS:
            raise ValueError(f"hash_fn must be None or 'ketama', not {hash_fn!r}")
        ketama = hash_fn == "ketama"
        default_vnodes = (40 if ketama else 160) if vnodes is None else _pos_int(vnodes, "vnodes")
        if replicas is not None and not ketama:
            raise ValueError("replicas is a parameter of the ketama ring (hash_fn='ketama') only")
        reps = 4 if replicas is None else _pos_int(replicas, "replicas")
        if reps > 4:
            raise ValueError(f"replicas must be in 1..4 (one MD5 digest has four 32-bit words), got {reps}")
        confs = _node_confs(nodes, default_vnodes)
        super().__init__([c[0] for c in confs], version=version)
        self._set("_hash_fn", hash_fn)
        self._set("_replicas", reps)
        self._set("_confs", tuple(confs))
        self._set("_default_vnodes", default_vnodes)
        self._set("_vnodes_given", vnodes is not None)
        self._set("_replicas_given", replicas is not None)
        if ketama:
            self._build_ketama(confs, reps)
        else:
            self._build_default(confs)
        self._finish()

    # -- the two rings -----------------------------------------------------------

    def _build_ketama(self, confs: list[tuple[str, int, int]], reps: int) -> None:
        n = len(confs)
        total = sum(w for _, w, _ in confs)
        pts: list[int] = []
        idx: list[int] = []
        counts = []
        for s, (name, w, v) in enumerate(confs):
            ks = (v * n * w) // total
            counts.append(ks * reps)
            for k in range(ks):
                d = hashlib.md5(f"{name}-{k}".encode()).digest()
                for r in range(reps):
                    pts.append(int.from_bytes(d[4 * r:4 * r + 4], "little"))
                    idx.append(s)
        p = np.array(pts, dtype=np.uint32)
        o = np.array(idx, dtype=np.int32)
        points, owners = _last_wins(p, o, np.argsort(p, kind="stable"))
        index, bits = point_index(points)
        self._set_frozen(_points=points, _powners=owners, _index=index)
        self._set("_counts", tuple(counts))
        keys = _native.KetamaKeys(points, owners, index, bits, upper=True, fnv=False,
                                  empty_zero=False, str_all=True)
        self._use_native_keys(keys.capsule(), keys)  # route/route_index of bytes, ASCII str, int in C

    def _build_default(self, confs: list[tuple[str, int, int]]) -> None:
        pts: list[int] = []
        idx: list[int] = []
        counts = []
        for s, (name, w, v) in enumerate(confs):
            counts.append(v * w)
            for i in range(v * w):
                pts.append(int.from_bytes(hashlib.md5(f"{name}-{i}".encode()).digest(), "big"))
                idx.append(s)
        order = sorted(range(len(pts)), key=pts.__getitem__)  # stable: insertion order among equal points
        p_sorted = [pts[i] for i in order]
        o_sorted = [idx[i] for i in order]
        keep = [i for i in range(len(p_sorted)) if i == len(p_sorted) - 1 or p_sorted[i + 1] != p_sorted[i]]
        plist = [p_sorted[i] for i in keep]
        owners = np.array([o_sorted[i] for i in keep], dtype=np.int32)
        top32 = np.array([p >> 96 for p in plist], dtype=np.uint32)
        # The batch path looks keys up by the top 32 bits of their hash; a key
        # whose top 32 bits equal a point's is decided on all 128 bits.  Such
        # keys are found with a table of the points' top `mbits` bits.
        mbits = max(12, min(22, len(plist).bit_length() + 10))
        mark = np.zeros(1 << mbits, dtype=bool)
        mark[top32 >> np.uint32(32 - mbits)] = True
        index, bits = point_index(top32)
        self._set("_plist", plist)
        wrap = [int(o) for o in owners.tolist()]
        wrap.append(wrap[0])  # a key hash above the last point wraps to the first
        self._set("_wrap_owners", tuple(wrap))
        self._set("_wrap_names", tuple(self.shards[o] for o in wrap))
        self._set_frozen(_points=top32, _powners=owners, _index=index, _mark=mark)
        self._set("_mbits", mbits)
        self._set("_counts", tuple(counts))

    # -- document ----------------------------------------------------------------

    def _doc_params(self) -> dict[str, Any]:
        # a list, not an object: the order of the nodes decides ties
        return {"nodes": [[name, w, v] for name, w, v in self._confs], "hash_fn": self._hash_fn,
                "replicas": self._replicas if self._hash_fn == "ketama" else None}

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Any, version: int,
                     key_prefix: int | None) -> HashRingRouter:
        shards = raw_doc_shards(shards, key_prefix, "a uhashring router")
        nodes = params["nodes"]
        if not isinstance(nodes, list):
            raise TypeError(f"params.nodes must be a list of [name, weight, vnodes], not {_describe(nodes)}")
        for i, item in enumerate(nodes):
            if not isinstance(item, list) or len(item) != 3:
                raise TypeError(f"params.nodes[{i}] must be a [name, weight, vnodes] list, not {_describe(item)}")
        if [item[0] for item in nodes] != list(shards):
            raise ValueError("params.nodes must name exactly the document's shards, in their order")
        with doc_field("hash_fn"):
            hash_fn = params["hash_fn"]
            if hash_fn not in HASH_FNS:
                raise ValueError(f"must be null or 'ketama', not {hash_fn!r}")
        with doc_field("nodes"):
            return cls({name: {"weight": w, "vnodes": v} for name, w, v in nodes}, hash_fn=hash_fn,
                       replicas=params.get("replicas"), version=version)

    @classmethod
    def from_hashring(cls, ring: Any, *, version: int = 1) -> HashRingRouter:
        """The router of a live ``uhashring.HashRing`` (its nodes, weights,
        vnodes and ring type, after any ``add_node``/``remove_node``).  A
        ring built with a ``hash_fn`` callable is refused: it is not modelled."""
        from uhashring.ring_ketama import KetamaRing
        from uhashring.ring_meta import MetaRing

        rt = ring.runtime
        conf = {name: {"weight": c["weight"], "vnodes": c["vnodes"]} for name, c in ring.conf.items()}
        if isinstance(rt, KetamaRing):
            return cls(conf, hash_fn="ketama", replicas=rt._replicas, version=version)
        if isinstance(rt, MetaRing) and getattr(rt._hash_fn, "__qualname__", "") == \
                "MetaRing.__init__.<locals>.<lambda>":
            return cls(conf, version=version)
        raise ValueError("this HashRing hashes with its own hash_fn callable, which is not modelled")

    # -- introspection -----------------------------------------------------------

    @property
    def hash_fn(self) -> str | None:
        """``None`` (uhashring's default ring) or ``"ketama"``."""
        return self._hash_fn  # type: ignore[no-any-return]

    @property
    def replicas(self) -> int | None:
        """Points per digest of the ketama ring; None for the default ring."""
        return self._replicas if self._hash_fn == "ketama" else None

    @property
    def weights(self) -> dict[str, int]:
        return {name: w for name, w, _ in self._confs}

    @property
    def vnodes(self) -> dict[str, int]:
        """Each node's ``vnodes`` setting."""
        return {name: v for name, _, v in self._confs}

    @property
    def points_per_node(self) -> dict[str, int]:
        """Points each node puts on the ring (as ``HashRing.distribution``)."""
        return dict(zip(self.shards, self._counts))

    @property
    def points(self) -> list[int]:
        """The sorted ring: 128-bit points (default ring) or 32-bit ones (ketama)."""
        if self._hash_fn == "ketama":
            return [int(p) for p in self._points.tolist()]
        return list(self._plist)

    @property
    def point_owners(self) -> np.ndarray:
        """Each point's node index (read-only int32 array, in the order of ``points``)."""
        return self._powners  # type: ignore[no-any-return]

    def key_hash(self, key: Any) -> int:
        """The key's position: 128-bit (default ring) or 32-bit (ketama)."""
        d = hashlib.md5(str(key).encode("utf-8")).digest()
        if self._hash_fn == "ketama":
            return int.from_bytes(d[:4], "little")
        return int.from_bytes(d, "big")

    # -- routing -----------------------------------------------------------------

    def route_index(self, key: Any) -> int:
        """The index of the node that holds ``key``."""
        if self._hash_fn == "ketama":
            return super().route_index(key)  # in C for bytes, ASCII str and int keys
        return self._route_index_slow(key)

    def route(self, key: Any) -> str:
        """The node that holds ``key`` (``HashRing.get_node(key)``)."""
        if self._hash_fn == "ketama":
            return super().route(key)
        h = int.from_bytes(_md5((key if type(key) is str else str(key)).encode("utf-8")).digest(), "big")
        return self._wrap_names[bisect.bisect_right(self._plist, h)]  # type: ignore[no-any-return]

    def _route_index_slow(self, key: Any) -> int:
        h = self.key_hash(key)
        if self._hash_fn == "ketama":
            i = int(np.searchsorted(self._points, np.uint32(h), side="right"))
            return int(self._powners[0 if i == len(self._powners) else i])
        return self._wrap_owners[bisect.bisect_right(self._plist, h)]  # type: ignore[no-any-return]

    def route_many(self, keys: Any, *, out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
        """Node indices (int32 array) for many keys: MD5 and ring lookup in C
        without the GIL (the default ring decides the rare key whose top 32
        hash bits equal a point's on all 128 bits, in Python)."""
        if self._hash_fn == "ketama" and out is None and threads is None:
            small = self._route_small_keys(keys)
            if small is not None:
                return small
        data, offsets = _native.pack_keys(keys, convert=_str_utf8, raw_bytes=False)
        if self._hash_fn == "ketama":
            res = _native.ketama_route_offsets(self._points, self._powners, True, data, offsets, threads,
                                                 self._index, 0)
            return fill_out(out, res)
        h = _native.ketama_hash_offsets(data, offsets, threads).byteswap()  # top 32 bits, big-endian
        res = _native.ketama_lookup(self._points, self._powners, True, h, threads, self._index)
        close = np.flatnonzero(self._mark[h >> np.uint32(32 - self._mbits)])
        if close.size:
            near = close[np.isin(h[close], self._points)]
            plist, owners = self._plist, self._powners
            for i in near.tolist():
                kh = int.from_bytes(hashlib.md5(bytes(data[offsets[i]:offsets[i + 1]])).digest(), "big")
                j = bisect.bisect_right(plist, kh)
                res[i] = owners[0 if j == len(plist) else j]
        return fill_out(out, res)

    def owned_ranges(self) -> list[tuple[int, int, int]]:
        """Inclusive ``(lo, hi, node index)`` ranges covering ``[0, 2**64-1]``.

        ketama ring: key hash ``h`` is ``[h * 2**32, (h + 1) * 2**32 - 1]``.
        Default ring: the top 64 bits of the 128-bit key hash (a boundary
        between two points falls inside one 64-bit step; that step, a
        2**-64 share, goes to the point above it)."""
        full = 1 << 64
        own = [int(o) for o in self._powners.tolist()]
        if self._hash_fn == "ketama":
            pts = [int(p) << 32 for p in self._points.tolist()]
        else:
            pts = [p >> 64 for p in self._plist]
        out: list[tuple[int, int, int]] = []
        prev = 0
        for p, o in zip(pts, own):  # point i owns key hashes [p[i-1], p[i])
            if p > prev:
                out.append((prev, p - 1, o))
                prev = p
        out.append((prev, full - 1, own[0]))  # at or above the last point: wraps to point 0
        return out
