"""Fixtures of the saga tests: the backend parameter (SQLite, and a real
PostgreSQL server: tests/_postgres.py finds or starts one; without one the case
skips, and in CI fails), and a clean saga registry and fault hook per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shardhash import saga
from tests._postgres import need_postgres


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    """'sqlite', or the DSN of a reachable PostgreSQL server."""
    if request.param == "sqlite":
        return "sqlite"
    return need_postgres()


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    yield
    saga.set_fault_hook(None)
    saga.registry.clear()
