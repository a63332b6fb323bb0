"""Fixtures of the asyncio client tests: the backend parameter (SQLite, and a real
PostgreSQL server as in tests/migrate)."""

from __future__ import annotations

import pytest

from tests._postgres import need_postgres


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    """'sqlite', or the DSN of a reachable PostgreSQL server."""
    if request.param == "sqlite":
        return "sqlite"
    return need_postgres()
