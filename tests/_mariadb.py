"""The one place the tests (and benchmarks) find a MariaDB / MySQL server.

In order:

1. ``SHARDHASH_MYSQL_URL`` (a ``mysql://`` / ``mariadb://`` URL of a user who may create
   databases; .ci/pre.d/30-mariadb.sh sets it),
2. a throwaway server of this test session, when ``mariadbd`` and ``mariadb-install-db`` are
   on PATH or in /usr/sbin, /usr/bin: a data directory and a unix socket in a temporary
   folder, no TCP (``--skip-networking``), run as the ``mysql`` account when the tests run
   as root; started once, at the first test that needs it, stopped and deleted when the
   session ends.  Its URL is exported (``SHARDHASH_MYSQL_URL``) so that subprocesses
   (CLI runs, forked executors) reach the same server,
3. else a skip (a failure in CI, SHARDHASH_CI=1) saying how to enable the tests: :data:`HOW`.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests._support import oracle_required

HOW = "set SHARDHASH_MYSQL_URL, or install MariaDB's server (mariadbd, mariadb-install-db)"
NO_SERVER = f"no MariaDB/MySQL server: {HOW}"

_lock = threading.Lock()
_server: ThrowawayServer | None = None
_failure: str | None = None


def find_binaries() -> tuple[str, str] | None:
    """(mariadbd, mariadb-install-db), or None."""
    found = []
    for exe in ("mariadbd", "mariadb-install-db"):
        path = shutil.which(exe) or next((p for p in (f"/usr/sbin/{exe}", f"/usr/bin/{exe}")
                                          if os.access(p, os.X_OK)), None)
        if path is None:
            return None
        found.append(path)
    return found[0], found[1]


class ThrowawayServer:
    """A MariaDB server in a temporary folder, on a unix socket there only."""

    def __init__(self, mariadbd: str, install_db: str) -> None:
        self.mariadbd, self.install_db = mariadbd, install_db
        self.owner_pid = os.getpid()
        self.dir = tempfile.mkdtemp(prefix="shardhash-mariadb-")
        os.chmod(self.dir, 0o755)
        self.user: str | None = None
        if os.geteuid() == 0:
            import pwd

            for name in ("mysql", "nobody"):
                try:
                    pw = pwd.getpwnam(name)
                except KeyError:
                    continue
                self.user = name
                os.chown(self.dir, pw.pw_uid, pw.pw_gid)
                break
        self.data = os.path.join(self.dir, "data")
        self.socket = os.path.join(self.dir, "mysqld.sock")
        self.url = f"mysql://root@localhost/?unix_socket={urllib.parse.quote(self.socket, safe='')}"
        self.proc: subprocess.Popen[bytes] | None = None

    def _cmd(self, *args: str) -> list[str]:
        return ["runuser", "-u", self.user, "--", *args] if self.user is not None else list(args)

    def start(self) -> None:
        try:
            user = ["--user=" + self.user] if self.user is not None else []
            init = subprocess.run(self._cmd(self.install_db, "--no-defaults", f"--datadir={self.data}",
                                            "--auth-root-authentication-method=normal", "--skip-test-db",
                                            *user),
                                  cwd=self.dir, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=120)
            if init.returncode != 0:
                raise RuntimeError(f"mariadb-install-db failed ({init.returncode}): "
                                   f"{(init.stderr + init.stdout).strip()[-2000:]}")
            log = open(os.path.join(self.dir, "server.log"), "wb")
            self.proc = subprocess.Popen(
                self._cmd(self.mariadbd, "--no-defaults", f"--datadir={self.data}", f"--socket={self.socket}",
                          "--skip-networking", f"--pid-file={os.path.join(self.dir, 'mysqld.pid')}",
                          "--innodb-flush-log-at-trx-commit=2", "--innodb-doublewrite=0",
                          "--innodb-buffer-pool-size=128M", "--innodb-log-file-size=64M",
                          "--skip-log-bin", "--max-connections=300", "--character-set-server=utf8mb4",
                          "--collation-server=utf8mb4_bin", *user),
                cwd=self.dir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
            log.close()
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        import MySQLdb

        deadline = time.monotonic() + 60
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                tail = Path(self.dir, "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"mariadbd exited ({self.proc.returncode}): {tail}")
            try:
                MySQLdb.connect(unix_socket=self.socket, user="root").close()
                return
            except MySQLdb.OperationalError:
                if time.monotonic() > deadline:
                    raise RuntimeError("mariadbd did not accept connections within 60 s") from None
                time.sleep(0.1)

    def stop(self) -> None:
        """Stop the server and delete its folder (only in the process that started it)."""
        if os.getpid() != self.owner_pid:
            return
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)

    def export(self) -> None:
        os.environ["SHARDHASH_MYSQL_URL"] = self.url


def missing(detail: str | None = None) -> NoReturn:
    why = NO_SERVER if detail is None else f"no MariaDB/MySQL server ({detail}): {HOW}"
    if oracle_required():
        pytest.fail(why)
    pytest.skip(why)


def _start_throwaway() -> str | None:
    global _server, _failure
    with _lock:
        if _server is not None:
            return _server.url
        if _failure is not None:
            missing(_failure)
        found = find_binaries()
        if found is None:
            return None
        try:
            import MySQLdb  # noqa: F401
        except ImportError:
            return None
        server = ThrowawayServer(*found)
        atexit.register(server.stop)
        try:
            server.start()
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
            _failure = f"the throwaway server did not start: {e}"
            missing(_failure)
        _server = server
        server.export()
        return server.url


def need_mysql() -> str:
    """The URL (without a database) of a reachable MariaDB/MySQL server, else a skip (in CI a
    failure)."""
    try:
        import MySQLdb
    except ImportError:
        if oracle_required():
            pytest.fail("mysqlclient is not installed: pip install 'shardhash[mysql]'")
        pytest.skip("mysqlclient is not installed: pip install 'shardhash[mysql]'")
    url = os.environ.get("SHARDHASH_MYSQL_URL") or _start_throwaway()
    if url is None:
        missing()
    from shardhash.migrate.mysql import connect_args

    try:
        MySQLdb.connect(**connect_args(url, database=False)).close()
    except MySQLdb.Error as e:
        missing(f"cannot connect to {url}: {e}")
    return url


def with_database(url: str, name: str) -> str:
    """``url`` naming database ``name``."""
    p = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((p.scheme, p.netloc, "/" + name, p.query, p.fragment))


def new_database_url(url: str, prefix: str = "t") -> str:
    """A URL naming a fresh, not yet created database (the backend creates it)."""
    return with_database(url, f"{prefix}{uuid.uuid4().hex[:12]}")


def drop_databases(url: str, prefix: str) -> None:
    """Drop every database whose name starts with ``prefix`` (a test's own tag)."""
    import MySQLdb

    from shardhash.migrate.mysql import connect_args, qi

    c = MySQLdb.connect(**connect_args(url, database=False))
    try:
        cur = c.cursor()
        cur.execute("SHOW DATABASES")
        for (name,) in cur.fetchall():
            if str(name).startswith(prefix):
                cur.execute("DROP DATABASE " + qi(str(name)))
    finally:
        c.close()


def raw_connect(url: str) -> Any:
    """A plain mysqlclient connection to the database ``url`` names (autocommit)."""
    import MySQLdb

    from shardhash.migrate.mysql import connect_args

    return MySQLdb.connect(**connect_args(url), autocommit=True)


def stop_throwaway() -> None:
    global _server
    with _lock:
        if _server is not None:
            _server.stop()
            _server = None
