"""PostgreSQL: a metadata store or shard whose URL names a schema that does
not exist yet (``options='-csearch_path=NAME'``).  ``init`` and a migration's
prepare step create it; a user who may not create it gets the exact SQL to
run, as an ordinary error (exit 2), never an internal error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from shardhash import plan
from shardhash.migrate import Cluster, Migration, MigrationError
from tests._postgres import need_postgres

from ._harness import _tag, drop_cluster, make_cluster, shard_rows

FOUR = ["s0", "s1", "s2", "s3"]


@pytest.mark.parametrize(("dsn", "want"), [
    ("host=/x options='-csearch_path=shard3'", "shard3"),
    ("host=/x options='-csearch_path=Shard3,public'", "shard3"),  # (unquoted: folded, as the server reads it)
    ("host=/x options='-c search_path=\"My Shard\",public'", "My Shard"),
    ("host=/x options='--search_path=q -cstatement_timeout=5000'", "q"),
    ("postgresql://h/db?options=-csearch_path%3Dabc", "abc"),
    ("host=/x dbname=app", None),
    ("host=/x options='-csearch_path=$user,public'", None),
    ("host=/x options='-cstatement_timeout=5000'", None),
])
def test_url_schema_reads_the_first_search_path_entry(dsn: str, want: str | None) -> None:
    pytest.importorskip("psycopg")
    from shardhash.migrate.postgres import url_schema

    assert url_schema(dsn) == want


@pytest.fixture
def pg() -> str:
    return need_postgres()


@pytest.fixture
def root(tmp_path: Path, pg: str) -> Iterator[Path]:
    yield tmp_path
    drop_cluster(tmp_path, pg)


def _schemas(pg: str, like: str) -> set[str]:
    import psycopg

    with psycopg.connect(pg, autocommit=True) as c:
        return {r[0] for r in c.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s", (like,))}


def _missing_schema_cluster(root: Path, pg: str) -> Path:
    """A cluster file whose metadata store and spare shard s4 name schemas that do not exist."""
    path = make_cluster(root, FOUR, users=600, backend=pg)
    doc = json.loads(path.read_text())
    doc["metadata"] = f"postgresql:{pg} options='-csearch_path=t{_tag(root)}_newmeta'"
    doc["shards"]["s4"] = {"primary": f"postgresql:{pg} options='-csearch_path=t{_tag(root)}_News4'"}
    path.write_text(json.dumps(doc))
    return path


def test_init_creates_the_missing_schemas_and_a_migration_fills_them(root: Path, pg: str) -> None:
    from shardhash.cli import main

    path = _missing_schema_cluster(root, pg)
    assert not _schemas(pg, f"t{_tag(root)}_new%")
    assert main(["migrate", "init", "--config", str(path)]) == 0
    # (the shard's unquoted name is folded to lower case, as PostgreSQL reads the search path)
    assert _schemas(pg, f"t{_tag(root)}_new%") == {f"t{_tag(root)}_newmeta", f"t{_tag(root)}_news4"}
    cl = Cluster.load(path)
    new, _ = plan.add_shards(cl.router(), "s4")
    m = Migration.create(cl, "users", new)
    assert m.run() == "retained"
    moved = {k for k in range(1, 601) if new.route(k) == "s4"}
    assert moved and set(shard_rows(root, "s4")) == moved
    cl.close()


def test_a_command_before_init_names_init(root: Path, pg: str, capsys: pytest.CaptureFixture[str]) -> None:
    from shardhash.cli import main

    path = _missing_schema_cluster(root, pg)
    capsys.readouterr()
    assert main(["migrate", "status", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err and "`shardhash migrate init`" in err, err


def test_a_destination_schema_is_created_by_the_migration(root: Path, pg: str) -> None:
    import psycopg

    path = make_cluster(root, FOUR, users=300, extra_shards=["s4"], backend=pg)
    with psycopg.connect(pg, autocommit=True) as c:  # (the spare shard's schema, dropped after init)
        c.execute(f"DROP SCHEMA t{_tag(root)}_s4 CASCADE")
    cl = Cluster.load(path)
    new, _ = plan.add_shards(cl.router(), "s4")
    m = Migration.create(cl, "users", new)
    assert m.run() == "retained"
    assert _schemas(pg, f"t{_tag(root)}_s4") == {f"t{_tag(root)}_s4"}
    assert set(shard_rows(root, "s4")) == {k for k in range(1, 301) if new.route(k) == "s4"}
    cl.close()


def test_a_user_who_may_not_create_the_schema_gets_the_sql_to_run(root: Path, pg: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import psycopg
    from psycopg.conninfo import make_conninfo

    from shardhash.cli import main

    role = f"t{_tag(root)}_low"
    with psycopg.connect(pg, autocommit=True) as c:
        su = c.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
        if su is None or not su[0]:
            pytest.skip("needs a PostgreSQL superuser (to create a role without the CREATE privilege)")
        c.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        low = make_conninfo(pg, user=role)
        try:
            psycopg.connect(low).close()
        except psycopg.Error as e:
            pytest.skip(f"cannot log in as a new role here: {e}")
        path = make_cluster(root, FOUR, users=50, backend=pg)
        doc = json.loads(path.read_text())
        doc["metadata"] = f"postgresql:{low} options='-csearch_path=t{_tag(root)}_lowmeta'"
        path.write_text(json.dumps(doc))
        capsys.readouterr()
        assert main(["migrate", "init", "--config", str(path)]) == 2
        err = capsys.readouterr().err
        sql = f'CREATE SCHEMA "t{_tag(root)}_lowmeta" AUTHORIZATION "{role}";'
        assert "internal error" not in err and sql in err and "may not create it" in err, err
        cl = Cluster.load(path)
        with pytest.raises(MigrationError, match="AUTHORIZATION"):
            cl.init()
        cl.close()
        assert not _schemas(pg, f"t{_tag(root)}_lowmeta")  # (nothing half-made)
        # the SQL it names, run by a user who may, is all init needs
        with psycopg.connect(pg, autocommit=True) as c:
            c.execute(sql)
        assert main(["migrate", "init", "--config", str(path)]) == 0
    finally:
        drop_cluster(root, pg)
        with psycopg.connect(pg, autocommit=True) as c:
            c.execute(f'DROP OWNED BY "{role}"')
            c.execute(f'DROP ROLE "{role}"')
