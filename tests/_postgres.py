"""The one place the tests (and benchmarks) find a PostgreSQL server.

In order:

1. ``SHARDHASH_PG_DSN`` (a libpq connection string; .ci/pre.d/10-postgres.sh sets it),
2. ``PGHOST`` (with ``PGPORT``, ``PGUSER``, ``PGDATABASE`` when set),
3. a throwaway server of this test session, when PostgreSQL's ``initdb`` and ``pg_ctl`` are on
   PATH or in /usr/lib/postgresql/*/bin: initdb into a temporary folder, a unix socket in that
   folder only (no TCP), fsync off; started once, at the first test that needs it, and stopped
   and deleted when the session ends.  Its DSN and PG* variables are exported so that
   subprocesses (CLI runs, psql, forked executors) reach the same server,
4. else a skip (a failure in CI, SHARDHASH_CI=1) saying how to enable the tests: :data:`HOW`.
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import NoReturn

import pytest

from tests._support import oracle_required

# The one wording of a missing server (a skip's reason, or CI's failure).
HOW = "set SHARDHASH_PG_DSN, or put PostgreSQL's initdb and pg_ctl on PATH"
NO_SERVER = f"no PostgreSQL server: {HOW}"

_lock = threading.Lock()
_server: ThrowawayServer | None = None
_failure: str | None = None  # why the throwaway server could not start (not retried)


def configured_dsn() -> str | None:
    """The server the environment names (SHARDHASH_PG_DSN, else PGHOST), or None."""
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


def find_bindir() -> str | None:
    """A folder holding PostgreSQL's initdb and pg_ctl: the one PATH names (links resolved),
    else the newest /usr/lib/postgresql/*/bin (Debian's layout keeps them off PATH)."""
    found = []
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        found.append(os.path.dirname(os.path.realpath(initdb)))

    def version(d: str) -> tuple[int, ...]:
        return tuple(int(x) for x in Path(d).parent.name.split(".") if x.isdigit())

    found += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)
    for d in found:
        if all(os.access(os.path.join(d, exe), os.X_OK) for exe in ("initdb", "pg_ctl", "postgres")):
            return d
    return None


class ThrowawayServer:
    """A PostgreSQL server in a temporary folder, listening on a unix socket there only.

    The server refuses to run as root: as root, it runs as the ``postgres`` account (or
    ``nobody``), which owns the folder."""

    def __init__(self, bindir: str) -> None:
        self.bindir = bindir
        self.owner_pid = os.getpid()
        self.dir = tempfile.mkdtemp(prefix="shardhash-pg-")
        os.chmod(self.dir, 0o755)
        self.user: str | None = None
        if os.geteuid() == 0:
            import pwd

            for name in ("postgres", "nobody"):
                try:
                    pw = pwd.getpwnam(name)
                except KeyError:
                    continue
                self.user = name
                os.chown(self.dir, pw.pw_uid, pw.pw_gid)
                break
        self.data = os.path.join(self.dir, "data")
        self.port = _free_port()
        self.dsn = f"host={self.dir} port={self.port} user=shardhash dbname=postgres"
        self.running = False

    def _run(self, *args: str, log: str) -> None:
        cmd = [os.path.join(self.bindir, args[0]), *args[1:]]
        if self.user is not None:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        # (from the server's own folder: the checkout may be unreadable to the server's user)
        proc = subprocess.run(cmd, cwd=self.dir, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=120)
        if proc.returncode != 0:
            tail = ""
            logfile = os.path.join(self.dir, log)
            if os.path.exists(logfile):
                tail = Path(logfile).read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{args[0]} failed ({proc.returncode}): {(proc.stderr + proc.stdout).strip()} {tail}")

    def start(self) -> None:
        try:
            self._run("initdb", "-D", self.data, "-A", "trust", "-U", "shardhash", "-E", "UTF8", "--locale=C",
                      "--no-sync", log="initdb.log")
            self._run("pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "server.log"), "-w", "-t", "60",
                      "-o", f"-k {self.dir} -h '' -p {self.port} -F -c fsync=off -c max_connections=200",
                      "start", log="server.log")
            self.running = True
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the server and delete its folder (only in the process that started it: a
        forked child's exit must not take the server away)."""
        if os.getpid() != self.owner_pid:
            return
        if self.running:
            self.running = False
            try:
                self._run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "-t", "60", "stop", log="server.log")
            except (RuntimeError, OSError, subprocess.TimeoutExpired):
                pass
        shutil.rmtree(self.dir, ignore_errors=True)

    def export(self) -> None:
        """Name this server to subprocesses and to psql, as .ci/pre.d/10-postgres.sh does."""
        os.environ.update(PGHOST=self.dir, PGPORT=str(self.port), PGUSER="shardhash", PGDATABASE="postgres",
                          SHARDHASH_PG_DSN=self.dsn)


def _free_port() -> int:
    # The socket lives in the server's own folder, so any port works; a free TCP port keeps
    # the server's shared-memory key apart from other servers' on this machine.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def missing(detail: str | None = None) -> NoReturn:
    """Skip (fail in CI) for want of a server, with the one wording."""
    why = NO_SERVER if detail is None else f"no PostgreSQL server ({detail}): {HOW}"
    if oracle_required():
        pytest.fail(why)
    pytest.skip(why)


def _start_throwaway() -> str | None:
    global _server, _failure
    with _lock:
        if _server is not None:
            return _server.dsn
        if _failure is not None:
            missing(_failure)
        bindir = find_bindir()
        if bindir is None:
            return None
        server = ThrowawayServer(bindir)
        atexit.register(server.stop)
        try:
            server.start()
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
            _failure = f"the throwaway server did not start: {e}"
            missing(_failure)
        _server = server
        server.export()
        return server.dsn


def server_dsn() -> str | None:
    """The DSN of the server the tests use, starting the throwaway one if need be; None if there
    is none (no variable set, no binaries).  Nothing is checked here."""
    return configured_dsn() or _start_throwaway()


def need_postgres(psycopg: bool = True) -> str:
    """The DSN of a reachable PostgreSQL server (see the module's doc), else a skip (in CI a
    failure).  ``psycopg``: the caller connects with psycopg (else: with psql only)."""
    dsn = server_dsn()
    if dsn is None:
        missing()
    if psycopg:
        try:
            import psycopg as pg
        except ImportError:
            if oracle_required():
                pytest.fail("psycopg is not installed: pip install 'shardhash[postgres]'")
            pytest.skip("psycopg is not installed: pip install 'shardhash[postgres]'")
        try:
            pg.connect(dsn, connect_timeout=10).close()
        except pg.Error as e:
            missing(f"cannot connect to {dsn}: {str(e).strip()}")
    return dsn


def stop_throwaway() -> None:
    """Stop this session's throwaway server, if one runs (the session's end; atexit too)."""
    global _server
    with _lock:
        if _server is not None:
            _server.stop()
            _server = None
