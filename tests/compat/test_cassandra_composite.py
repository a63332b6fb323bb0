"""Cassandra partition keys serialized in C: composite keys and the CQL types
without an array kernel (tinyint, smallint, ascii, uuid, boolean).

``cassandra.token_array`` and ``TokenRouter.route``/``route_many`` must give,
for every key, ``token(serialize(key, cql_type))`` of the pure-Python
serializer, and raise its error (naming the key's position in a batch) for
every key it refuses; the tokens themselves are checked against the
pure-Python murmur3 reference (``shardhash._reference.cassandra``).
"""

from __future__ import annotations

import datetime
import re
import uuid
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardhash._reference import cassandra as ref
from shardhash.compat import cassandra
from tests._support import examples

SETTINGS = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])

TYPES = ["text", "varchar", "ascii", "int", "bigint", "counter", "timestamp", "smallint", "tinyint", "blob",
         "uuid", "timeuuid", "boolean"]
_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64, "counter": 64, "timestamp": 64}


class _Str(str):
    pass


class _Int(int):
    pass


def _ints(bits: int) -> st.SearchStrategy[Any]:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    edges = st.sampled_from([lo, hi, lo - 1, hi + 1, 0, -1, 1, 2**64, -(2**64) - 5])
    return st.one_of(st.integers(lo, hi), edges, st.integers(lo, hi).map(_Int),
                     st.integers(-128, 127).map(np.int64))


# values of every kind: most serialize, some are refused (wrong types, out of range, ...)
_ODD = st.sampled_from([None, 1.5, True, False, b"x", "x", 3, np.bool_(True), ()])
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "text": st.one_of(st.text(max_size=30), st.text(max_size=5).map(_Str)),
    "ascii": st.one_of(st.text(st.characters(max_codepoint=127), max_size=30), st.text(max_size=8)),
    "blob": st.one_of(st.binary(max_size=40), st.binary(max_size=8).map(bytearray),
                      st.binary(max_size=8).map(lambda b: memoryview(b))),
    "uuid": st.one_of(st.uuids(), st.uuids().map(str), st.just("not-a-uuid")),
    "boolean": st.one_of(st.booleans(), st.just(np.bool_(False))),
}
for _t, _b in _BITS.items():
    VALUES[_t] = _ints(_b)
VALUES["varchar"], VALUES["timeuuid"] = VALUES["text"], VALUES["uuid"]
VALUES["timestamp"] = st.one_of(VALUES["timestamp"], st.datetimes(
    min_value=datetime.datetime(1900, 1, 1), max_value=datetime.datetime(2200, 1, 1)))


def _value(t: str) -> st.SearchStrategy[Any]:
    return st.one_of(VALUES[t], VALUES[t], VALUES[t], VALUES[t], _ODD)


def _expected(keys: list[Any], cql_type: Any) -> tuple[list[int] | None, BaseException | None, int]:
    """The reference: tokens, or the first refused key's error and position."""
    out = []
    for i, k in enumerate(keys):
        try:
            b = cassandra.serialize(k, cql_type)
        except (TypeError, ValueError, OverflowError) as e:
            return None, e, i
        out.append(ref.cassandra_token(b))
    return out, None, -1


def _check(keys: list[Any], cql_type: Any) -> None:
    tokens, err, pos = _expected(keys, cql_type)
    router = cassandra.TokenRouter({"a": [-(2**62)], "b": [0], "c": [2**62]}, cql_type=cql_type)
    if err is None:
        assert tokens is not None
        assert cassandra.token_array(keys, cql_type).tolist() == tokens
        assert cassandra.token_array(tuple(keys), cql_type).tolist() == tokens
        want = [router._index_of_token(t) for t in tokens]
        want = [int(router.ring_owners[i]) for i in want]
        assert router.route_many(keys).tolist() == want
        assert [router.route_index(k) for k in keys] == want
        return
    msg = f"key at position {pos}: {err}"
    kind = type(err) if type(err) in (TypeError, ValueError, OverflowError) else ValueError
    with pytest.raises(kind) as got:
        cassandra.token_array(keys, cql_type)
    assert str(got.value) == msg
    with pytest.raises(type(err)) as got1:
        router.route(keys[pos])
    assert str(got1.value) == str(err)


@SETTINGS
@given(st.lists(st.sampled_from(TYPES), min_size=1, max_size=4).flatmap(
    lambda ts: st.tuples(st.just(tuple(ts)), st.lists(st.tuples(*[_value(t) for t in ts]), max_size=12))))
def test_composite_keys_match_serialize(case: tuple[tuple[str, ...], list[tuple[Any, ...]]]) -> None:
    types, keys = case
    _check(keys, types)
    _check([list(k) for k in keys], list(types))


@SETTINGS
@given(st.sampled_from(["ascii", "smallint", "tinyint", "uuid", "timeuuid", "boolean"]).flatmap(
    lambda t: st.tuples(st.just(t), st.lists(_value(t), max_size=12))))
def test_one_column_types_match_serialize(case: tuple[str, list[Any]]) -> None:
    t, keys = case
    _check(keys, t)
    _check([(k,) for k in keys], (t,))


def test_edge_cases() -> None:
    tt = ("text", "int")
    good = [("", 0), ("é", -(2**31)), ("日本語", 2**31 - 1), ("a" * 1000, 5), ("x", -1)]
    _check(good, tt)
    _check([(b"", True, uuid.UUID(int=0)), (b"\xff" * 65535, False, uuid.UUID(int=2**128 - 1))],
           ("blob", "boolean", "uuid"))
    _check([(-128, -(2**15), -(2**63)), (127, 2**15 - 1, 2**63 - 1)], ("tinyint", "smallint", "bigint"))
    # the serialized bytes themselves (one column: no length or 0 byte)
    packed = b"\x00\x02ab\x00" + b"\x00\x04\x00\x00\x00\x01\x00"
    assert cassandra.token_array([("ab", 1)], tt)[0] == ref.cassandra_token(packed)
    assert cassandra.token_array([("ab",)], ("text",))[0] == ref.cassandra_token(b"ab")
    assert cassandra.token_array(np.array([("a", 1), ("b", 2)], dtype=object), tt).tolist() == \
        [cassandra.token(cassandra.serialize(k, tt)) for k in [("a", 1), ("b", 2)]]
    assert cassandra.token_array(iter([("a", 1)]), tt).tolist() == [cassandra.token(cassandra.serialize(("a", 1), tt))]
    assert cassandra.token_array([], tt).tolist() == []
    # many keys and long ones: several chunks, the buffer grows
    many = [(str(i) * (i % 50), str(i)) for i in range(3000)] + [("z" * 65535, "y" * 65535)] * 3 + \
        [("q", "é" * i) for i in range(600)]
    tt2 = ("text", "text")
    assert cassandra.token_array(many, tt2).tolist() == [cassandra.token(cassandra.serialize(k, tt2)) for k in many]
    router = cassandra.TokenRouter({"a": [-5], "b": [2**40]}, cql_type=tt2)
    assert router.route_many(many).tolist() == [router.route_index(k) for k in many]
    # a long key that serialize() makes, after others filled the buffer
    long_py: list[tuple[str]] = [("a" * 1000,)] * 60 + [(_Str("z" * 100_000),)] + [("b",)]
    assert cassandra.token_array(long_py, ("text",)).tolist() == \
        [ref.cassandra_token(k[0].encode()) for k in long_py]


@pytest.mark.parametrize(("key", "kind", "msg"), [
    (("é", 1), ValueError, "'é' is not ASCII"),
    (("a", 2**31), OverflowError, "2147483648 is out of range for CQL int"),
    (("a", -(2**31) - 1), OverflowError, "out of range for CQL int"),
    (("a", True), TypeError, "a CQL int must be an int, not bool"),
    ((1, 1), TypeError, "a CQL ascii must be a str, not int"),
    (("a", 1.0), TypeError, "a CQL int must be an int, not float"),
    (("a",), ValueError, "composite key has 1 values for 2 types"),
    (("a", 1, 2), ValueError, "composite key has 3 values for 2 types"),
    ("a1", TypeError, "a composite key needs a tuple of 2 values, not str"),
    ((None, 1), ValueError, "cannot be null"),
])
def test_errors_name_the_position(key: Any, kind: type[Exception], msg: str) -> None:
    keys = [("ok", 1), ("fine", 2), key]
    with pytest.raises(kind, match=f"^key at position 2: .*{re.escape(msg)}"):
        cassandra.token_array(keys, ("ascii", "int"))
    with pytest.raises(kind, match=re.escape(msg)):
        cassandra.TokenRouter({"a": [0]}, cql_type=("ascii", "int")).route(key)


def test_component_too_long() -> None:
    with pytest.raises(ValueError, match=r"^key at position 1: component 0 of the composite key is 70000 bytes"):
        cassandra.token_array([(b"", 1), (b"x" * 70000, 1)], ("blob", "int"))
    # one column: no length prefix, so no limit
    assert cassandra.token_array([(b"x" * 70000,)], ("blob",))[0] == ref.cassandra_token(b"x" * 70000)


def test_surrogates_are_refused_as_by_serialize() -> None:
    with pytest.raises(UnicodeEncodeError):
        cassandra.serialize(("\ud800", 1), ("text", "int"))
    with pytest.raises(ValueError, match="^key at position 0: .*surrogates not allowed"):
        cassandra.token_array([("\ud800", 1)], ("text", "int"))


def test_bad_type_names_behave_as_before() -> None:
    assert cassandra.token_array([], ("text", "decimal")).tolist() == []
    with pytest.raises(ValueError, match="unsupported CQL type 'decimal'"):
        cassandra.token_array([("a", 1)], ("text", "decimal"))
    with pytest.raises(TypeError, match="threads must be an int"):
        cassandra.token_array([("a", 1)], ("text", "int"), threads=cast(Any, "2"))


def test_a_keys_own_code_cannot_change_the_list_being_read() -> None:
    keys: list[Any] = []

    class Evil(str):
        def encode(self, *a: Any, **k: Any) -> bytes:  # runs inside serialize()
            keys.clear()
            keys.extend([("gone", 0)] * 5)
            return str(self).encode(*a, **k)

    keys.extend([("a", 1), (Evil("b"), 2), ("c", 3), ("d", 4)])
    want = [cassandra.token(cassandra.serialize(k, ("text", "int"))) for k in [("a", 1), ("b", 2), ("c", 3), ("d", 4)]]
    assert cassandra.token_array(keys, ("text", "int")).tolist() == want
