"""Fixtures of the migration tests: the backend parameter (SQLite, a real
PostgreSQL server -- tests/_postgres.py finds or starts one -- and a real
MariaDB server -- tests/_mariadb.py finds or starts one; without a server the
case skips, and in CI fails)."""

from __future__ import annotations

import pytest

from tests._mariadb import need_mysql
from tests._postgres import need_postgres


@pytest.fixture(params=["sqlite", "postgres", "mariadb"])
def backend(request: pytest.FixtureRequest) -> str:
    """'sqlite', the DSN of a reachable PostgreSQL server, or the URL
    (``mysql://…``, no database) of a reachable MariaDB server."""
    if request.param == "sqlite":
        return "sqlite"
    if request.param == "mariadb":
        return need_mysql()
    return need_postgres()
