"""Fixtures of the migration tests: the backend parameter (SQLite, a real
PostgreSQL server -- tests/_postgres.py finds or starts one -- and a real
MariaDB server -- tests/_mariadb.py finds or starts one; without a server the
case skips, and in CI fails)."""

from __future__ import annotations

from pathlib import Path

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


#: The migrate tests (or test cases) whose MariaDB case runs in the main suite (about 15 s): the
#: copy and cutover, live writes over two tables, the fence, stale routes, a rollback after the
#: cutover, capture of key changes and the shard-key guard (the metadata store's own tests, whose
#: parameter is ``meta``, all run there).  Every
#: other MariaDB case is marked ``mariadb_full`` and runs in its own CI step
#: (.ci/post.d/35-mariadb.sh), as the crash injection does in the chaos step.
MARIADB_MAIN = frozenset({
    "test_jump_four_to_five_moves_exactly_the_planned_keys",
    "test_ring_with_two_tables_and_live_writes",
    "test_frozen_units_make_writers_wait_and_let_readers_read",
    "test_stale_router_gets_stale_route_error_then_retries",
    "test_rollback_after_cutover_replays_destination_writes",
    "test_capture_logs_old_keys_only_when_the_primary_key_changes",
    "test_a_transaction_cannot_write_another_keys_row[mariadb-0]",
})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or callspec.params.get("backend") != "mariadb" or here not in item.path.parents:
            continue
        if getattr(item, "originalname", item.name) not in MARIADB_MAIN and item.name not in MARIADB_MAIN:
            item.add_marker(pytest.mark.mariadb_full)
