"""The migration tests' harness: reading a shard's rows must not turn a read
error into "no rows" (that would hide a duplicate or a misplaced row)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from shardhash.migrate.cluster import open_backend

from . import _harness
from ._harness import drop_cluster, make_cluster, shard_rows


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path
    drop_cluster(tmp_path, backend)


def test_shard_rows_reads_rows_and_a_missing_table_as_empty(root: Path, backend: str) -> None:
    make_cluster(root, ["s0", "s1"], users=50, extra_shards=["s2"], backend=backend)
    seen = {**shard_rows(root, "s0"), **shard_rows(root, "s1")}
    assert sorted(seen) == list(range(1, 51))
    assert seen[7] == (7, "u7", 0)
    assert shard_rows(root, "s2") == {}  # a spare shard: no users table yet
    assert shard_rows(root, "s0", "events") == {}


class _Failing:
    """A shard connection whose reads of the users table fail, like a
    locked or unreadable shard."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        if sql.startswith("SELECT *"):
            raise sqlite3.OperationalError("database is locked")
        return self.conn.execute(sql, params)

    def close(self) -> None:
        self.conn.close()


class _FailingBackend:
    def __init__(self, url: str, base: Any) -> None:
        self.b = open_backend(url, base)

    def has_table(self, c: Any, table: str) -> bool:
        return bool(self.b.has_table(c.conn, table))

    def connect(self) -> _Failing:
        return _Failing(self.b.connect())


def test_shard_rows_raises_a_read_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_cluster(tmp_path, ["s0", "s1"], users=20)
    monkeypatch.setattr(_harness, "open_backend", _FailingBackend)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        shard_rows(tmp_path, "s0")
