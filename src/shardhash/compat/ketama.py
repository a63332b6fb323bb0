"""ketama consistent hashing, as libketama, libmemcached, twemproxy and
uhashring build it -- reproduced to the bit, flavour by flavour.

All four build a *continuum* of 32-bit points: for each server, ``count``
MD5 digests of ``"<name>-<k>"`` (k = 0, 1, ...), each giving four points
(the digest's four little-endian 32-bit words).  A key goes to the server
of the first point at or after the first little-endian word of ``md5(key)``,
wrapping around.  They differ in details that move real keys:

=============  ==============================  ===============================  ==================
flavour        point name                      MD5s per server                  lookup / ties
=============  ==============================  ===============================  ==================
libketama      the server string as given      ``floorf(pct*40*n)``             first point >= h
libmemcached   ``host`` when the port is       ``floor(float32(pct*40*n +       first point >= h;
               11211, else ``host:port``       1e-10))``, all in float32        lowest server index
twemproxy      as libmemcached                 as libmemcached                  first point >= h
uhashring      the node name as given          ``40*n*w // sum(w)`` (integers)  first point > h;
                                                                                last inserted wins
=============  ==============================  ===============================  ==================

(``pct = w / sum(w)``, ``n`` servers.)  float32 arithmetic makes
libmemcached and twemproxy give some servers one MD5 (four points) fewer:
with 25 or 50 equal servers every server gets 39, not 40.

What is exact: the continuum of every flavour and the lookup, checked
against ``uhashring`` (its ``hash_fn='ketama'`` mode), libmemcached's own
``memcached_generate_hash`` (``KETAMA_WEIGHTED``) and a real twemproxy
(``nutcracker``, ``hash: md5`` and ``hash: fnv1a_64``); the libketama
flavour reproduces libketama's own regression vector (``test.sh``: the md5
of a million lookups).  twemproxy hashes keys with
its ``hash:`` setting: ``key_hash="fnv1a_64"`` (twemproxy's default, the
default of this flavour: a 32-bit FNV-1a variant with truncated constants
and sign-extended bytes), ``"md5"``, or any other twemproxy hash
(``KEY_HASHES``: ``one_at_a_time``, ``crc16``, ``crc32``, ``crc32a``,
``fnv1_64``, ``fnv1_32``, ``fnv1a_32``, ``hsieh``, ``murmur``, ``jenkins``;
checked against a live nutcracker), and ``names`` gives twemproxy's explicit
server names (``host:port:weight name``).  Two more libmemcached modes:
``libmemcached_ketama`` (``MEMCACHED_BEHAVIOR_KETAMA`` without weights: 100
``one_at_a_time`` points per server, keys hashed with ``one_at_a_time``) and
``spymemcached`` (its ``CONSISTENT_KETAMA_SPY`` distribution with
``KETAMA_WEIGHTED``: point names ``"/host:port-k"``), both checked against
libmemcached.  Not modelled: tie order between equal points in libketama,
twemproxy and libmemcached, which C's ``qsort`` leaves unspecified (here:
lowest server index).

Keys: bytes as they are, ``str`` as UTF-8, ``int`` as decimal text; the
uhashring flavour hashes ``str(key)`` for any key, exactly as uhashring does.

>>> r = KetamaRouter(["10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211"], flavor="uhashring")
>>> r.route("foo"), r.key_hash("foo")
('10.0.0.3:11211', 3675831724)
>>> KetamaRouter([f"s{i}:11211" for i in range(25)], flavor="libmemcached").md5_counts[0]
39
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from shardhash._parallel import kernel_array

from ..routing.base import RawKeyRouter, Router, fill_out, register_router_type
from . import _native
from . import _twemproxy_hash as _tw
from ._common import one_of, text_or_bytes
from ._doc import doc_field, raw_doc_shards
from ._ring import point_index

__all__ = ["FLAVORS", "MORE_FLAVORS", "ALL_FLAVORS", "KEY_HASHES", "KetamaRouter", "ketama_hash", "md5_counts"]

FLAVORS = ("libketama", "libmemcached", "twemproxy", "uhashring")  # the four MD5-digest continuums
# libmemcached's two other modes: non-weighted KETAMA, and its spymemcached-compatible distribution
MORE_FLAVORS = ("libmemcached_ketama", "spymemcached")
ALL_FLAVORS = FLAVORS + MORE_FLAVORS
_POINTS_PER_SERVER = 100  # libmemcached's non-weighted KETAMA: one key-hash point per name
_NATIVE_KEY_HASHES = ("md5", "fnv1a_64")  # hashed in C, one key or many
KEY_HASHES = _NATIVE_KEY_HASHES + tuple(_tw.TWEMPROXY_HASHES)  # twemproxy's hash: settings
_KEY_HASH_CODE = {"md5": 0, "fnv1a_64": 1}
_DEFAULT_PORT = 11211


def _check_flavor(flavor: Any) -> str:
    return one_of(flavor, "flavor", ALL_FLAVORS, "unknown ketama flavor")


def md5_counts(weights: Sequence[int], flavor: str) -> list[int]:
    """How many MD5 digests (of four points each) every server gets.

    >>> md5_counts([1] * 25, "libmemcached")[:2], md5_counts([1] * 25, "libketama")[:2]
    ([39, 39], [40, 40])
    >>> md5_counts([439, 81, 945, 259, 301], "libmemcached")[1], md5_counts([439, 81, 945, 259, 301], "uhashring")[1]
    (7, 8)
    """
    flavor = _check_flavor(flavor)
    if flavor == "libmemcached_ketama":
        raise ValueError("the libmemcached_ketama flavour makes 100 one_at_a_time points per server, "
                         "not MD5 digests")
    if isinstance(weights, (str, bytes)) or not isinstance(weights, (Sequence, np.ndarray)):
        raise TypeError(f"weights must be a list of positive ints, not {type(weights).__name__}")
    weights = _check_weight_list(list(weights), [f"#{i}" for i in range(len(weights))])
    if not weights:
        raise ValueError("md5_counts needs at least one weight")
    n = len(weights)
    total = sum(weights)
    out = []
    f32 = np.float32
    for w in weights:
        if flavor == "uhashring":
            out.append((40 * n * w) // total)
            continue
        pct = f32(w) / f32(total)  # float division, as (float)w / (float)total
        if flavor == "libketama":
            # floorf(pct * 40.0 * (float)n): the product is a double, narrowed to float
            out.append(int(math.floor(f32(float(pct) * 40.0 * float(n)))))
        else:
            # floor((float)(pct * 160 / 4 * (float)n + 1e-10)): float32 throughout
            prod = ((pct * f32(160)) / f32(4)) * f32(n)
            out.append(int(math.floor(f32(prod + f32(1e-10)))))
    return out


def _check_weight_list(w: list[Any], ids: Sequence[str]) -> list[int]:
    """Every weight a positive int below 2**32 (as libketama's unsigned int), else an error naming the node."""
    for i, x in enumerate(w):
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
            raise TypeError(f"weight of node {ids[i]!r} must be a positive int, not {x!r:.40}")
        if not 0 < int(x) < (1 << 32):
            raise ValueError(f"weight of node {ids[i]!r} must be in 1..2**32-1, got {int(x)}")
    return [int(x) for x in w]


def _split_host_port(node: str) -> tuple[str, int | None]:
    host, sep, port = node.rpartition(":")
    if sep and host and port.isdigit():
        return host, int(port)
    return node, None


def _node_id(node: Any) -> str:
    if isinstance(node, str):
        if not node:
            raise ValueError("node names must be non-empty")
        return node
    if isinstance(node, tuple) and len(node) == 2 and isinstance(node[0], str) and \
            isinstance(node[1], int) and not isinstance(node[1], bool):
        if not 0 < node[1] < 65536:
            raise ValueError(f"port {node[1]} of node {node!r} is not in 1..65535")
        return f"{node[0]}:{node[1]}"
    raise TypeError(f"a ketama node is a 'host:port' str or a (host, port) tuple, not {node!r:.60}")


def _point_name(node_id: str, flavor: str) -> bytes:
    if flavor == "spymemcached":  # libmemcached's spymemcached format: "/host:port"
        host, port = _split_host_port(node_id)
        return f"/{host}:{_DEFAULT_PORT if port is None else port}".encode()
    if flavor in ("libmemcached", "twemproxy", "libmemcached_ketama"):
        host, port = _split_host_port(node_id)
        if port is None or port == _DEFAULT_PORT:
            return host.encode("utf-8")
        return f"{host}:{port}".encode()
    return node_id.encode("utf-8")


def _key_bytes(key: Any, flavor: str) -> bytes:
    if flavor == "uhashring":
        return (key if isinstance(key, str) else str(key)).encode("utf-8")
    b = text_or_bytes(key)
    return b if b is not None else _decimal(key)


def _decimal(k: Any) -> bytes:
    if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
        return str(int(k)).encode()
    raise TypeError(f"a ketama key must be bytes, str or int, not {type(k).__name__} ({k!r:.60})")


def _check_key_hash(key_hash: Any, flavor: str) -> str:
    if flavor == "libmemcached_ketama":
        if key_hash not in (None, "one_at_a_time"):
            raise ValueError("the libmemcached_ketama flavour hashes with libmemcached's default, "
                             f"one_at_a_time, not {key_hash!r}")
        return "one_at_a_time"
    if key_hash is None:
        return "fnv1a_64" if flavor == "twemproxy" else "md5"
    name = one_of(key_hash, "key_hash", KEY_HASHES, "unknown key_hash")
    if name != "md5" and flavor != "twemproxy":
        raise ValueError(f"key_hash {name!r} is only available for the twemproxy flavor")
    return name


def _check_names(names: Any, ids: list[str], flavor: str) -> list[str] | None:
    """twemproxy's explicit server names (``host:port:weight name``): hashed for the points."""
    if names is None:
        return None
    if flavor != "twemproxy":
        raise ValueError("server names (host:port:weight name) are a twemproxy setting: use flavor='twemproxy'")
    if isinstance(names, (str, bytes)) or not isinstance(names, (Sequence, np.ndarray)):
        raise TypeError(f"names must be a list of server names, not {type(names).__name__}")
    out = list(names)
    if len(out) != len(ids):
        raise ValueError(f"{len(out)} names for {len(ids)} nodes")
    for i, n in enumerate(out):
        if not isinstance(n, str) or not n:
            raise TypeError(f"name of node {ids[i]!r} must be a non-empty str, not {n!r:.40}")
        if len(n.encode()) > 80:  # twemproxy formats "<name>-<k>" into 86 bytes
            raise ValueError(f"name of node {ids[i]!r} is longer than twemproxy's 80-byte point names")
    if len(set(out)) != len(out):
        raise ValueError("server names must be distinct")
    return out


def _str_utf8(k: Any) -> bytes:
    return str(k).encode("utf-8")


def ketama_hash(key: Any, flavor: str = "libketama") -> int:
    """The key's position on the continuum: the first little-endian 32-bit
    word of ``md5(key)``.

    >>> ketama_hash("foo")
    3675831724
    """
    return int(_native.ketama_hash(_key_bytes(key, _check_flavor(flavor))))


@register_router_type("ketama")
class KetamaRouter(RawKeyRouter):
    """A ketama continuum over memcached-style servers.

    ``nodes``: server strings (``"10.0.0.1:11211"``) or ``(host, port)``
    tuples, in configuration order (the order matters for ties); they become
    the router's shard ids.  ``weights``: a list (same order) or a mapping
    node -> positive int weight; default all 1.  ``flavor``: see the module
    docstring.  ``key_hash``: how keys are hashed -- ``"md5"`` (every
    flavour), or for twemproxy its ``hash:`` setting, ``"fnv1a_64"`` (the
    default there) or ``"md5"``.

    >>> r = KetamaRouter(["a:11211", "b:11211", "c:11211"], flavor="libmemcached")
    >>> r.route_many([b"foo", b"bar", b"baz"]).tolist() == [r.route_index(k) for k in (b"foo", b"bar", b"baz")]
    True
    >>> from shardhash import plan
    >>> grown = KetamaRouter(["a:11211", "b:11211", "c:11211", "d:11211"], flavor="libmemcached")
    >>> 0.2 < plan.diff(r, grown, [f"k{i}" for i in range(20_000)]).moved_fraction < 0.3
    True
    """

    _doc_fields = ("weights", "flavor", "key_hash", "names")

    _routes_instead = ("a ketama router routes its own 32-bit MD5 key hashes",
                       "use route_many(keys) or route_key_hashes(hashes)")

    def hashing_description(self) -> str:
        return f"MD5 ketama ({self.flavor})"

    cli_options = frozenset({"shard_weights", "flavor"})  # shardhash topology new

    @classmethod
    def from_cli(cls, shards: list[str], args: Any, *, weights: dict[str, float] | None,
                 hasher: Any, load: Callable[[str], Router]) -> Router:
        kw_w = None if weights is None else {k: int(round(v)) for k, v in weights.items()}
        return cls(shards, kw_w, args.flavor or "libketama")

    def __init__(self, nodes: Sequence[Any], weights: Sequence[int] | Mapping[Any, int] | None = None,
                 flavor: str = "libketama", *, key_hash: str | None = None, names: Sequence[str] | None = None,
                 version: int = 1) -> None:
        flavor = _check_flavor(flavor)
        khash = _check_key_hash(key_hash, flavor)
        if isinstance(nodes, (str, bytes)) or not isinstance(nodes, (Sequence, np.ndarray)):
            raise TypeError(f"nodes must be a list of servers, not {type(nodes).__name__}")
        ids = [_node_id(n) for n in nodes]
        if not ids:
            raise ValueError("a continuum needs at least one server")
        if weights is None:
            w = [1] * len(ids)
        elif isinstance(weights, Mapping):
            keyed = {(_node_id(k)): v for k, v in weights.items()}
            unknown = set(keyed) - set(ids)
            if unknown:
                raise ValueError(f"weights name unknown node(s): {sorted(unknown)!r}")
            w = [keyed.get(i, 1) for i in ids]
        else:
            w = list(weights)
            if len(w) != len(ids):
                raise ValueError(f"{len(w)} weights for {len(ids)} nodes")
        w = _check_weight_list(w, ids)
        point_names = _check_names(names, ids, flavor)
        super().__init__(ids, version=version)
        pts: list[int] = []
        idx: list[int] = []
        if flavor == "libmemcached_ketama":
            if any(x != 1 for x in w):
                raise ValueError("libmemcached turns KETAMA_WEIGHTED on as soon as a server has a weight "
                                 "above 1: use flavor='libmemcached' for weighted servers")
            counts = [0] * len(ids)  # no MD5 digests: 100 one_at_a_time points per server
            names_b = [_point_name(nid, flavor) + b"-" + str(k).encode()
                       for nid in ids for k in range(_POINTS_PER_SERVER)]
            data, offsets = _native.pack_keys(names_b)
            pts = [int(v) for v in _tw.hash_offsets("one_at_a_time", data, offsets).tolist()]
            idx = [s for s in range(len(ids)) for _ in range(_POINTS_PER_SERVER)]
        else:
            counts = md5_counts(w, flavor)
        for s, (nid, c) in enumerate(zip(ids, counts)):
            name = _point_name(nid, flavor) if point_names is None else point_names[s].encode("utf-8")
            for k in range(c):
                d = hashlib.md5(name + b"-" + str(k).encode()).digest()
                for h in range(4):
                    pts.append(int.from_bytes(d[4 * h:4 * h + 4], "little"))
                    idx.append(s)
        if not pts:
            raise ValueError("the weights leave every server without points")
        points = np.array(pts, dtype=np.uint32)
        owners = np.array(idx, dtype=np.int32)
        if flavor == "uhashring":
            # A dict keyed by point: for equal points the last inserted node wins.
            rev = len(points) - 1 - np.unique(points[::-1], return_index=True)[1]
            points, owners = points[rev], owners[rev]
        else:
            order = np.lexsort((owners, points))  # by point, then server index
            points, owners = points[order], owners[order]
        # lookup accelerator: about one point per bucket of the key hash's top bits
        index, bits = point_index(points)
        self._set_frozen(_index=index, _points=points, _powners=owners)
        self._set("_weights", tuple(w))
        self._set("_flavor", flavor)
        self._set("_key_hash", khash)
        self._set("_counts", tuple(counts))
        self._set("_names", None if point_names is None else tuple(point_names))
        if khash in _NATIVE_KEY_HASHES:
            keys = _native.KetamaKeys(points, owners, index, bits, upper=flavor == "uhashring",
                                      fnv=khash == "fnv1a_64", empty_zero=flavor == "twemproxy",
                                      str_all=flavor == "uhashring")
            self._use_native_keys(keys.capsule(), keys)  # route/route_index of bytes, ASCII str, int in C
        self._finish()

    def route_index(self, key: Any) -> int:
        """The index of the server that holds ``key``."""
        if self._key_hash in _NATIVE_KEY_HASHES:
            return super().route_index(key)  # in C for bytes, ASCII str and int keys
        return self._route_index_slow(key)

    def route(self, key: Any) -> str:
        """The server that holds ``key``."""
        if self._key_hash in _NATIVE_KEY_HASHES:
            return super().route(key)
        return self.shards[self._route_index_slow(key)]

    # -- document ----------------------------------------------------------------

    def _doc_params(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"weights": list(self._weights), "flavor": self._flavor, "key_hash": self._key_hash}
        if self._names is not None:  # only then: documents without names keep their fingerprints
            doc["names"] = list(self._names)
        return doc

    @classmethod
    def _from_params(cls, params: dict[str, Any], *, shards: tuple[str, ...], hasher: Any, version: int,
                     key_prefix: int | None) -> KetamaRouter:
        shards = raw_doc_shards(shards, key_prefix, "a ketama router")
        weights = params["weights"]
        if weights is not None and not isinstance(weights, (list, Mapping)):
            raise TypeError(f"params.weights must be a list or an object of node weights, not {weights!r}")
        if isinstance(weights, list) and len(weights) != len(shards):
            raise ValueError(f"params.weights: {len(weights)} weights for {len(shards)} shards")
        with doc_field("flavor"):
            flavor = _check_flavor(params["flavor"])
        with doc_field("key_hash"):
            _check_key_hash(params.get("key_hash"), flavor)
        names = params.get("names")
        with doc_field("names"):
            _check_names(names, list(shards), flavor)
        with doc_field("weights"):
            return cls(list(shards), weights, flavor, key_hash=params.get("key_hash"), names=names,
                       version=version)

    # -- introspection -----------------------------------------------------------

    @property
    def flavor(self) -> str:
        return self._flavor  # type: ignore[no-any-return]

    @property
    def names(self) -> list[str] | None:
        """twemproxy's explicit server names (hashed for the points), or None."""
        return None if self._names is None else list(self._names)

    @property
    def key_hash_name(self) -> str:
        """``"md5"`` or ``"fnv1a_64"`` (twemproxy)."""
        return self._key_hash  # type: ignore[no-any-return]

    @property
    def weights(self) -> dict[str, int]:
        return dict(zip(self.shards, self._weights))

    @property
    def md5_counts(self) -> list[int]:
        """MD5 digests per server (four points each), in node order."""
        return list(self._counts)

    @property
    def points(self) -> np.ndarray:
        """The sorted continuum (read-only uint32 array); ``point_owners`` holds each point's server index."""
        return self._points  # type: ignore[no-any-return]

    @property
    def point_owners(self) -> np.ndarray:
        return self._powners  # type: ignore[no-any-return]

    def key_hash(self, key: Any) -> int:
        """The key's 32-bit position on the continuum."""
        kb = _key_bytes(key, self._flavor)
        if self._flavor == "twemproxy" and not kb:
            return 0
        if self._key_hash == "fnv1a_64":
            return int(_native.twemproxy_fnv1a_64(kb))
        if self._key_hash != "md5":
            return _tw.hash_one(self._key_hash, kb)
        return int(_native.ketama_hash(kb))

    # -- routing -----------------------------------------------------------------

    def _hash_to_index(self, h: int) -> int:
        pts = self._points
        i = int(np.searchsorted(pts, np.uint32(h), side="right") if self._flavor == "uhashring"
                else np.searchsorted(pts, np.uint32(h), side="left"))
        return int(self._powners[0 if i == len(self._points) else i])

    def _route_index_slow(self, key: Any) -> int:
        # route()/route_index() of the keys the compiled path leaves here
        return self._hash_to_index(self.key_hash(key))

    def route_key_hashes(self, hashes: Any, *, out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
        """Server indices (int32) for precomputed 32-bit key hashes."""
        h = np.asarray(hashes)
        if h.dtype.kind not in "iu":
            raise TypeError(f"key hashes must be integers, not {h.dtype}")
        if h.size and (int(h.min()) < 0 or int(h.max()) > 0xFFFFFFFF):
            raise ValueError("key hashes must be in 0..2**32-1")
        res = _native.ketama_lookup(self._points, self._powners, self._flavor == "uhashring",
                                      kernel_array(h, dtype=np.uint32), threads, self._index)
        return fill_out(out, res)

    def route_many(self, keys: Any, *, out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
        """Server indices (int32 array) for many keys: MD5 and continuum
        lookup in one pass, without the GIL."""
        if out is None and threads is None and self._key_hash in _NATIVE_KEY_HASHES:  # up to 64 keys in C
            small = self._route_small_keys(keys)
            if small is not None:
                return small
        if self._key_hash not in _NATIVE_KEY_HASHES:  # twemproxy's other hashes, in numpy
            data, offsets = _native.pack_keys(keys, convert=_decimal)
            h = _tw.hash_offsets(self._key_hash, data, offsets)
            h[offsets[1:] == offsets[:-1]] = 0  # twemproxy hashes an empty key to 0
            return fill_out(out, _native.ketama_lookup(self._points, self._powners, False, h, threads,
                                                       self._index))
        if self._flavor == "uhashring":
            data, offsets = _native.pack_keys(keys, convert=_str_utf8, raw_bytes=False)
        else:
            data, offsets = _native.pack_keys(keys, convert=_decimal)
        res = _native.ketama_route_offsets(self._points, self._powners, self._flavor == "uhashring",
                                             data, offsets, threads, self._index,
                                             _KEY_HASH_CODE[self._key_hash])
        if self._flavor == "twemproxy" and len(res):
            empty = offsets[1:] == offsets[:-1]
            if empty.any():
                res[empty] = self._powners[0]
        return fill_out(out, res)

    def owned_ranges(self) -> list[tuple[int, int, int]]:
        """Inclusive ``(lo, hi, server index)`` ranges covering ``[0, 2**64-1]``:
        the 32-bit key-hash space scaled by ``2**32`` (key hash ``h`` is the
        interval ``[h * 2**32, (h + 1) * 2**32 - 1]``), for
        ``shardhash.plan.moved_ranges``."""
        pts = [int(p) for p in self._points.tolist()]
        own = [int(o) for o in self._powners.tolist()]
        out: list[tuple[int, int, int]] = []
        full = 1 << 32
        if self._flavor == "uhashring":
            # point i owns key hashes [p[i-1], p[i]); the wrap goes to point 0
            prev = 0
            for p, o in zip(pts, own):
                if p > prev:
                    out.append((prev << 32, (p << 32) - 1, o))
                prev = p
            # hashes at or above the last point wrap to point 0's owner
            out.append((pts[-1] << 32, (full << 32) - 1, own[0]))
        else:
            # point i owns key hashes (p[i-1], p[i]]; hashes above p[-1] wrap to point 0
            prev = -1
            for p, o in zip(pts, own):
                if p > prev:
                    out.append(((prev + 1) << 32, ((p + 1) << 32) - 1, o))
                prev = p
            if pts[-1] < full - 1:
                out.append(((pts[-1] + 1) << 32, (full << 32) - 1, own[0]))
        return out
