"""Arrow-batch kernels: the building blocks of the Dask, Spark and Ray adapters.

Everything an engine runs on a worker goes through this module, so every
engine gives the answers one machine gives:

* :func:`route_batch` -- an Arrow record batch plus a shard column
  (dictionary-encoded shard names, or ``int32`` indices), computed by the same
  compiled ``route_many`` a single process uses, zero-copy over the batch's
  Arrow buffers.
* :func:`diff_batch` -- a small :class:`DiffPartial` (the old x new move
  matrix, optionally weighted) that merges associatively and commutatively;
  merging the partials of any split of the ids, in any tree, gives the
  :class:`shardhash.plan.PlanReport` that :func:`shardhash.plan.diff` gives.
* :func:`analyze_batch` -- an :class:`AnalyzePartial` (per-shard counts and
  weights, plus a mergeable heavy-hitter summary).
* :class:`ShippedRouter` -- a router travelling as its document.  A worker
  process builds each router once and keeps it in a cache keyed by its
  fingerprint, so a Maglev table or a 256K-token ring is built once per
  worker, not per task or batch.  :func:`router_builds` counts the builds.

Ids are integers, strings or binary; a null id, a missing column or a column
whose kind (integer / string / binary) differs from the one expected is an
error naming the source (a file, or a partition) and the row.

>>> import pyarrow as pa
>>> from shardhash import JumpRouter, plan
>>> old, new = JumpRouter(["a", "b"]), JumpRouter(["a", "b", "c"])
>>> batch = pa.record_batch({"id": pa.array(range(10_000), pa.int64())})
>>> route_batch(batch, "id", old).column("shard").type
DictionaryType(dictionary<values=string, indices=int32, ordered=0>)
>>> halves = [diff_batch(batch.slice(0, 4000), "id", old, new),
...           diff_batch(batch.slice(4000), "id", old, new)]
>>> rep = halves[1].merge(halves[0]).report()
>>> rep.matrix.tolist() == plan.diff(old, new, range(10_000)).matrix.tolist()
True
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

from shardhash._parallel import kernel_array

from .io import require_pyarrow

if TYPE_CHECKING:
    from .plan import PlanReport

__all__ = [
    "ShippedRouter",
    "ship",
    "resolve",
    "router_builds",
    "id_kind",
    "shard_indices",
    "route_batch",
    "DiffPartial",
    "diff_batch",
    "AnalyzePartial",
    "analyze_batch",
    "parquet_files",
    "scan_parquet",
    "ParquetUnit",
    "parquet_units",
]

# --------------------------------------------------------------- the router cache

_CACHE_SIZE = 16
_cache: OrderedDict[str, tuple[str, Any]] = OrderedDict()
_builds: dict[str, int] = {}
_lock = threading.Lock()


def _load(fp: str, doc: str) -> Any:
    from .routing import load_router

    with _lock:
        hit = _cache.get(fp)
        if hit is not None and hit[0] == doc:
            _cache.move_to_end(fp)
            return hit[1]
    router = load_router(doc)  # checks the document, and that it hashes to its fingerprint
    if router.fingerprint != fp:
        raise ValueError(f"shipped router: its document has fingerprint {router.fingerprint!r}, "
                         f"not {fp!r} it was shipped under")
    with _lock:
        hit = _cache.get(fp)
        if hit is not None and hit[0] == doc:  # another thread built it meanwhile
            return hit[1]
        _cache[fp] = (doc, router)
        _builds[fp] = _builds.get(fp, 0) + 1
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return router


class ShippedRouter:
    """A router as it travels to workers: its document (JSON text) and fingerprint.

    Pickling it ships the document only; :meth:`get` on a worker returns the
    router, built at most once per process (a cache of the last 16 routers,
    keyed by fingerprint; a hit must also match the document text).

    >>> from shardhash import MaglevRouter
    >>> import pickle
    >>> s = ship(MaglevRouter(["a", "b", "c"]))
    >>> pickle.loads(pickle.dumps(s)).get() is s.get()
    True
    """

    __slots__ = ("fingerprint", "document", "shards")
    fingerprint: str
    document: str
    shards: tuple[str, ...]

    def __init__(self, router: Any) -> None:
        if isinstance(router, ShippedRouter):
            fp, doc, shards = router.fingerprint, router.document, router.shards
        else:
            if not all(hasattr(router, a) for a in ("shards", "route_many", "to_json", "fingerprint")):
                raise TypeError(f"expected a shardhash router, not {type(router).__name__}")
            fp, doc, shards = router.fingerprint, router.to_json(), tuple(router.shards)
            with _lock:  # the sender already holds it: no need to build it again here
                if fp not in _cache:
                    _cache[fp] = (doc, router)
        object.__setattr__(self, "fingerprint", fp)
        object.__setattr__(self, "document", doc)
        object.__setattr__(self, "shards", shards)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ShippedRouter is immutable")

    def get(self) -> Any:
        """The router (from this process's cache, or built from the document once)."""
        return _load(self.fingerprint, self.document)

    def __reduce__(self) -> tuple[Any, tuple[str, str, tuple[str, ...]]]:
        return (_unship, (self.fingerprint, self.document, self.shards))

    def __dask_tokenize__(self) -> tuple[str, str]:
        return ("shardhash.router", self.fingerprint)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShippedRouter) and other.fingerprint == self.fingerprint

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __repr__(self) -> str:
        return f"ShippedRouter(fingerprint={self.fingerprint[:12]!r}, shards={len(self.shards)})"


def _unship(fp: str, doc: str, shards: tuple[str, ...]) -> ShippedRouter:
    s = object.__new__(ShippedRouter)
    object.__setattr__(s, "fingerprint", fp)
    object.__setattr__(s, "document", doc)
    object.__setattr__(s, "shards", tuple(shards))
    return s


def ship(router: Any) -> ShippedRouter:
    """Wrap a router (or a document: dict, JSON text, path) for shipping to workers."""
    if isinstance(router, ShippedRouter):
        return router
    if not hasattr(router, "route_many"):
        from .routing import load_router

        router = load_router(router)
    return ShippedRouter(router)


def resolve(router: Any) -> Any:
    """The router behind ``router`` (a router, or a :class:`ShippedRouter`)."""
    return router.get() if isinstance(router, ShippedRouter) else router


def router_builds() -> dict[str, int]:
    """How many times this process built each router from a shipped document
    (fingerprint -> count).  A router shipped to a worker is built there once."""
    with _lock:
        return dict(_builds)


# ----------------------------------------------------------------- id columns

_KINDS = ("int", "str", "bytes")


def id_kind(typ: Any) -> str:
    """``"int"``, ``"str"`` or ``"bytes"`` for an Arrow (or pandas/numpy) id type.

    Integers of any width hash alike; strings and binary are other keys (the
    integer 42 and the string "42" land on different shards), so a column
    must keep one kind across every file and partition.
    """
    pa = require_pyarrow("Arrow id columns")
    if not isinstance(typ, pa.DataType):
        typ = _pandas_arrow_type(typ)
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    if pa.types.is_integer(typ):
        return "int"
    for kind, test in (("str", "string"), ("bytes", "binary")):
        # (the *_view types are newer than the oldest pyarrow supported)
        names = (f"is_{test}", f"is_large_{test}", f"is_{test}_view")
        if any(getattr(pa.types, n, lambda t: False)(typ) for n in names):
            return kind
    raise TypeError(f"ids must be integers, strings or binary, not {typ}")


def _pandas_arrow_type(dtype: Any) -> Any:
    pa = require_pyarrow("Arrow id columns")
    pyarrow_dtype = getattr(dtype, "pyarrow_dtype", None)
    if pyarrow_dtype is not None:
        return pyarrow_dtype
    name = str(dtype)
    if name in ("string", "str", "string[python]", "string[pyarrow]"):
        return pa.string()
    if name.lower() in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        return pa.from_numpy_dtype(np.dtype(name.lower()))
    if name == "object":
        raise TypeError("ids of dtype object: cast the column to int64 or string first "
                        "(an object column can mix integers and strings)")
    try:
        return pa.from_numpy_dtype(np.dtype(dtype))
    except (TypeError, ValueError, pa.ArrowNotImplementedError):
        raise TypeError(f"ids must be integers, strings or binary, not {dtype}") from None


def _where(source: Any, offset: int, row: int) -> str:
    at = f"row {offset + row}"
    return f"{source}: {at}" if source is not None else at


def _column(batch: Any, column: str, source: Any) -> Any:
    names = list(batch.schema.names) if hasattr(batch, "schema") else list(batch.columns)
    if column not in names:
        where = f"{source}: " if source is not None else ""
        raise ValueError(f"{where}no column {column!r} (columns: {', '.join(map(str, names))})")
    return batch.column(column) if hasattr(batch, "schema") else batch[column]


def _check_ids(values: Any, column: str, *, source: Any, offset: int, kind: str | None) -> Any:
    """Validate an id column (Arrow array / chunked array or pandas Series);
    returns something ``route_many`` reads without copying."""
    pa = require_pyarrow("Arrow id columns")
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        got = id_kind(values.type)
        if pa.types.is_dictionary(values.type):
            values = values.cast(values.type.value_type)
        nulls = values.null_count
        if nulls:
            first = _first_null(values)
            raise ValueError(f"{_where(source, offset, first)}: id column {column!r} is null "
                             f"({nulls} null id(s) in this batch)")
    else:  # pandas Series (Dask partitions)
        try:
            got = id_kind(values.dtype)
        except TypeError as exc:
            where = f"{source}: " if source is not None else ""
            raise TypeError(f"{where}column {column!r}: {exc}") from None
        isna = values.isna().to_numpy()
        if isna.any():
            first = int(np.argmax(isna))
            raise ValueError(f"{_where(source, offset, first)}: id column {column!r} is null "
                             f"({int(isna.sum())} null id(s) in this partition)")
        dtype = values.dtype
        if got != "int" or getattr(dtype, "pyarrow_dtype", None) is not None:
            values = pa.array(values)  # zero-copy for Arrow-backed columns
        elif isinstance(dtype, np.dtype):
            values = values.to_numpy()
        else:  # pandas' nullable integers (no NA left: checked above)
            values = values.to_numpy(dtype=dtype.numpy_dtype)
    if kind is not None and got != kind:
        where = f"{source}: " if source is not None else ""
        raise TypeError(f"{where}id column {column!r} holds {got} ids where {kind} ids were expected: "
                        f"ids of one kind only (42 and '42' are different keys)")
    return values


def _first_null(values: Any) -> int:
    pa = require_pyarrow("Arrow id columns")
    import pyarrow.compute as pc

    mask = pc.is_null(values)
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    return int(np.flatnonzero(mask.to_numpy(zero_copy_only=False))[0])


def _for_router(values: Any, router: Any) -> Any:
    """What ``router.route_many`` reads: Arrow itself (zero-copy) for routers
    that place keys by their hash (the hashing kernels read Arrow buffers);
    NumPy for routers on raw keys and compat routers (integers zero-copy,
    text and binary as Python objects)."""
    if router.routes_on_hash or isinstance(values, np.ndarray):
        return values
    pa = require_pyarrow("Arrow id columns")
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if pa.types.is_integer(values.type):
        return values.to_numpy()
    return values.to_numpy(zero_copy_only=False)


def shard_indices(values: Any, router: Any, *, column: str = "id", source: Any = None, offset: int = 0,
                  kind: str | None = None) -> np.ndarray:
    """Shard index (``int32``) of every id in ``values`` (Arrow array, chunked
    array or pandas Series), after the checks described in the module doc.

    >>> import pyarrow as pa
    >>> from shardhash import JumpRouter
    >>> r = JumpRouter(["a", "b", "c"])
    >>> shard_indices(pa.array([1, 2, 3]), r).tolist() == r.route_many([1, 2, 3]).tolist()
    True
    """
    router = resolve(router)
    values = _check_ids(values, column, source=source, offset=offset, kind=kind)
    with _naming_rows(source, offset, len(values)):
        idx: np.ndarray = router.route_many(_for_router(values, router))
    return idx


@contextmanager
def _naming_rows(source: Any, offset: int, n: int) -> Iterator[None]:
    """A routing error inside the block names the source and the rows of the batch."""
    try:
        yield
    except (ValueError, TypeError, OverflowError) as exc:
        where = f"{source}: " if source is not None else ""
        raise type(exc)(f"{where}rows {offset}..{offset + n - 1}: {exc}") from None


# ------------------------------------------------------------------ route


def route_batch(batch: Any, column: str, router: Any, name: str = "shard", *, indices: bool = False,
                source: Any = None, offset: int = 0, kind: str | None = None) -> Any:
    """``batch`` (an Arrow RecordBatch or Table) with a shard column appended.

    The column holds dictionary-encoded shard names (``indices=False``) or the
    ``int32`` shard index.  ``source`` and ``offset`` name the batch's file and
    first row in error messages; ``kind`` (``"int"``, ``"str"``, ``"bytes"``)
    is the id kind every batch must have.

    >>> import pyarrow as pa
    >>> from shardhash import RingRouter
    >>> r = RingRouter(["a", "b"], vnodes=8)
    >>> out = route_batch(pa.record_batch({"id": ["x", "y"]}), "id", r)
    >>> out.column("shard").to_pylist() == [r.route("x"), r.route("y")]
    True
    """
    pa = require_pyarrow("route_batch")
    r = resolve(router)
    if name in batch.schema.names:
        raise ValueError(f"the batch already has a column named {name!r}: choose another name")
    idx = shard_indices(_column(batch, column, source), r, column=column, source=source, offset=offset,
                        kind=kind)
    col = pa.array(idx, type=pa.int32())
    if not indices:
        col = pa.DictionaryArray.from_arrays(col, pa.array(list(r.shards), type=pa.string()))
    if isinstance(batch, pa.Table):
        return batch.append_column(name, pa.chunked_array([col]) if batch.num_rows else
                                   pa.chunked_array([], type=col.type))
    return pa.RecordBatch.from_arrays([*batch.columns, col], names=[*batch.schema.names, name])


def shard_type(router: Any, *, indices: bool = False) -> Any:
    """The Arrow type of the column :func:`route_batch` appends."""
    pa = require_pyarrow("shard_type")
    return pa.int32() if indices else pa.dictionary(pa.int32(), pa.string())


# ------------------------------------------------------------------- partials


def _pid() -> str:
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class DiffPartial:
    """The part of a :class:`shardhash.plan.PlanReport` that one slice of ids gives.

    :meth:`merge` is associative and commutative: the move matrix and the row
    count are exact integer sums, so any tree of merges over any split of the
    ids gives :func:`shardhash.plan.diff`'s matrix.  Weighted matrices are
    float64 sums: exact for integer weights (bytes, counts) while every
    cell's total stays below 2**53, otherwise equal up to float rounding, as
    two runs of ``plan.diff`` with different chunk sizes are.  ``builds``
    records, per worker process, how many times a router was built there,
    and ``peak_rss`` that process's peak resident memory (both merged by
    maximum).
    """

    old: ShippedRouter
    new: ShippedRouter
    matrix: np.ndarray
    weighted_matrix: np.ndarray | None = None
    batches: int = 0
    builds: dict[str, int] = field(default_factory=dict)
    peak_rss: dict[str, int] = field(default_factory=dict)

    @classmethod
    def empty(cls, old: Any, new: Any, *, weighted: bool = False) -> DiffPartial:
        o, n = ship(old), ship(new)
        m = np.zeros((len(o.shards), len(n.shards)), dtype=np.int64)
        w = np.zeros(m.shape, dtype=np.float64) if weighted else None
        return cls(o, n, m, w)

    @property
    def total(self) -> int:
        return int(self.matrix.sum())

    def merge(self, other: DiffPartial) -> DiffPartial:
        """A new partial covering both (neither input changes)."""
        if not isinstance(other, DiffPartial):
            raise TypeError(f"cannot merge a DiffPartial with {type(other).__name__}")
        if (self.old.fingerprint, self.new.fingerprint) != (other.old.fingerprint, other.new.fingerprint):
            raise ValueError("cannot merge partials of different routers (fingerprints differ)")
        if (self.weighted_matrix is None) != (other.weighted_matrix is None):
            # An empty slice has no weights to speak of; anything else is a mixture.
            if self.total and other.total:
                raise ValueError("weights are missing for some partials: give weights for every key or none")
        w: np.ndarray | None = None
        if self.weighted_matrix is not None or other.weighted_matrix is not None:
            w = np.zeros(self.matrix.shape, dtype=np.float64)
            for p in (self, other):
                if p.weighted_matrix is not None:
                    w += p.weighted_matrix
        return DiffPartial(self.old, self.new, self.matrix + other.matrix, w,
                           self.batches + other.batches, _max_merge(self.builds, other.builds),
                           _max_merge(self.peak_rss, other.peak_rss))

    def report(self) -> PlanReport:
        """The :class:`shardhash.plan.PlanReport` (as ``plan.diff`` makes it)."""
        from .plan import PlanReport, ideal_fraction

        old, new = self.old.get(), self.new.get()
        rep = PlanReport(tuple(old.shards), tuple(new.shards), int(self.matrix.sum()), 0,
                         ideal_fraction(old, new), self.matrix.copy(),
                         None if self.weighted_matrix is None else self.weighted_matrix.copy())
        rep.moved = int(self.matrix[rep._moved_mask()].sum())
        return rep

    # A partial travels between processes as one Arrow row (Spark, Ray) or a
    # pickle (Dask); the routers stay out of it (the driver has them).
    def to_row(self) -> dict[str, Any]:
        """The partial as one row of plain values (see :data:`PARTIAL_FIELDS`)."""
        return {
            "old_fp": self.old.fingerprint, "new_fp": self.new.fingerprint,
            "matrix": self.matrix.astype("<i8").tobytes(),
            "weighted": None if self.weighted_matrix is None else self.weighted_matrix.astype("<f8").tobytes(),
            "batches": self.batches, "builds": json.dumps(self.builds, sort_keys=True),
            "peak_rss": json.dumps(self.peak_rss, sort_keys=True),
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any], old: Any, new: Any) -> DiffPartial:
        """Rebuild a partial made by :meth:`to_row` for the routers ``old`` and ``new``."""
        so, sn = ship(old), ship(new)
        if (row["old_fp"], row["new_fp"]) != (so.fingerprint, sn.fingerprint):
            raise ValueError("partial row belongs to other routers (fingerprints differ)")
        shape = (len(so.shards), len(sn.shards))
        m = np.frombuffer(row["matrix"], dtype="<i8").astype(np.int64).reshape(shape)
        w = None if row["weighted"] is None else \
            np.frombuffer(row["weighted"], dtype="<f8").astype(np.float64).reshape(shape)
        return cls(so, sn, m, w, int(row["batches"]), {k: int(v) for k, v in json.loads(row["builds"]).items()},
                   {k: int(v) for k, v in json.loads(row.get("peak_rss") or "{}").items()})


def partial_schema() -> Any:
    """The Arrow schema of :meth:`DiffPartial.to_row` rows."""
    pa = require_pyarrow("partial_schema")
    return pa.schema([("old_fp", pa.string()), ("new_fp", pa.string()), ("matrix", pa.binary()),
                      ("weighted", pa.binary()), ("batches", pa.int64()), ("builds", pa.string()),
                      ("peak_rss", pa.string())])


def partial_batch(part: DiffPartial) -> Any:
    """One partial as a one-row Arrow RecordBatch."""
    pa = require_pyarrow("partial_batch")
    row = part.to_row()
    return pa.RecordBatch.from_pylist([row], schema=partial_schema())


def _weights_of(batch: Any, weights: str | None, source: Any, offset: int) -> np.ndarray | None:
    if weights is None:
        return None
    pa = require_pyarrow("weights")
    col = _column(batch, weights, source)
    if isinstance(col, (pa.Array, pa.ChunkedArray)):
        if col.null_count:
            raise ValueError(f"{_where(source, offset, _first_null(col))}: weight column {weights!r} is null")
        if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            raise TypeError(f"weight column {weights!r} must be numeric, not {col.type}")
        w = np.asarray(col.to_numpy() if isinstance(col, pa.Array) else col.to_numpy(), dtype=np.float64)
    else:
        if col.isna().any():
            first = int(np.argmax(col.isna().to_numpy()))
            raise ValueError(f"{_where(source, offset, first)}: weight column {weights!r} is null")
        w = np.asarray(col.to_numpy(), dtype=np.float64)
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        first = int(np.argmax(bad))
        raise ValueError(f"{_where(source, offset, first)}: weight {w[first]!r} in column {weights!r} "
                         "must be a finite number >= 0")
    return kernel_array(w)


def diff_batch(batch: Any, column: str, old: Any, new: Any, weights: str | None = None, *,
               source: Any = None, offset: int = 0, kind: str | None = None) -> DiffPartial:
    """Count what moves from ``old`` to ``new`` over one batch (Arrow
    RecordBatch / Table or pandas DataFrame): a :class:`DiffPartial`.

    ``weights`` names a numeric column (bytes, requests) for the weighted matrix.

    >>> import pyarrow as pa
    >>> from shardhash import ModuloRouter
    >>> from shardhash import plan
    >>> old, new = ModuloRouter(["a", "b", "c"]), ModuloRouter(["a", "b", "c", "d"])
    >>> p = diff_batch(pa.record_batch({"id": list(range(1200))}), "id", old, new)
    >>> p.report().moved == plan.diff(old, new, range(1200)).moved
    True
    """
    from ._plan import count_moves

    so, sn = ship(old), ship(new)
    o, n = so.get(), sn.get()
    part = DiffPartial.empty(so, sn, weighted=weights is not None)
    values = _check_ids(_column(batch, column, source), column, source=source, offset=offset, kind=kind)
    w = _weights_of(batch, weights, source, offset)
    with _naming_rows(source, offset, len(values)):
        if o.routes_on_hash and n.routes_on_hash and o.hasher == n.hasher:
            h = o.hasher.hash_array(values, threads=1)
            oi = o.route_hashes(h, threads=1)
            ni = n.route_hashes(h, threads=1)
        else:
            oi = o.route_many(_for_router(values, o), threads=1)
            ni = n.route_many(_for_router(values, n), threads=1)
    count_moves(oi, ni, part.matrix, w, part.weighted_matrix, threads=1)
    part.batches = 1
    part.builds = _builds_of(so, sn)
    part.peak_rss = {_pid(): peak_rss()}
    return part


def _builds_of(*routers: ShippedRouter) -> dict[str, int]:
    with _lock:
        n = max((_builds.get(r.fingerprint, 0) for r in routers), default=0)
    return {_pid(): n}


def peak_rss() -> int:
    """This process's peak resident memory in bytes (0 where the platform does not say)."""
    try:
        import resource
    except ImportError:  # Windows
        return 0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)


@dataclass
class AnalyzePartial:
    """Per-shard load and hot keys of one slice of ids; merges like :class:`DiffPartial`.

    ``counts`` (and ``weighted``) are exact sums, equal to
    :func:`shardhash.analysis.shard_load` over the same ids.  ``hot`` is a
    Misra-Gries summary (:class:`shardhash.analysis.HeavyHitters`); merged
    summaries keep its guarantee (every key heavier than total/(capacity+1)
    is kept, each count is low by at most ``error``), not the exact list a
    single pass would print.
    """

    router: ShippedRouter | None
    total: int
    counts: np.ndarray | None
    weighted: np.ndarray | None
    weight_total: float
    hot: Any
    builds: dict[str, int] = field(default_factory=dict)

    def merge(self, other: AnalyzePartial) -> AnalyzePartial:
        if not isinstance(other, AnalyzePartial):
            raise TypeError(f"cannot merge an AnalyzePartial with {type(other).__name__}")
        if (self.router is None) != (other.router is None) or (
                self.router is not None and other.router is not None
                and self.router.fingerprint != other.router.fingerprint):
            raise ValueError("cannot merge partials of different routers")
        if self.hot.capacity != other.hot.capacity:
            raise ValueError("cannot merge heavy-hitter summaries of different capacities")
        counts = None if self.counts is None else self.counts + other.counts
        weighted = _add_opt(self.weighted, other.weighted)
        return AnalyzePartial(self.router, self.total + other.total, counts, weighted,
                              self.weight_total + other.weight_total, self.hot.merged(other.hot),
                              _max_merge(self.builds, other.builds))

    def load_report(self) -> Any:
        """A :class:`shardhash.analysis.LoadReport` (needs a router)."""
        from .analysis import LoadReport

        if self.router is None or self.counts is None:
            raise ValueError("no router: no per-shard load")
        return LoadReport(tuple(self.router.get().shards), self.counts.copy(),
                          None if self.weighted is None else self.weighted.copy())


def _max_merge(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = max(out.get(k, 0), v)
    return out


def _add_opt(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return None if b is None else b.copy()
    total: np.ndarray = a.copy() if b is None else a + b
    return total


def analyze_batch(batch: Any, column: str, router: Any = None, weights: str | None = None, *,
                  capacity: int = 10_000, source: Any = None, offset: int = 0,
                  kind: str | None = None) -> AnalyzePartial:
    """Per-shard load (when ``router`` is given) and a heavy-hitter summary of one batch.

    >>> import pyarrow as pa
    >>> from shardhash import JumpRouter
    >>> b = pa.record_batch({"id": [1, 1, 1, 2, 3]})
    >>> p = analyze_batch(b, "id", JumpRouter(["a", "b"]), capacity=2)
    >>> int(p.counts.sum()), p.hot.top(1)[0][0]
    (5, 1)
    """
    from .analysis import HeavyHitters

    sr = None if router is None else ship(router)
    values = _check_ids(_column(batch, column, source), column, source=source, offset=offset, kind=kind)
    w = _weights_of(batch, weights, source, offset)
    counts = weighted = None
    if sr is not None:
        r = sr.get()
        with _naming_rows(source, offset, len(values)):
            idx = r.route_many(_for_router(values, r), threads=1)
        counts = np.bincount(idx, minlength=len(r.shards)).astype(np.int64)
        if w is not None:
            weighted = np.bincount(idx, weights=w, minlength=len(r.shards))
    hh = HeavyHitters(capacity)
    hh.update(values, w)
    builds = _builds_of(sr) if sr is not None else {}
    return AnalyzePartial(sr, len(values), counts, weighted, float(w.sum()) if w is not None else 0.0, hh, builds)


class _Mergeable(Protocol):
    def merge(self: _P, other: _P, /) -> _P: ...


_P = TypeVar("_P", bound=_Mergeable)


def _merge(a: _P, b: _P) -> _P:
    return a.merge(b)


def tree_reduce(parts: Sequence[_P], merge: Callable[[_P, _P], _P] = _merge) -> _P:
    """Merge partials pairwise, level by level (the shape engines reduce in).

    ``merge(a, b)`` defaults to ``a.merge(b)``; an engine may pass one that
    builds a task instead (Dask: ``dask.delayed``), so that the tree runs on
    the cluster.
    """
    level = list(parts)
    if not level:
        raise ValueError("nothing to reduce")
    while len(level) > 1:
        level = [merge(level[i], level[i + 1]) if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
    return level[0]


# ----------------------------------------------------------------- Parquet input


def parquet_files(spec: str | os.PathLike[str] | Sequence[Any]) -> list[str]:
    """The Parquet files a folder, a glob or a list names, sorted (an empty match is an error)."""
    import glob

    if isinstance(spec, (list, tuple)):
        out: list[str] = []
        for s in spec:
            out.extend(parquet_files(s))
        return out
    text = os.fspath(spec)  # type: ignore[arg-type]
    if os.path.isdir(text):
        files = sorted(
            os.path.join(d, f) for d, _, fs in os.walk(text) for f in fs
            if f.endswith((".parquet", ".pq")) and not f.startswith((".", "_"))
        )
    elif any(c in text for c in "*?["):
        files = sorted(f for f in glob.glob(text, recursive=True) if os.path.isfile(f))
    else:
        if not os.path.isfile(text):
            raise ValueError(f"{text}: no such file or folder")
        files = [text]
    if not files:
        raise ValueError(f"{text}: no Parquet files there")
    return files


def _open_parquet(path: str) -> Any:
    """A ``pyarrow.parquet.ParquetFile`` for a local path or a URI pyarrow's filesystems know
    (``file://``, ``s3://``, ``gs://``, ``hdfs://``...)."""
    import pyarrow.parquet as pq

    if "://" in path:
        from pyarrow import fs

        filesystem, inner = fs.FileSystem.from_uri(path)
        return pq.ParquetFile(inner, filesystem=filesystem)
    return pq.ParquetFile(path)


def display_path(path: str) -> str:
    """``path`` as errors name it: a ``file:`` URI as its local path, anything else as given."""
    if path.startswith("file:"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(path).path)
    return path


#: Footers of remote files (object storage, HDFS) read at once.  A footer is
#: one small read, so for such files the time is round trips, which threads
#: overlap (pyarrow releases the GIL while it waits): 300 files at a 20 ms
#: round trip took 6.2 s one by one and 0.22 s on 32 threads.  Local files
#: are read one by one: 1,000 local footers took 0.13 s so, and 0.21 s on
#: threads (the metadata objects are built under the GIL).
FOOTER_THREADS = 32


def _is_remote(path: str) -> bool:
    return "://" in path and not path.startswith("file:")


def _map_io(fn: Callable[[str], Any], items: Sequence[str]) -> list[Any]:
    """``[fn(x) for x in items]``, in order; on up to :data:`FOOTER_THREADS`
    threads when several items are remote paths (``fn`` returns its errors
    rather than raising, so that the caller reports the first in ``items``
    order)."""
    if len(items) < 4 or FOOTER_THREADS <= 1 or not any(_is_remote(x) for x in items):
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(FOOTER_THREADS, len(items)),
                            thread_name_prefix="shardhash-footers") as pool:
        return list(pool.map(fn, items))


def _footers(files: Sequence[str], column: str, weights: str | None) -> tuple[str, list[Any]]:
    """Every file's footer, after the checks :func:`scan_parquet` describes; returns ``(kind, metadata)``."""
    pa = require_pyarrow("Parquet input")

    def read(f: str) -> Any:
        try:
            with _open_parquet(f) as pf:
                return pf.metadata
        except (OSError, pa.ArrowException) as exc:
            return exc

    kinds: dict[str, str] = {}
    metas = []
    for f, meta in zip(files, _map_io(read, files)):
        name = display_path(f)
        if isinstance(meta, BaseException):
            raise ValueError(f"{name}: not a readable Parquet file: {meta}") from None
        metas.append(meta)
        schema = meta.schema.to_arrow_schema()
        if column not in schema.names:
            raise ValueError(f"{name}: no column {column!r} (columns: {', '.join(schema.names)})")
        try:
            kinds[f] = id_kind(schema.field(column).type)
        except TypeError as exc:
            raise TypeError(f"{name}: column {column!r}: {exc}") from None
        if weights is not None:
            if weights not in schema.names:
                raise ValueError(f"{name}: no weight column {weights!r}")
            t = schema.field(weights).type
            if not (pa.types.is_integer(t) or pa.types.is_floating(t)):
                raise TypeError(f"{name}: weight column {weights!r} must be numeric, not {t}")
    distinct = sorted(set(kinds.values()))
    if len(distinct) > 1:
        first = {k: next(f for f in files if kinds[f] == k) for k in distinct}
        detail = "; ".join(f"{k} in {display_path(first[k])}" for k in distinct)
        raise TypeError(f"column {column!r} mixes id kinds across files ({detail}): "
                        "ids of one kind only (42 and '42' are different keys)")
    if not distinct:
        raise ValueError("no Parquet files")
    return distinct[0], metas


def scan_parquet(files: Sequence[str], column: str, weights: str | None = None) -> tuple[str, int]:
    """Check every file's footer: the id column exists with one kind of ids
    across all files (and the weight column is numeric).  Returns ``(kind,
    total rows)``; errors name the file.  Files are local paths or URIs."""
    kind, metas = _footers(files, column, weights)
    return kind, sum(m.num_rows for m in metas)


@dataclass(frozen=True)
class ParquetUnit:
    """A piece of work: consecutive row groups of one Parquet file.

    ``first_row`` is the file's row number of the piece's first row, so an
    error in the piece names the file and the row in that file.
    """

    path: str
    row_groups: tuple[int, ...]
    first_row: int
    rows: int


def parquet_units(files: Sequence[str], column: str, weights: str | None = None, *,
                  target_rows: int = 1 << 22) -> tuple[str, list[ParquetUnit]]:
    """The footers' checks of :func:`scan_parquet`, then the files cut into
    units of whole row groups (about ``target_rows`` rows each, never
    splitting a row group).  Returns ``(kind, units)``; only footers are read.
    """
    kind, metas = _footers(files, column, weights)
    units: list[ParquetUnit] = []
    for f, meta in zip(files, metas):
        start = row = 0
        groups: list[int] = []
        for g in range(meta.num_row_groups):
            n = meta.row_group(g).num_rows
            if groups and row - start + n > target_rows:
                units.append(ParquetUnit(f, tuple(groups), start, row - start))
                start, groups = row, []
            groups.append(g)
            row += n
        if groups and row > start:
            units.append(ParquetUnit(f, tuple(groups), start, row - start))
    return kind, units


def split_units(units: Sequence[ParquetUnit], parts: int) -> list[list[ParquetUnit]]:
    """``units`` in at most ``parts`` runs of consecutive units with about equal rows each."""
    total = sum(u.rows for u in units)
    parts = max(1, min(parts, len(units)))
    out: list[list[ParquetUnit]] = [[] for _ in range(parts)]
    done = 0
    for u in units:
        i = min(parts - 1, (done + u.rows // 2) * parts // max(total, 1))
        out[i].append(u)
        done += u.rows
    return [p for p in out if p]


def plan_runs(units: Sequence[ParquetUnit], parallelism: int, run_rows: int = 1 << 24) -> list[str]:
    """The tasks of one job over Parquet pieces: runs of consecutive ``units``
    with about equal rows, a multiple of ``parallelism`` of them (at least
    two per worker, and runs of at most about ``run_rows`` rows), each as
    the text :func:`decode_units` reads back."""
    par = max(1, int(parallelism))
    rows = sum(u.rows for u in units)
    runs = split_units(units, par * max(2, -(-rows // (par * run_rows))))
    return [json.dumps([[u.path, list(u.row_groups), u.first_row, u.rows] for u in run]) for run in runs]


def decode_units(text: str) -> list[ParquetUnit]:
    """The units of one run made by :func:`plan_runs`."""
    return [ParquetUnit(str(p), tuple(int(g) for g in groups), int(first), int(rows))
            for p, groups, first, rows in json.loads(text)]


def diff_units(units: Iterable[ParquetUnit], column: str, old: Any, new: Any, weights: str | None,
               kind: str) -> DiffPartial:
    """:func:`diff_batch` over Parquet pieces this process reads itself: one partial.
    Errors name the file and the row in that file."""
    so, sn = ship(old), ship(new)
    part = DiffPartial.empty(so, sn, weighted=weights is not None)
    part.builds = _builds_of(so, sn)
    for unit in units:
        name = display_path(unit.path)
        for b, offset in read_unit(unit, input_columns(column, weights), column, kind):
            part = part.merge(diff_batch(b, column, so, sn, weights, source=name, offset=offset, kind=kind))
    return part


def analyze_units(units: Iterable[ParquetUnit], column: str, router: Any, weights: str | None, kind: str,
                  capacity: int) -> AnalyzePartial | None:
    """:func:`analyze_batch` over Parquet pieces this process reads itself (None for no rows)."""
    part: AnalyzePartial | None = None
    for unit in units:
        name = display_path(unit.path)
        for b, offset in read_unit(unit, input_columns(column, weights), column, kind):
            p = analyze_batch(b, column, router, weights, capacity=capacity, source=name, offset=offset, kind=kind)
            part = p if part is None else part.merge(p)
    return part


def input_columns(column: str, weights: str | None) -> list[str]:
    """The columns ``diff`` and ``analyze`` read: the ids, then the weights if any."""
    return [column] + ([weights] if weights else [])


def read_unit(unit: ParquetUnit, columns: Sequence[str], column: str, kind: str,
              batch_size: int = 1 << 20) -> Iterator[tuple[Any, int]]:
    """The batches of ``unit`` (only ``columns``), each with its first row's
    number in the file.  A null id or an id column of another kind than
    ``kind`` is an error naming the file and the row."""
    name = display_path(unit.path)
    offset = unit.first_row
    with _open_parquet(unit.path) as f:
        for b in f.iter_batches(batch_size=batch_size, row_groups=list(unit.row_groups), columns=list(columns),
                                use_threads=False):
            col = _column(b, column, name)
            if col.null_count:
                raise ValueError(f"{name}: row {offset + _first_null(col)}: id column {column!r} is null")
            got = id_kind(col.type)
            if got != kind:
                raise TypeError(f"{name}: id column {column!r} holds {got} ids where {kind} ids were expected: "
                                "ids of one kind only (42 and '42' are different keys)")
            yield b, offset
            offset += b.num_rows


# ------------------------------------------------------- streams of batches


def _sources(batch: Any, source_column: str | None) -> Any:
    if source_column is None or source_column not in batch.schema.names:
        return None
    return batch.column(source_column)


def _locate_null(batch: Any, column: str, srcs: Any, offsets: dict[str, int], source: Any, offset: int) -> None:
    """Raise naming the file and row of the first null id, when the batch has one."""
    col = _column(batch, column, source)
    if not col.null_count:
        return
    i = _first_null(col)
    if srcs is None:
        raise ValueError(f"{_where(source, offset, i)}: id column {column!r} is null")
    s = srcs.to_pylist()
    f = s[i]
    row = offsets.get(f, 0) + sum(1 for x in s[:i] if x == f)
    raise ValueError(f"{f}: row {row}: id column {column!r} is null")


def _advance(offsets: dict[str, int], srcs: Any) -> None:
    import pyarrow.compute as pc

    for item in pc.value_counts(srcs).to_pylist():
        offsets[item["values"]] = offsets.get(item["values"], 0) + int(item["counts"])


def diff_batches(batches: Iterable[Any], column: str, old: Any, new: Any, weights: str | None = None, *,
                 source: Any = None, source_column: str | None = None,
                 kind: str | None = None) -> DiffPartial:
    """:func:`diff_batch` over a stream of batches, merged into one partial.

    ``source_column`` names a column holding each row's file (Spark's
    ``input_file_name()``, Ray's ``path``): errors then name the file and
    the row counted from the first row of that file this stream saw.
    """
    so, sn = ship(old), ship(new)
    part = DiffPartial.empty(so, sn, weighted=weights is not None)
    part.builds = _builds_of(so, sn)
    offsets: dict[str, int] = {}
    offset = 0
    for b in batches:
        srcs = _sources(b, source_column)
        _locate_null(b, column, srcs, offsets, source, offset)
        part = part.merge(diff_batch(b, column, so, sn, weights, source=source, offset=offset, kind=kind))
        offset += b.num_rows
        if srcs is not None:
            _advance(offsets, srcs)
    return part


def shard_columns(router: Any, name: str = "shard") -> dict[str, ShippedRouter]:
    """``{column name: shipped router}``: ``router`` is one router (named
    ``name``) or a mapping of column names to routers (several topologies
    side by side in one pass)."""
    if isinstance(router, Mapping) and not _is_document(router):
        if not router:
            raise ValueError("no routers given")
        out = {}
        for k, r in router.items():
            if not isinstance(k, str) or not k:
                raise TypeError(f"shard column names must be non-empty str, not {k!r}")
            out[k] = ship(r)
        return out
    return {name: ship(router)}


def _is_document(m: Mapping[Any, Any]) -> bool:
    return "format" in m and "type" in m and "shards" in m


def route_batches(batches: Iterable[Any], column: str, router: Any, name: str = "shard", *,
                  indices: bool = False, decode: bool = False, source: Any = None,
                  source_column: str | None = None, drop: Sequence[str] = (),
                  kind: str | None = None) -> Iterable[Any]:
    """:func:`route_batch` over a stream of batches (see :func:`diff_batches`).

    ``router`` may be a mapping ``{column name: router}`` (one shard column
    each).  ``decode=True`` gives plain shard-name strings instead of a
    dictionary column (for engines without dictionary types); ``drop`` lists
    columns to remove from the output (such as a helper source column).
    """
    pa = require_pyarrow("route_batches")
    cols = shard_columns(router, name)
    offsets: dict[str, int] = {}
    offset = 0
    names = {n: pa.array(list(sr.shards), type=pa.string()) for n, sr in cols.items()}
    for b in batches:
        srcs = _sources(b, source_column)
        _locate_null(b, column, srcs, offsets, source, offset)
        out = b
        for n, sr in cols.items():
            out = route_batch(out, column, sr, n, indices=indices or decode, source=source, offset=offset,
                              kind=kind)
            if decode and not indices:
                col = names[n].take(out.column(n))
                out = out.set_column(out.schema.get_field_index(n), n, col)
        for d in drop:
            if d in out.schema.names:
                out = out.drop_columns([d]) if hasattr(out, "drop_columns") else out.drop([d])
        offset += b.num_rows
        if srcs is not None:
            _advance(offsets, srcs)
        yield out
