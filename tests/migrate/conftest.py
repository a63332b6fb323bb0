"""Fixtures of the migration tests: the backend parameter (SQLite, and a real
PostgreSQL server: tests/_postgres.py finds or starts one; without one the case
skips, and in CI fails)."""

from __future__ import annotations

import pytest

from tests._postgres import need_postgres


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    """'sqlite', or the DSN of a reachable PostgreSQL server."""
    if request.param == "sqlite":
        return "sqlite"
    return need_postgres()
