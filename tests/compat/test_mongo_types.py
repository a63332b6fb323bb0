"""shardhash.compat.mongo: the BSON types beyond numbers, strings, binary,
ObjectId, dates, documents and arrays -- Undefined, Symbol, regular
expressions, DBPointer, JavaScript code (with and without scope) -- checked
against the values MongoDB's own hasher test asserts
(tests/vectors/compat/mongo_more_types.tsv); Timestamp and Decimal128 are
refused (no published values pin down how current servers hash them).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from shardhash.compat import mongo
from tests._support import VECTORS


def _value(kind: str, text: str) -> Any:
    if kind == "undefined":
        return mongo.UNDEFINED
    if kind == "null":
        return None
    if kind == "symbol":
        return mongo.Symbol(text)
    if kind == "regex":
        pattern, _, flags = text.rpartition("/")
        return mongo.Regex(pattern, flags)
    if kind == "dbpointer":
        ns, _, oid = text.rpartition("/")
        return mongo.DBPointer(ns, bytes.fromhex(oid))
    if kind == "code":
        return mongo.Code(text)
    code, _, scope = text.partition("/")
    return mongo.CodeWithScope(code, json.loads(scope))


def _rows() -> list[list[str]]:
    lines = [ln for ln in (VECTORS / "compat" / "mongo_more_types.tsv").read_text().splitlines()
             if ln and not ln.startswith("#")]
    return [ln.split("\t") for ln in lines[1:]]


def test_hasher_test_values() -> None:
    rows = _rows()
    assert len(rows) == 10
    values = [_value(k, v) for k, v, _, _ in rows]
    want = [int(h) for _, _, h, _ in rows]
    assert [mongo.hashed(v) for v in values] == want
    assert mongo.hashed_array(values).tolist() == want
    assert mongo.hashed_array(np.array(values + [0], dtype=object)).tolist() == want + [mongo.hashed(0)]


def test_symbols_hash_as_strings_and_nest() -> None:
    assert mongo.hashed(mongo.Symbol("x")) == mongo.hashed("x")
    assert mongo.hashed({"a": mongo.Symbol("x")}) == mongo.hashed({"a": "x"})
    assert mongo.hashed(mongo.Regex("a", "mi")) == mongo.hashed(mongo.Regex("a", "im"))  # options sorted
    nested = {"r": mongo.Regex("^a"), "c": [mongo.Code("1"), mongo.UNDEFINED]}
    assert mongo.hashed(nested) != mongo.hashed({"r": mongo.Regex("^b"), "c": [mongo.Code("1"), mongo.UNDEFINED]})
    r = mongo.HashedChunkRouter.from_split_points(mongo.initial_split_points(4), ["s0", "s1"])
    assert r.route(mongo.Regex("^a")) in ("s0", "s1")


def test_unverified_types_are_refused() -> None:
    class Timestamp:  # as bson.Timestamp is named
        pass

    class Decimal128:
        pass

    for v in (Timestamp(), Decimal128()):
        with pytest.raises(TypeError, match="not modelled"):
            mongo.hashed(v)
        with pytest.raises(TypeError, match="position 1: .*not modelled"):
            mongo.hashed_array([1, v])
    with pytest.raises(ValueError, match="NUL"):
        mongo.hashed(mongo.Regex("a\x00b"))
    with pytest.raises(ValueError, match="12 bytes"):
        mongo.hashed(mongo.DBPointer("c", b"\x01"))
    bad_scope: Any = [1]
    with pytest.raises(TypeError, match="scope"):
        mongo.hashed(mongo.CodeWithScope("x", bad_scope))
