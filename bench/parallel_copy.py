"""The snapshot copy with parallel workers on PostgreSQL: 4 sources, each
moving every row to a destination of its own (a renamed topology), copied
with ``run(parallel=1)`` and ``run(parallel=4)`` on fresh schemas.

    python bench/parallel_copy.py ROWS      # needs SHARDHASH_PG_DSN (libpq key=value)

Prints the copy's seconds and rows/s for each, and the executor process's
CPU seconds (the rest of the work is the server's).  Figures: bench/README.md.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

from shardhash import JumpRouter
from shardhash.migrate import Cluster, Migration

OLD = ["s0", "s1", "s2", "s3"]
NEW = ["d0", "d1", "d2", "d3"]


def _setup(dsn: str, root: Path, rows: int) -> tuple[Path, list[str]]:
    import psycopg
    from psycopg import sql

    tag = "b" + uuid.uuid4().hex[:8]
    names = [f"{tag}_{s}" for s in OLD + NEW + ["meta"]]
    old = JumpRouter(OLD)
    ids = list(range(1, rows + 1))
    owners = old.route_many(ids).tolist()
    with psycopg.connect(dsn, autocommit=True) as pg:
        for n in names:
            pg.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(n)))
        for i, s in enumerate(OLD):
            pg.execute(sql.SQL("CREATE TABLE {}.users (id BIGINT PRIMARY KEY, name TEXT NOT NULL, "
                               "n BIGINT NOT NULL)").format(sql.Identifier(f"{tag}_{s}")))
            with pg.cursor().copy(sql.SQL("COPY {}.users FROM STDIN").format(sql.Identifier(f"{tag}_{s}"))) as cp:
                for k, o in zip(ids, owners):
                    if o == i:
                        cp.write_row((k, f"user {k}", k))

    def url(s: str) -> str:
        return f"postgresql:{dsn} options='-csearch_path={tag}_{s}'"

    doc = {"metadata": url("meta"), "shards": {s: {"primary": url(s)} for s in OLD + NEW},
           "groups": {"users": {"router": old.to_dict(), "tables": [{"name": "users", "key": "id"}]}}}
    path = root / "cluster.json"
    path.write_text(json.dumps(doc))
    return path, names


def _drop(dsn: str, names: list[str]) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as pg:
        for n in names:
            pg.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(n)))


def one(dsn: str, rows: int, parallel: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as d:
        path, names = _setup(dsn, Path(d), rows)
        try:
            cl = Cluster.load(path)
            cl.init()
            m = Migration.create(cl, "users", JumpRouter(NEW, version=2), max_step_share=1.0)
            m._prepare()
            m._set("copying")
            m.parallel = parallel
            c0, t0 = time.process_time(), time.perf_counter()
            m._copy()
            dt, cpu = time.perf_counter() - t0, time.process_time() - c0
            copied = int(m.status()["rows_copied"])
            cl.close()
            return {"parallel": parallel, "rows": copied, "seconds": dt, "rows_per_s": copied / dt,
                    "executor_cpu_s": cpu}
        finally:
            _drop(dsn, names)


def main(argv: list[str]) -> int:
    dsn = os.environ.get("SHARDHASH_PG_DSN")
    if not dsn:
        sys.stderr.write("set SHARDHASH_PG_DSN (a libpq key=value string)\n")
        return 2
    rows = int(argv[0]) if argv else 400_000
    for par in (1, 4, 1, 4):
        r = one(dsn, rows, par)
        print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
