"""tests/_postgres.py, the one place the tests find a PostgreSQL server: with nothing
configured it starts a throwaway server for the session (and leaves nothing behind), and
without binaries it skips (in CI fails) with the one wording that says how to enable."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests import _postgres
from tests._support import child_env

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("ci", ["", "1"])
def test_no_server_and_no_binaries_says_how_to_enable(monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    for var in ("SHARDHASH_PG_DSN", "PGHOST"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SHARDHASH_CI", ci)
    monkeypatch.setattr(_postgres, "_server", None)
    monkeypatch.setattr(_postgres, "_failure", None)
    monkeypatch.setattr(_postgres, "find_bindir", lambda: None)
    outcome = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(outcome) as e:
        _postgres.need_postgres()
    assert str(e.value.msg) == ("no PostgreSQL server: set SHARDHASH_PG_DSN, or put PostgreSQL's initdb and "
                                "pg_ctl on PATH")


def _postmasters(needle: str) -> list[str]:
    proc = subprocess.run(["pgrep", "-af", needle], capture_output=True, text=True)
    return [ln for ln in proc.stdout.splitlines() if "pgrep" not in ln]


@pytest.mark.oracle
def test_a_plain_run_starts_a_throwaway_server_and_leaves_nothing(tmp_path: Path) -> None:
    """A child pytest run with no server configured runs (not skips) a PostgreSQL test on a
    server of its own, exports it to later tests, subprocesses and psql (the probe), then stops
    it and deletes its folder."""
    if _postgres.find_bindir() is None or shutil.which("pgrep") is None:
        _postgres.missing("initdb, pg_ctl and pgrep are needed for this test")
    # The child's temporary folders go into a folder of this test's (readable by the server's
    # user when the tests run as root): whatever is left in it afterwards is a leftover.
    tmp = tempfile.mkdtemp(prefix="shardhash-pgfix-")
    try:
        os.chmod(tmp, 0o755)
        env = child_env(TMPDIR=tmp)
        for var in ("SHARDHASH_PG_DSN", "PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "SHARDHASH_CI"):
            env.pop(var, None)
        probe = tmp_path / "test_probe.py"
        probe.write_text(
            "import os, subprocess\n"
            "from tests._postgres import need_postgres\n"
            "def test_probe() -> None:\n"
            "    dsn = need_postgres()\n"
            "    assert os.environ['SHARDHASH_PG_DSN'] == dsn\n"
            "    out = subprocess.run(['psql', '-X', '-At', '-c', 'SELECT 6 * 7'], capture_output=True,\n"
            "                         text=True, check=True).stdout\n"
            "    assert out.strip() == '42'\n"
            "    # one server for the session, although two test modules asked for one\n"
            "    tmp = os.environ['TMPDIR']\n"
            "    assert [d for d in os.listdir(tmp) if d.startswith('shardhash-pg-')] == \\\n"
            "        [os.path.basename(os.environ['PGHOST'])]\n"
            "    print('SERVER', os.environ['PGHOST'])\n")
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "--rootdir", str(ROOT),
             "-c", str(ROOT / "pyproject.toml"),
             str(ROOT / "tests/test_postgres_backends.py") + "::test_scatter_gather_on_postgres", str(probe)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out
        assert "2 passed" in out and "skipped" not in out, out
        found = re.search(r"SERVER (\S+)", out)
        assert found, out
        server_dir = found.group(1)
        assert server_dir.startswith(tmp + os.sep), server_dir
        assert not os.path.exists(server_dir)
        assert os.listdir(tmp) == []
        assert _postmasters(tmp) == []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
