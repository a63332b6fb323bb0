"""The import's row checksum (column by column, hashed by kind of value): the
sum over any split of the rows is the checksum of all of them, it tells kinds
of values apart as canonical_row does, and an import whose progress was
recorded with the first checksum finishes and verifies with that one."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardhash.migrate import Cluster, importer
from shardhash.migrate.coltypes import canonical_row

from ._harness import make_cluster
from .test_import import SHARDS, N, _check_placed, _source

_MASK = (1 << 64) - 1
values = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
                   st.floats(allow_nan=False), st.text(max_size=8), st.binary(max_size=8))
rows_of = st.lists(st.tuples(values, values, values), max_size=30)


@given(rows_of, st.integers(min_value=0, max_value=30))
def test_the_checksum_of_a_split_is_the_sum_of_its_parts(rows: list[tuple[Any, ...]], cut: int) -> None:
    whole = importer._checksum(rows)
    assert (importer._checksum(rows[:cut]) + importer._checksum(rows[cut:])) & _MASK == whole
    assert importer._checksum(rows[::-1]) == whole  # (order-independent)


@given(rows_of)
def test_rows_agree_exactly_when_their_canonical_texts_do(rows: list[tuple[Any, ...]]) -> None:
    for a in rows:
        for b in rows:
            same = canonical_row(a) == canonical_row(b)
            assert (importer._checksum([a]) == importer._checksum([b])) == same, (a, b)


def test_kinds_of_values_hash_apart_and_views_like_their_bytes() -> None:
    c = importer._checksum
    assert len({c([(1,)]), c([(1.0,)]), c([("1",)]), c([(b"1",)]), c([(None,)])}) == 5
    assert c([(0.0,)]) != c([(-0.0,)])
    assert c([(True, memoryview(b"ab"))]) == c([(1, b"ab")]) == c([(1, bytearray(b"ab"))])
    assert c([(2**64, "x")]) != c([(0, "x")])  # (past 64 bits: by value, not wrapped)
    assert c([("\ud800",)]) != c([("\ud801",)])  # (text UTF-8 cannot encode: by repr)
    assert not math.isnan(float(c([(float("nan"),)])))


def test_an_import_recorded_with_the_first_checksum_resumes_with_it(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "c"
    cfg = make_cluster(root, SHARDS, events=True)
    url = _source(tmp_path / "src.db")
    real_commit, real_checksum = importer._commit_cursor, importer._checksum
    calls = [0]

    def old_version(cluster: Any, group: str, mig: str, key: str, state: dict[str, Any], token: str) -> None:
        calls[0] += 1
        if calls[0] == 3:
            raise RuntimeError("injected crash")
        real_commit(cluster, group, mig, key, {k: v for k, v in state.items() if k != "hash"}, token)

    # a run of the version before: sums of the first checksum, no "hash" recorded
    monkeypatch.setattr(importer, "_commit_cursor", old_version)
    monkeypatch.setattr(importer, "_checksum", importer._checksum_v1)
    cl = Cluster.load(cfg)
    try:
        with pytest.raises(RuntimeError, match="injected crash"):
            cl.import_from(url, chunk=1000)
        monkeypatch.setattr(importer, "_commit_cursor", real_commit)
        monkeypatch.setattr(importer, "_checksum", real_checksum)
        rep = cl.import_from(url, chunk=1000)  # continues, summing and verifying as recorded
        assert rep.verified and rep.rows_read == 2 * N - 2000
    finally:
        cl.close()
    _check_placed(root)
