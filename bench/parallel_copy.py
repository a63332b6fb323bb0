"""The snapshot copy with parallel workers on PostgreSQL: 4 sources, each
moving every row to a destination of its own (a renamed topology), copied
with ``run(parallel=1)`` and ``run(parallel=4)`` on fresh schemas.

    python bench/parallel_copy.py ROWS [PAIRS]   # needs SHARDHASH_PG_DSN (libpq key=value)

Prints the copy's seconds and rows/s for each (PAIRS rounds of one worker,
then four; default 2), the executor process's CPU seconds and, when the
server runs on this machine and its processes can be read in /proc, the
server's CPU seconds over the same time (every process of the postmaster:
the live ones, and those that ended, which the postmaster has reaped).
Figures: bench/README.md.
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


def _cpu_of(pid: int, children: bool) -> float:
    """CPU seconds of process ``pid`` (with ``children``: and of its reaped children)."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(f[11]) + int(f[12]) + ((int(f[13]) + int(f[14])) if children else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def server_cpu(dsn: str) -> float | None:
    """The PostgreSQL server's CPU seconds so far: its postmaster, the
    backends it has reaped and those alive; None when not readable here."""
    import psycopg

    try:
        with psycopg.connect(dsn, autocommit=True) as pg:
            row = pg.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        post = int(Path(f"/proc/{int(row[0])}/stat").read_text().rsplit(")", 1)[1].split()[1])
        total = _cpu_of(post, True)
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == post:
                        total += _cpu_of(int(d.name), False)
                except (OSError, ValueError, IndexError):
                    continue  # (a process that ended meanwhile)
        return total
    except (OSError, ValueError, IndexError):
        return None


def one(dsn: str, rows: int, parallel: int) -> dict[str, float | None]:
    with tempfile.TemporaryDirectory() as d:
        path, names = _setup(dsn, Path(d), rows)
        try:
            cl = Cluster.load(path)
            cl.init()
            m = Migration.create(cl, "users", JumpRouter(NEW, version=2), max_step_share=1.0)
            m._prepare()
            m._set("copying")
            m.parallel = parallel
            s0, c0, t0 = server_cpu(dsn), time.process_time(), time.perf_counter()
            m._copy()
            dt, cpu, s1 = time.perf_counter() - t0, time.process_time() - c0, server_cpu(dsn)
            copied = int(m.status()["rows_copied"])
            cl.close()
            return {"parallel": parallel, "rows": copied, "seconds": dt, "rows_per_s": copied / dt,
                    "executor_cpu_s": cpu, "server_cpu_s": None if s0 is None or s1 is None else s1 - s0,
                    "load_1min": os.getloadavg()[0]}
        finally:
            _drop(dsn, names)


def main(argv: list[str]) -> int:
    dsn = os.environ.get("SHARDHASH_PG_DSN")
    if not dsn:
        sys.stderr.write("set SHARDHASH_PG_DSN (a libpq key=value string)\n")
        return 2
    rows = int(argv[0]) if argv else 400_000
    pairs = int(argv[1]) if len(argv) > 1 else 2
    for par in (1, 4) * pairs:
        r = one(dsn, rows, par)
        print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
