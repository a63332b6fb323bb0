"""keyset_chunks: the keyset pagination the check and scan_chunks share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shardhash.migrate.systables import keyset_chunks


class _Rows:
    """A backend whose ``scan`` serves sorted (pk, value) rows and records each call."""

    def __init__(self, n: int) -> None:
        self.rows = [(i, f"v{i}") for i in range(n)]
        self.calls: list[tuple[Any, int]] = []

    def scan(self, c: Any, table: str, cols: Sequence[str], pk: Sequence[str],
             after: Sequence[Any] | None, limit: int) -> list[tuple[Any, ...]]:
        assert list(cols) == ["v", "id"] and list(pk) == ["id"]
        self.calls.append((None if after is None else tuple(after), limit))
        rest = [r for r in self.rows if after is None or r[0] > after[0]]
        return [(v, i) for i, v in rest[:limit]]


def test_every_row_once_in_order_and_a_short_chunk_is_the_last() -> None:
    b = _Rows(7)
    chunks = list(keyset_chunks(b, None, "t", ["v", "id"], ["id"], 3))
    assert [[r[1] for r in ch] for ch in chunks] == [[0, 1, 2], [3, 4, 5], [6]]
    assert b.calls == [(None, 3), ((2,), 3), ((5,), 3)]   # no query after the short chunk


def test_a_full_last_chunk_costs_one_empty_query() -> None:
    b = _Rows(6)
    assert [len(ch) for ch in keyset_chunks(b, None, "t", ["v", "id"], ["id"], 3)] == [3, 3]
    assert b.calls[-1] == ((5,), 3)


def test_resumes_after_a_key() -> None:
    b = _Rows(5)
    chunks = list(keyset_chunks(b, None, "t", ["v", "id"], ["id"], 10, after=[2]))
    assert chunks == [[("v3", 3), ("v4", 4)]]
    assert b.calls == [((2,), 10)]
