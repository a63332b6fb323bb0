"""The ``backend`` fixture of the lookups tests: SQLite, PostgreSQL and MariaDB when a server is there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lookups._backends import NAMES, USERS, Backend, mariadb_backend, postgres_backend, sqlite_backend


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.oracle),
                        pytest.param("mariadb", marks=pytest.mark.oracle)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """Three shards ``NAMES``, each with an empty ``users`` table (``USERS``)."""
    b = (sqlite_backend(tmp_path) if request.param == "sqlite" else
         postgres_backend() if request.param == "postgresql" else mariadb_backend())
    try:
        for s in NAMES:
            b.execute(s, USERS)
        yield b
    finally:
        for close in b.closers:
            close()
