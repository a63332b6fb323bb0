"""What ``plan`` and ``route`` print about their own output: ``plan --moves``
and ``--plot`` say what they wrote (as ``route`` does); ``plan`` counts rows,
and distinct keys apart; ``route - -o -`` prints nothing before its input
proved valid, and a CSV read as text gets the hint ``--format csv``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shardhash.routing import load_router
from tests._support import child_env


def _sh(*args: str | Path, stdin: str = "", cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shardhash", *map(str, args)], input=stdin, capture_output=True,
                          text=True, timeout=120, cwd=cwd, env=child_env())


def _topology(folder: Path, name: str, shards: str, key_type: str, add: str) -> None:
    """``name``.json (a jump topology of ``shards``) and ``name``2.json (``add`` added)."""
    for args in (("topology", "new", "jump", "--shards", shards, "--key-type", key_type, "-o", f"{name}.json"),
                 ("topology", "add", f"{name}.json", "--shards", add, "-o", f"{name}2.json")):
        assert _sh(*args, cwd=folder).returncode == 0


@pytest.fixture
def topos(tmp_path: Path) -> Path:
    _topology(tmp_path, "old", "a,b,c,d", "int", "e")
    (tmp_path / "new.json").write_text((tmp_path / "old2.json").read_text())
    return tmp_path


def test_route_prints_nothing_before_the_input_is_valid_and_suggests_format_csv(topos: Path) -> None:
    p = _sh("route", "old.json", "-", "-o", "-", stdin="id,name\n1,a\n2,b\n", cwd=topos)
    assert p.returncode == 2 and p.stdout == "", p.stdout
    assert p.stderr.count("\n") == 1 and "line 1: 'id,name' is not an integer id" in p.stderr
    assert p.stderr.rstrip().endswith("say so with --format csv"), p.stderr
    ok = _sh("route", "old.json", "-", "-o", "-", "--format", "csv", stdin="id,name\n1,a\n2,b\n", cwd=topos)
    r = load_router(str(topos / "old.json"))
    assert ok.returncode == 0 and ok.stdout == f"id,name,shard\n1,a,{r.route(1)}\n2,b,{r.route(2)}\n"
    # a bad id further down the first chunk: still nothing on stdout; no CSV hint for an explicit format
    bad = _sh("route", "old.json", "-", "-o", "-", "--format", "text", stdin="1\n2\nx\n", cwd=topos)
    assert bad.returncode == 2 and bad.stdout == "" and "line 3" in bad.stderr and "--format csv" not in bad.stderr
    # no ids at all: the header alone
    empty = _sh("route", "old.json", "-", "-o", "-", stdin="", cwd=topos)
    assert empty.returncode == 0 and empty.stdout == "id,shard\n", empty


def test_plan_counts_rows_and_distinct_keys(topos: Path) -> None:
    ids = [i % 1000 for i in range(1070)]  # 1,070 rows, 1,000 distinct keys
    (topos / "ids.csv").write_text("id\n" + "".join(f"{i}\n" for i in ids))
    p = _sh("plan", "old.json", "new.json", "--ids", "ids.csv", "-q", cwd=topos)
    assert p.returncode == 0, p.stderr
    old, new = load_router(str(topos / "old.json")), load_router(str(topos / "new.json"))
    moved = sum(old.route(i) != new.route(i) for i in ids)
    line = p.stdout.splitlines()[1]
    assert line.startswith(f"rows: 1,070 (1,000 distinct keys)   moved: {moved:,} rows ("), line
    assert "per shard (rows):" in p.stdout and "est. rows" in p.stdout and "keys: " not in p.stdout
    j = json.loads(_sh("plan", "old.json", "new.json", "--ids", "ids.csv", "--json", "-q", cwd=topos).stdout)
    assert (j["rows"], j["distinct_keys"]) == (1070, 1000)
    # string keys: distinct by a hash of each key
    _topology(topos, "s", "a,b", "str", "c")
    (topos / "s.txt").write_text("".join(f"k{i % 40}\n" for i in range(50)))
    j = json.loads(_sh("plan", "s.json", "s2.json", "--ids", "s.txt", "--json", "-q", cwd=topos).stdout)
    assert (j["rows"], j["distinct_keys"]) == (50, 40)


def test_plan_says_what_moves_and_plot_wrote(topos: Path) -> None:
    pytest.importorskip("matplotlib")
    pytest.importorskip("pyarrow")
    (topos / "ids.csv").write_text("id\n" + "".join(f"{i}\n" for i in range(2000)))
    p = _sh("plan", "old.json", "new.json", "--ids", "ids.csv", "--moves", "moves.csv", "--plot", "p.png", "-q",
            cwd=topos)
    assert p.returncode == 0, p.stderr
    written = (topos / "moves.csv").read_text().splitlines()[1:]
    assert written and (topos / "p.png").stat().st_size > 0
    lines = p.stderr.splitlines()
    assert f"wrote {len(written):,} moved id(s) (id, source, destination) to moves.csv" in lines, lines
    assert "wrote the plot (load before/after, move matrix) to p.png" in lines, lines
    # --json keeps stdout a JSON document; the report stays on stderr
    j = _sh("plan", "old.json", "new.json", "--ids", "ids.csv", "--moves", "m2.csv", "--json", "-q", cwd=topos)
    assert json.loads(j.stdout)["rows"] == 2000 and "wrote " in j.stderr and "wrote " not in j.stdout
