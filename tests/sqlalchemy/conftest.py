"""Fixtures of the SQLAlchemy tests: the backend parameter (SQLite, and a real
PostgreSQL server as in tests/migrate)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._postgres import need_postgres
from tests.migrate._harness import drop_cluster


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    """'sqlite', or the DSN of a reachable PostgreSQL server."""
    if request.param == "sqlite":
        return "sqlite"
    return need_postgres()


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    """The folder of a test's cluster; its PostgreSQL schemas are dropped after."""
    yield tmp_path
    drop_cluster(tmp_path, backend)
