"""Fixtures of the migration tests: the backend parameter (SQLite, and a real
PostgreSQL server from SHARDHASH_PG_DSN / PGHOST, as .ci/pre.d/10-postgres.sh
exports; in CI a missing server fails)."""

from __future__ import annotations

import os

import pytest

from tests._support import oracle_required


def pg_dsn() -> str | None:
    dsn = os.environ.get("SHARDHASH_PG_DSN")
    if dsn:
        return dsn
    if os.environ.get("PGHOST"):
        parts = [f"host={os.environ['PGHOST']}"]
        for var, key in (("PGPORT", "port"), ("PGUSER", "user"), ("PGDATABASE", "dbname")):
            if os.environ.get(var):
                parts.append(f"{key}={os.environ[var]}")
        return " ".join(parts)
    return None


def _need_pg() -> str:
    dsn = pg_dsn()
    why = None
    if dsn is None:
        why = "no PostgreSQL server (set SHARDHASH_PG_DSN or PGHOST)"
    else:
        try:
            import psycopg
        except ImportError:
            why = "psycopg is not installed (pip install 'shardhash[postgres]')"
        else:
            try:
                psycopg.connect(dsn, connect_timeout=10).close()
            except psycopg.Error as e:
                why = f"cannot connect to PostgreSQL at {dsn}: {e}"
    if why is not None:
        if oracle_required():
            pytest.fail(why)
        pytest.skip(why)
    assert dsn is not None
    return dsn


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    """'sqlite', or the DSN of a reachable PostgreSQL server."""
    if request.param == "sqlite":
        return "sqlite"
    return _need_pg()
