"""Fuzz suite: differential and adversarial checks, driven by Hypothesis.

* hashing: scalar (``hash_key``) vs batch (``hash_array`` over a list, a
  tuple, an object array, every numpy layout), threads 1 vs 2, ``out=``
  over the input's own memory; scalar and batch accept and reject the same
  keys, with the same exception type;
* routers of every strategy with random parameters: compiled vs the
  pure-Python reference (shardhash._reference) vs ``route_hash`` one by one,
  threads 1 vs 2, ``out=`` aliasing the hashes;
* router documents: round trips, and randomly mutated documents, which load
  (and then route like the reference) or fail with TypeError/ValueError only;
* user objects whose ``__str__``/``__bytes__``/``__int__``/``__index__``/
  ``__eq__`` mutate the very list being hashed, routed or packed: no crash,
  no read past the list (the sanitizer run, .ci/post.d/40-sanitize.sh, runs
  this file under AddressSanitizer), an answer for the keys as given or a
  clear error;
* compat kernels vs their pure-Python references (compat/*_py.py);
* pandas/Arrow extension types and Arrow layouts, one case each, named by
  what it holds: the batch hashes like ``hash_key`` value by value, or is
  refused with the exception pinned for that case.

Bounded for CI (well under a minute on two cores);
``SHARDHASH_HYPOTHESIS=thorough`` multiplies every example count by 20.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import shardhash as sh
from shardhash._reference import cassandra as cassandra_ref
from shardhash._reference import postgres as pgref
from shardhash._reference import redis as redis_ref
from shardhash._reference.routing import ReferenceRouter
from shardhash.compat import cassandra, ketama, mongo, postgres, redis, vitess
from tests._fuzz_strategies import (
    Hostile,
    any_keys,
    hash_routers,
    hashers,
    hostile_actions,
    layouts,
    plain_keys,
    u64,
)

_SCALE = 20 if os.environ.get("SHARDHASH_HYPOTHESIS") == "thorough" else 1


def fuzz(n: int) -> settings:
    """``n`` examples (x20 with SHARDHASH_HYPOTHESIS=thorough), no deadline."""
    return settings(max_examples=n * _SCALE, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


_ERRORS = (TypeError, ValueError, OverflowError)


def _outcome(fn: Callable[..., Any], *args: Any, **kw: Any) -> tuple[str, Any]:
    """('ok', value) or ('error', exception type)."""
    try:
        return ("ok", fn(*args, **kw))
    except _ERRORS as e:
        return ("error", type(e))


def _base(exc_type: type) -> type:
    for c in (OverflowError, TypeError, ValueError):
        if issubclass(exc_type, c):
            return c
    return exc_type


# =================================================================== hashing


@fuzz(150)
@given(st.lists(any_keys, max_size=12), hashers)
def test_hash_scalar_and_batch_accept_and_reject_alike(keys: list[Any], hz: sh.Hasher) -> None:
    scalar = [_outcome(hz, k) for k in keys]
    bad = [i for i, (kind, _) in enumerate(scalar) if kind == "error"]
    for container in (list, tuple, lambda ks: np.array(ks + [None], dtype=object)[:len(ks)]):
        got = _outcome(hz.hash_array, container(keys))
        if not bad:
            assert got[0] == "ok", (container, got)
            assert got[1].tolist() == [v for _, v in scalar]
        else:
            # the first bad key decides, with its own exception type
            assert got == ("error", got[1]) and got[0] == "error", got
            assert _base(got[1]) == _base(scalar[bad[0]][1])


@fuzz(60)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=300), hashers,
       st.sampled_from([np.int64, np.int32, np.int16, np.int8, np.uint64, np.uint32, np.uint8]))
def test_hash_int_arrays_every_layout_threads_and_aliasing(values: list[int], hz: sh.Hasher,
                                                           dtype: type[np.integer[Any]]) -> None:
    info = np.iinfo(dtype)
    values = [v for v in values if info.min <= v <= info.max]
    a = np.array(values, dtype=dtype)
    want = [hz(int(v)) for v in values]
    for lay in layouts(a):
        for threads in (1, 2):
            assert hz.hash_array(lay, threads=threads).tolist() == want
    if dtype in (np.int64, np.uint64) and len(values):
        b = a.copy()
        assert hz.hash_array(b, out=b.view(np.uint64)).tolist() == want  # in place
        if len(values) > 1:
            c = np.concatenate([a, a[:1]])
            got = hz.hash_array(c[:-1], out=c.view(np.uint64)[1:])  # shifted overlap
            assert got.tolist() == want


@fuzz(60)
@given(st.lists(st.text(max_size=12), max_size=100), hashers)
def test_hash_string_arrays_every_layout(values: list[str], hz: sh.Hasher) -> None:
    a = np.array(values, dtype=str) if values else np.array([], dtype=str)
    py = a.tolist()  # numpy drops trailing NULs: the values are what numpy holds
    want = [_outcome(hz, s) for s in py]
    for lay in (a, a[::-1][::-1], np.repeat(a, 2)[::2], a.astype(object)):
        got = _outcome(hz.hash_array, lay, threads=2)
        if all(k == "ok" for k, _ in want):
            assert got[0] == "ok" and got[1].tolist() == [v for _, v in want]
        else:
            assert got[0] == "error"


# =================================================================== routers


@fuzz(120)
@given(hash_routers(), st.lists(u64, min_size=1, max_size=200))
def test_router_compiled_reference_scalar_threads_aliasing(r: sh.Router, hs: list[int]) -> None:
    ref = ReferenceRouter(json.loads(r.to_json()))
    h = np.array(hs, dtype=np.uint64)
    want = [ref.route_hash(x) for x in hs]
    assert r.route_hashes(h, threads=1).tolist() == want
    assert r.route_hashes(h, threads=2).tolist() == want
    assert [r.route_hash(x) for x in hs] == want
    # out= over the hashes' own memory (first or second half of each word)
    for half in (0, 1):
        hh = h.copy()
        out = hh.view(np.int32)[half::2] if half else hh.view(np.int32)[:len(hh)]
        if not out.flags.c_contiguous:
            continue
        assert r.route_hashes(hh, out=out, threads=2).tolist() == want


@fuzz(80)
@given(hash_routers(), st.lists(plain_keys, max_size=30))
def test_router_keys_scalar_batch_and_hashes_agree(r: sh.Router, keys: list[Any]) -> None:
    scalar = [_outcome(r.route_index, k) for k in keys]
    assume(all(kind == "ok" for kind, _ in scalar))
    want = [v for _, v in scalar]
    assert r.route_many(keys).tolist() == want
    assert r.route_many(tuple(keys), threads=2).tolist() == want
    assert [r.shards.index(r.route(k)) for k in keys] == want
    if r.routes_on_hash:
        assert r.route_hashes(r.hasher.hash_array(keys)).tolist() == want


# ----------------------------------------------------------------- documents

_MUTANTS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 300), st.sampled_from([-1, 0, 2**31, 2**64, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e12, 1e300, -0.0]),
    st.text(max_size=4), st.just([]), st.just({}), st.just([[[[[[1]]]]]]),
    st.lists(st.integers(-1, 5), max_size=4), st.dictionaries(st.text(max_size=3), st.integers(0, 3), max_size=3),
)


def _paths(doc: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every (container, key) path in a document."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:8]):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,))


@fuzz(150)
@given(hash_routers(), st.data())
def test_mutated_documents_load_or_fail_cleanly(r: sh.Router, data: st.DataObject) -> None:
    doc = r.to_dict()
    again = sh.load_router(copy.deepcopy(doc))
    assert again.fingerprint == r.fingerprint
    paths = list(_paths(doc))
    for _ in range(data.draw(st.integers(1, 3))):
        # half the time a path inside params or hasher, where a value the
        # loader accepts changes the routing (else most draws land in lists)
        inner = [p for p in paths if p[0] in ("params", "hasher") and len(p) > 1]
        use_inner = bool(inner) and data.draw(st.booleans())
        path = data.draw(st.sampled_from(inner if use_inner else paths))
        node: Any = doc
        for p in path[:-1]:
            node = node[p]
        old = node[path[-1]]
        if isinstance(old, (int, float)) and not isinstance(old, bool) and data.draw(st.booleans()):
            # a nearby number: often accepted, and then it must change the routing as written
            half = old // 2 if isinstance(old, int) else old / 2
            node[path[-1]] = data.draw(st.sampled_from([old + 1, old * 2, half]))
        elif data.draw(st.booleans()) and isinstance(node, dict):
            node.pop(path[-1], None)
        else:
            node[path[-1]] = copy.deepcopy(data.draw(_MUTANTS))  # st.just values are shared
        paths = list(_paths(doc))
        if not paths:
            break
    doc.pop("fingerprint", None)
    try:
        loaded = sh.load_router(copy.deepcopy(doc))
    except (TypeError, ValueError):
        return
    # whatever loads routes as the mutated document says (the reference reads
    # that document, not the router's own to_json(), so a silent
    # normalisation by the loader shows), and keeps its shards
    ref = ReferenceRouter(copy.deepcopy(doc))
    assert list(loaded.shards) == ref.shards
    h = np.array(data.draw(st.lists(u64, min_size=1, max_size=50)), dtype=np.uint64)
    assert loaded.route_hashes(h).tolist() == [ref.route_hash(int(x)) for x in h]


@pytest.mark.parametrize("make, field", [
    (lambda: sh.RingRouter(["a", "b"], vnodes=4), "vnodes"),
    (lambda: sh.BoundedLoadRouter(["a", "b"], vnodes=4), "vnodes"),
    (lambda: sh.MaglevRouter(["a", "b"], table_size=11), "table_size"),
], ids=["ring_vnodes", "bounded_vnodes", "maglev_table_size"])
def test_null_size_in_a_document_is_refused(make: Callable[[], sh.Router], field: str) -> None:
    """A null where the document format has an int is refused, not read as the
    constructor's default (256 vnodes, 65537 slots): found by the document fuzz."""
    doc = make().to_dict()
    doc.pop("fingerprint")
    doc["params"][field] = None
    with pytest.raises(TypeError, match=f"params: {field} must be an int"):
        sh.load_router(doc)


@fuzz(60)
@given(st.recursive(st.integers(0, 3), lambda c: st.lists(c, max_size=2) | st.dictionaries(
    st.sampled_from(["type", "shards", "params", "hasher"]), c, max_size=2), max_leaves=30),
    st.integers(1, 200))
def test_hostile_document_shapes(inner: Any, depth: int) -> None:
    doc = sh.JumpRouter(["a"]).to_dict()
    deep = inner
    for _ in range(depth * 20):
        deep = [deep]
    for field in ("shards", "params", "type", "hasher", "version"):
        d = dict(doc)
        d[field] = deep
        with pytest.raises((TypeError, ValueError)):
            sh.load_router(d)
        text = json.dumps({**d, field: "@"}).replace('"@"', "[" * (depth * 20) + "0" + "]" * (depth * 20))
        with pytest.raises((TypeError, ValueError)):
            sh.load_router(text)


# ============================================================ hostile user code


def _binding_calls() -> dict[str, Callable[[list[Any]], Any]]:
    jr = sh.JumpRouter(["a", "b", "c"])
    rr = sh.RangeRouter(["g", "p"], ["a", "b", "c"])
    wm = sh.WatermarkRouter(sh.JumpRouter(["a", "b"]), sh.JumpRouter(["a", "b", "c"]), 10)
    kr = ketama.KetamaRouter(["a:1", "b:2"], flavor="uhashring")
    kl = ketama.KetamaRouter(["a:1", "b:2"], flavor="libketama")
    tr = cassandra.TokenRouter({"a": [0], "b": [2**62]}, cql_type="text")
    return {
        "hash_array": lambda ks: sh.hash_array(ks),
        "hash_array_xxh32": lambda ks: sh.Hasher("xxh32").hash_array(ks, threads=2),
        "jump.route_many": lambda ks: jr.route_many(ks),
        "range.route_many": lambda ks: rr.route_many(ks),
        "watermark.route_many": lambda ks: wm.route_many(ks),
        "ketama_uhashring": lambda ks: kr.route_many(ks),
        "ketama_libketama": lambda ks: kl.route_many(ks),
        "cassandra_text": lambda ks: tr.route_many(ks),
        "cassandra_bigint": lambda ks: cassandra.token_array(ks, "bigint"),
        "redis.keyslot_array": lambda ks: redis.keyslot_array(ks),
        "mongo.hashed_array": lambda ks: mongo.hashed_array(ks),
        "vitess.keyspace_id_array": lambda ks: vitess.keyspace_id_array(ks),
        "postgres.hash_extended_array": lambda ks: postgres.hash_extended_array(ks, "text"),
        "postgres.hash32_array": lambda ks: postgres.hash32_array(ks, "int8"),
        "plan.diff": lambda ks: sh.plan.diff(jr, sh.JumpRouter(["a", "b", "c", "d"]), ks).matrix,
    }


_CALLS = _binding_calls()


@fuzz(150)
@given(st.sampled_from(sorted(_CALLS)), hostile_actions, st.integers(0, 40), st.integers(0, 40),
       st.sampled_from(["str", "int", "bytes"]))
def test_user_code_mutating_the_callers_list(name: str, action: str, before: int, after: int, filler: str) -> None:
    fill: Callable[[int], Any] = {"str": lambda i: f"k{i}", "int": lambda i: i, "bytes": lambda i: b"k%d" % i}[filler]
    keys: list[Any] = [fill(i) for i in range(before)]
    keys.append(Hostile(keys, action, value=fill(999)))
    keys += [fill(i) for i in range(after)]
    n = len(keys)
    try:
        res = _CALLS[name](keys)
    except (TypeError, ValueError, OverflowError, RuntimeError):
        return
    # an answer covers the keys as they were given
    assert len(res) == n or name == "plan.diff"


@fuzz(40)
@given(hostile_actions)
def test_user_code_in_router_and_hasher_arguments(action: str) -> None:
    victim: list[Any] = ["a", "b", "c"]
    h: Any = Hostile(victim, action)  # deliberately where an int or a str belongs
    for call in (lambda: sh.JumpRouter(victim + [h]), lambda: sh.RingRouter(["a", "b"], vnodes=h),
                 lambda: sh.Hasher("xxh3_64", seed=h), lambda: sh.MaglevRouter(["a"], table_size=h),
                 lambda: sh.RangeRouter([h], ["a", "b"]), lambda: sh.jump_hash_array([1, 2], h),
                 lambda: sh.JumpRouter(["a"]).route_hashes([1, h])):
        try:
            call()
        except (TypeError, ValueError, OverflowError):
            pass


# ================================================================ compat kernels


@fuzz(80)
@given(st.lists(st.binary(max_size=40), max_size=40))
def test_compat_kernels_vs_references(keys: list[bytes]) -> None:
    tok = cassandra.token_array(keys, threads=2).tolist()
    assert tok == [cassandra_ref.cassandra_token(k) for k in keys] == [cassandra.token(k) for k in keys]
    slots = redis.keyslot_array(keys, threads=2).tolist()
    assert slots == [redis_ref.redis_keyslot(k) for k in keys] == [redis.keyslot(k) for k in keys]
    assert postgres.hash_extended_array(keys, "bytea").tolist() == \
        [pgref.hash_extended(k, "bytea") for k in keys]


@fuzz(40)
@given(st.lists(st.text(st.characters(codec="utf-8"), max_size=20), max_size=40),
       st.sampled_from(ketama.FLAVORS), st.lists(st.integers(1, 50), min_size=1, max_size=5))
def test_ketama_scalar_batch_reference(keys: list[str], flavor: str, weights: list[int]) -> None:
    nodes = [f"10.0.0.{i}:11211" for i in range(len(weights))]
    r = ketama.KetamaRouter(nodes, weights, flavor)
    want = [r.route_index(k) for k in keys]  # (tests/compat checks these against the reference)
    assert r.route_many(keys, threads=2).tolist() == want
    assert r.route_many(tuple(keys)).tolist() == want
    assert r.route_many(np.array(keys + [0], dtype=object)[:len(keys)]).tolist() == want


# ============================================================ extension types

class Pinned(NamedTuple):
    """What hashing a case must do: ``error`` None -> every path hashes it, as
    ``hash_key`` hashes each value; else every batch path raises ``error``
    (message containing ``match``), and ``values_are_keys`` says whether
    ``hash_key`` accepts each value alone (True: a deliberate batch refusal)
    or refuses at least one value (False) with ``scalar_error`` (default: the
    same type)."""

    error: type[Exception] | None = None
    match: str = ""
    values_are_keys: bool = True
    scalar_error: type[Exception] | None = None


HASHED = Pinned()


def _pandas_cases() -> dict[str, tuple[Callable[[Any], Any], Pinned]]:
    """name -> (a function of the pandas module making the Series, the pinned outcome)."""
    refused = Pinned(TypeError, "", values_are_keys=False)
    return {
        "Int64_ints": (lambda pd: pd.Series([1, -2, 3], dtype="Int64"), HASHED),
        "UInt8_ints": (lambda pd: pd.Series([1, 2, 255], dtype="UInt8"), HASHED),
        "string_python_texts": (lambda pd: pd.Series(["a", "é", ""], dtype="string[python]"), HASHED),
        "string_pyarrow_texts": (lambda pd: pd.Series(["a", "é", ""], dtype="string[pyarrow]"), HASHED),
        "int64_pyarrow_ints": (lambda pd: pd.Series([1, 2, 2**62], dtype="int64[pyarrow]"), HASHED),
        "sparse_ints": (lambda pd: pd.Series(pd.arrays.SparseArray([0, 0, 5])), HASHED),
        "object_str_int_bytes": (lambda pd: pd.Series(["a", 1, b"x"], dtype=object), HASHED),
        "bool_numpy": (lambda pd: pd.Series([True, False]), refused),
        "boolean_masked": (lambda pd: pd.Series([True, False], dtype="boolean"), refused),
        "Float64_floats": (lambda pd: pd.Series([1.0, 2.5], dtype="Float64"), refused),
        "period_months": (lambda pd: pd.Series(pd.period_range("2020-01", periods=3, freq="M")), refused),
        "interval_ranges": (lambda pd: pd.Series(pd.interval_range(0, 3)), refused),
        "datetime_days": (lambda pd: pd.Series(pd.date_range("2020-01-01", periods=3)), refused),
        "datetime_tz_days": (lambda pd: pd.Series(pd.date_range("2020-01-01", periods=3, tz="UTC")), refused),
        "timedelta_seconds": (lambda pd: pd.Series(pd.to_timedelta([1, 2, 3], unit="s")), refused),
    }


def _check_pinned(batch: tuple[str, Any], scalar: list[tuple[str, Any]], pin: Pinned, what: str) -> None:
    if pin.error is None:
        assert all(kind == "ok" for kind, _ in scalar), (what, scalar)
        assert batch[0] == "ok", (what, batch)
        assert batch[1].tolist() == [v for _, v in scalar], what
    else:
        assert batch == ("error", pin.error), (what, batch)
        if pin.values_are_keys:
            assert all(kind == "ok" for kind, _ in scalar), (what, scalar)
        else:
            assert ("error", pin.scalar_error or pin.error) in scalar, (what, scalar)


@pytest.mark.parametrize("name", sorted(_pandas_cases()))
def test_pandas_extension_types_pinned(name: str) -> None:
    """Each Series hashes like its values one by one, or every path refuses it
    as pinned; its Arrow form (when pyarrow makes one) does the same."""
    # (the imports here, not at module level: a platform without pandas or
    # pyarrow skips these cases, not the whole file)
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    make, pin = _pandas_cases()[name]
    s = make(pd)
    scalar = [_outcome(sh.hash_key, s.iloc[i]) for i in range(len(s))]
    _check_pinned(_outcome(sh.hash_array, s), scalar, pin, name)
    if name == "object_str_int_bytes":
        return  # mixed types: no Arrow form
    try:
        pa_arr = pa.array(s)
    except (pa.ArrowException, TypeError, ValueError):
        assert name == "sparse_ints", name  # the only one pyarrow cannot convert
        return
    _check_pinned(_outcome(sh.hash_array, pa_arr), scalar, pin, f"{name} as {pa_arr.type}")


def _arrow_cases() -> dict[str, tuple[Callable[[Any], Any], Pinned]]:
    """name -> (a function of the pyarrow module making the array, the pinned outcome)."""
    return {
        "int8_ints": (lambda pa: pa.array([1, 2, 3], pa.int8()), HASHED),
        "uint64_ints": (lambda pa: pa.array([1, 2, 2**64 - 1], pa.uint64()), HASHED),
        "large_string_texts": (lambda pa: pa.array(["a", "b", ""], pa.large_string()), HASHED),
        "binary_with_empty": (lambda pa: pa.array([b"a", b""], pa.binary()), HASHED),
        "large_binary": (lambda pa: pa.array([b"\x00\xff", b"x"], pa.large_binary()), HASHED),
        "string_view_texts": (lambda pa: pa.array(["x", "y" * 20], pa.string_view()), HASHED),
        "binary_view_bytes": (lambda pa: pa.array([b"x", b"z" * 20], pa.binary_view()), HASHED),
        "chunked_int64_two_chunks": (lambda pa: pa.chunked_array([[1, 2], [3]]), HASHED),
        "int64_sliced_from_1": (lambda pa: pa.array([1, 2, 3]).slice(1), HASHED),
        # each value is a key, but the batch path refuses the layout (documented)
        "dictionary_of_strings": (lambda pa: pa.array(["a", "b", "a"]).dictionary_encode(),
                                  Pinned(TypeError, "dictionary-encoded")),
        "fixed_size_binary_16": (lambda pa: pa.array([b"0" * 16, b"1" * 16], pa.binary(16)),
                                 Pinned(TypeError, "format 'w:16'")),
        # values that are not keys one by one either
        "double_floats": (lambda pa: pa.array([1.5]), Pinned(TypeError, "floating-point", False)),
        # an Arrow null is refused by position (ValueError); None alone is not a key (TypeError)
        "int64_with_null_first": (lambda pa: pa.array([None, 1]),
                                  Pinned(ValueError, "position 0 is null", False, TypeError)),
        "list_of_int64": (lambda pa: pa.array([[1]]), Pinned(TypeError, "nested", False)),
        "timestamp_seconds": (lambda pa: pa.array([1, 2], pa.timestamp("s")),
                              Pinned(TypeError, "format 'tss:'", False)),
    }


@pytest.mark.parametrize("name", sorted(_arrow_cases()))
def test_arrow_arrays_pinned(name: str) -> None:
    """Each Arrow array hashes like its values one by one (``hash_key``), or
    is refused as pinned, with the pinned exception and message."""
    make, pin = _arrow_cases()[name]
    a = make(pytest.importorskip("pyarrow"))
    scalar = [_outcome(sh.hash_key, v) for v in a.to_pylist()]
    _check_pinned(_outcome(sh.hash_array, a), scalar, pin, name)
    if pin.error is not None:
        with pytest.raises(pin.error, match=pin.match):
            sh.hash_array(a)
