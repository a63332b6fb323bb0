"""The ``shardhash`` command, run as users run it: the installed entry point in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import shardhash
from shardhash import plan, routing

pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402


def _command() -> list[str]:
    """The installed console script next to this interpreter; ``python -m
    shardhash`` only when the package is imported from a source tree on
    PYTHONPATH (no installed script)."""
    bindir = Path(sys.executable).parent
    exe = shutil.which("shardhash", path=str(bindir))
    if exe:
        return [exe]
    pkg_root = Path(shardhash.__file__).resolve().parent.parent
    on_path = [Path(p).resolve() for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if pkg_root in on_path:
        return [sys.executable, "-m", "shardhash"]
    pytest.fail(f"shardhash is installed at {pkg_root} but its console script is missing from {bindir}")


CMD = _command()


def run(*args: str | Path, ok: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([*CMD, *map(str, args)], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "COLUMNS": "200"})
    if ok:
        assert p.returncode == 0, p.stderr
        assert "Traceback" not in p.stderr
    return p


def fails(*args: str | Path, match: str) -> str:
    p = run(*args, ok=False)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert match in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("cli")
    keys = np.random.default_rng(11).integers(0, 1 << 40, size=20_000, dtype=np.int64)
    sizes = (keys % 500 + 1).astype(np.int64)
    pq.write_table(pa.table({"user_id": keys, "bytes": sizes, "name": [f"u{i % 97}" for i in range(len(keys))]}),
                   d / "ids.parquet", row_group_size=6000)
    four = [f"s{i}" for i in range(4)]
    old = routing.JumpRouter(four)
    new = routing.JumpRouter(four + ["s4"], version=2)
    (d / "old.json").write_text(old.to_json())
    (d / "new.json").write_text(new.to_json())
    ring3 = routing.RingRouter(["A", "B", "C"], tokens={"A": [20], "B": [50], "C": [80]})
    ring4 = routing.RingRouter(["A", "B", "C", "D"], tokens={"A": [20], "B": [50], "C": [80], "D": [40]}, version=2)
    (d / "ring3.json").write_text(ring3.to_json())
    (d / "ring4.json").write_text(ring4.to_json())
    return {"dir": d, "ids": d / "ids.parquet", "old": d / "old.json", "new": d / "new.json",
            "ring3": d / "ring3.json", "ring4": d / "ring4.json"}


def test_version_and_help() -> None:
    assert shardhash.__version__ in run("--version").stdout
    assert "demo" in run("--help").stdout


def test_demo_json_small() -> None:
    out = json.loads(run("demo", "--keys", "40000", "--json").stdout)
    rows = {r["strategy"]: r for r in out["strategies"]}
    assert set(rows) == {"modulo", "jump", "ring", "buckets", "rendezvous", "maglev"}
    assert rows["modulo"]["moved_fraction"] == pytest.approx(0.8, abs=0.02)
    for s in ("jump", "ring", "buckets", "rendezvous", "maglev"):
        assert rows[s]["moved_fraction"] == pytest.approx(0.2, abs=0.03), s
        assert rows[s]["ideal_fraction"] == pytest.approx(0.2, abs=1e-3)  # buckets: 819 of 4096
        assert rows[s]["route_mkeys_per_s"] > 0


def test_demo_text() -> None:
    out = run("demo", "--keys", "5000").stdout
    assert "4 shards -> 5 shards" in out
    for s in ("modulo", "jump", "ring", "buckets", "rendezvous", "maglev"):
        assert s in out


def test_topology_new_show_validate(work: dict[str, Path]) -> None:
    p = work["dir"] / "b.json"
    run("topology", "new", "buckets", "--shards", "db1,db2,db3", "--buckets", "1024", "-o", p)
    r = shardhash.load_router(p.read_text())
    assert isinstance(r, routing.BucketRouter) and r.bucket_count == 1024
    assert sorted(np.bincount(r.placement).tolist()) == [341, 341, 342]
    assert r.fingerprint in run("topology", "validate", p).stdout
    shown = run("topology", "show", p).stdout
    assert "BucketRouter" in shown and "db3" in shown
    assert json.loads(run("topology", "show", p, "--json").stdout) == r.to_dict()
    # add: the planner writes the next version
    p2 = work["dir"] / "b2.json"
    run("topology", "add", p, "--shards", "db4", "-o", p2)
    r2 = shardhash.load_router(p2.read_text())
    assert r2.version == r.version + 1 and "db4" in r2.shards


def test_route_adds_a_shard_column(work: dict[str, Path]) -> None:
    out = work["dir"] / "routed.parquet"
    run("route", work["old"], work["ids"], "--column", "user_id", "-o", out)
    t = pq.read_table(out)
    r = shardhash.load_router(work["old"].read_text())
    keys = t.column("user_id").to_numpy()
    assert t.num_rows == 20_000
    assert t.column("shard").to_pylist() == [r.shards[i] for i in r.route_many(keys)]


def test_plan_with_ids_json_moves_and_plot(work: dict[str, Path]) -> None:
    pytest.importorskip("matplotlib")  # --plot (the 'plot' extra)
    moves = work["dir"] / "moves.csv"
    png = work["dir"] / "plan.png"
    p = run("plan", work["old"], work["new"], "--ids", work["ids"], "--column", "user_id",
            "--weights", "bytes", "--json", "--moves", moves, "--plot", png)
    out = json.loads(p.stdout)
    t = pq.read_table(work["ids"])
    keys = t.column("user_id").to_numpy()
    w = t.column("bytes").to_numpy().astype(float)
    old = shardhash.load_router(work["old"].read_text())
    new = shardhash.load_router(work["new"].read_text())
    rep = plan.diff(old, new, keys, weights=w)
    assert out["report"]["moved"] == rep.moved
    assert out["report"]["matrix"] == rep.matrix.tolist()
    assert out["report"]["moved_weight"] == pytest.approx(rep.moved_weight)
    assert sum(s["est_keys"] for s in out["steps"]) == pytest.approx(rep.moved)
    lines = moves.read_text().splitlines()
    assert lines[0] == "user_id,source,destination,bytes"
    assert len(lines) - 1 == rep.moved
    assert all(line.split(",")[2] == "s4" for line in lines[1:])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plan_text_output(work: dict[str, Path]) -> None:
    out = run("plan", work["old"], work["new"], "--ids", work["ids"]).stdout
    assert "move matrix" in out and "steps" in out and "ideal: 20.00%" in out


def test_plan_hash_space_view_of_the_seed_ring(work: dict[str, Path]) -> None:
    pytest.importorskip("matplotlib")  # --plot (the 'plot' extra)
    out = json.loads(run("plan", work["ring3"], work["ring4"], "--json").stdout)
    assert [(m["lo"], m["hi"], m["source"], m["destination"]) for m in out["moved_ranges"]] == [(21, 40, "B", "D")]
    png = work["dir"] / "ring.png"
    text = run("plan", work["ring3"], work["ring4"], "--plot", png).stdout
    assert "range  21  40       B            D" in text
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_analyze(work: dict[str, Path]) -> None:
    out = json.loads(run("analyze", work["ids"], "--column", "name", "--weights", "bytes",
                         "--json", "--top", "3").stdout)
    assert out["rows"] == 20_000
    assert len(out["hot_keys"]) == 3
    names = pq.read_table(work["ids"]).column("name").to_pylist()
    true = {k: names.count(k) for k in set(names)}
    for h in out["hot_keys"]:
        assert h["count_at_least"] <= sum(
            b for n, b in zip(names, pq.read_table(work["ids"]).column("bytes").to_pylist()) if n == h["key"]
        ) <= h["count_at_most"]
    assert true
    out2 = json.loads(run("analyze", work["ids"], "--topology", work["new"], "--json").stdout)
    assert sum(v["keys"] for v in out2["shards"].values()) == 20_000
    assert out2["imbalance"]["max_mean"] < 1.1


def test_analyze_by_bytes_requests_and_rate(work: dict[str, Path], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # Load per shard by count, bytes, requests and request rate; hot keys by
    # each measure.  Small chunks: the column readers go in lockstep.  The first
    # command and the refusals run as the installed command; the others in this
    # process (shardhash.cli.main: the same code, without an interpreter's
    # start-up each).
    monkeypatch.setenv("COLUMNS", "200")

    def here(*args: str | Path) -> str:
        from shardhash.cli import main

        rc = main([str(a) for a in args])
        got = capsys.readouterr()
        assert rc == 0, got.err
        return got.out

    rng = np.random.default_rng(3)
    keys = np.concatenate([rng.integers(0, 1 << 40, size=9_000), np.full(1_000, 777)]).astype(np.int64)
    rng.shuffle(keys)
    size = np.where(keys == 777, 10, keys % 300 + 1).astype(np.int64)
    reqs = np.where(keys == 777, 50, 1).astype(np.int64)
    ids = tmp_path / "log.parquet"
    pq.write_table(pa.table({"user_id": keys, "size": size, "reqs": reqs}), ids, row_group_size=3000)
    out = json.loads(run("analyze", ids, "--column", "user_id", "--topology", work["new"], "--bytes", "size",
                         "--requests", "reqs", "--duration", "20", "--chunk-size", "2500", "--json").stdout)
    r = routing.load_router(work["new"].read_text())
    idx = r.route_many(keys)
    n = len(r.shards)
    want_keys = np.bincount(idx, minlength=n)
    want_bytes = np.bincount(idx, weights=size, minlength=n)
    want_reqs = np.bincount(idx, weights=reqs, minlength=n)
    assert out["rows"] == 10_000
    assert out["bytes_total"] == float(size.sum()) and out["requests_total"] == float(reqs.sum())
    assert out["requests_per_second"] == pytest.approx(reqs.sum() / 20)
    for i, s in enumerate(r.shards):
        row = out["shards"][s]
        assert row["keys"] == want_keys[i]
        assert row["bytes"] == want_bytes[i] and row["requests"] == want_reqs[i]
        assert row["requests_per_second"] == pytest.approx(want_reqs[i] / 20)
    assert out["bytes_imbalance"]["max_mean"] == pytest.approx(want_bytes.max() / want_bytes.mean())
    assert out["requests_imbalance"]["max_mean"] == pytest.approx(want_reqs.max() / want_reqs.mean())
    # 777 is 10% of rows, 1% of bytes (not a standout) and 85% of requests
    by = out["hot_keys_by"]
    assert by["requests"]["hot_keys"][0]["key"] == 777
    assert by["requests"]["hot_keys"][0]["count_at_least"] <= 50_000 <= by["requests"]["hot_keys"][0][
        "count_at_most"]
    assert out["hot_keys"] == by["bytes"]["hot_keys"]
    # a hot set proposed from the requests (the first measure given after --weights/--bytes: here requests only)
    out3 = json.loads(here("analyze", ids, "--column", "user_id", "--topology", work["new"], "--requests", "reqs",
                           "--propose-hot-set", "--json"))
    from shardhash.hotkeys import propose_hot_set

    assert out3["proposed_hot_set"] == [[k, n] for k, n in propose_hot_set(keys, r, weights=reqs).items()]
    assert [k for k, _ in out3["proposed_hot_set"]] == [777] and out3["proposed_hot_set"][0][1] >= 2
    assert "proposed hot set (by requests" in here("analyze", ids, "--column", "user_id", "--topology",
                                                   work["new"], "--requests", "reqs", "--propose-hot-set")
    fails("analyze", ids, "--column", "user_id", "--propose-hot-set", match="needs --topology")
    # rows as requests when there is no requests column; text output names every measure
    out2 = json.loads(here("analyze", ids, "--column", "user_id", "--topology", work["new"], "--duration", "4",
                           "--json"))
    assert out2["requests_per_second"] == 2500
    assert sum(v["requests_per_second"] for v in out2["shards"].values()) == pytest.approx(2500)
    text = here("analyze", ids, "--column", "user_id", "--topology", work["new"], "--bytes", "size",
                "--requests", "reqs", "--duration", "20")
    assert "hot keys by bytes" in text and "hot keys by requests" in text and "requests/s" in text
    fails("analyze", ids, "--column", "user_id", "--bytes", "size", "--requests", "size",
          match="column 'size' given twice")
    assert run("analyze", ids, "--duration", "0", ok=False).returncode == 2


# ------------------------------------------------------------ bad input


def test_error_missing_ids_file(work: dict[str, Path]) -> None:
    fails("plan", work["old"], work["new"], "--ids", work["dir"] / "nope.parquet", match="no such ids file")


def test_error_missing_topology(work: dict[str, Path]) -> None:
    fails("topology", "show", work["dir"] / "nope.json", match="no such topology file")


def test_error_wrong_column(work: dict[str, Path]) -> None:
    fails("route", work["old"], work["ids"], "--column", "uid", "-o", work["dir"] / "x.csv",
          match="no column 'uid'")


def test_error_non_numeric_weights(work: dict[str, Path]) -> None:
    fails("plan", work["old"], work["new"], "--ids", work["ids"], "--column", "user_id", "--weights", "name",
          match="weights column 'name'")


def test_error_corrupt_topology(work: dict[str, Path]) -> None:
    bad = work["dir"] / "bad.json"
    bad.write_text('{"format": "shardhash.router/1", "type": ')
    fails("topology", "validate", bad, match="not valid JSON")


def test_error_mismatched_fingerprint(work: dict[str, Path]) -> None:
    doc = json.loads(work["old"].read_text())
    doc["shards"][0] = "renamed"
    bad = work["dir"] / "tampered.json"
    bad.write_text(json.dumps(doc))
    fails("topology", "validate", bad, match="fingerprint mismatch")


def test_error_unknown_field(work: dict[str, Path]) -> None:
    doc = json.loads(work["old"].read_text())
    doc["colour"] = "blue"
    bad = work["dir"] / "unknown.json"
    bad.write_text(json.dumps(doc))
    fails("plan", bad, work["new"], match="unknown field")


def test_error_corrupt_ids_file(work: dict[str, Path]) -> None:
    bad = work["dir"] / "corrupt.parquet"
    bad.write_bytes(b"PAR1 but not really" * 20)
    fails("analyze", bad, match="not a readable Parquet file")


def test_error_usage(work: dict[str, Path]) -> None:
    fails("frobnicate", match="invalid choice")
    fails("plan", work["old"], match="required")
    fails("plan", work["old"], work["new"], "--weights", "bytes", match="--weights needs --ids")
    fails("demo", "--keys", "0", match="--keys: '0' must be >= 1")
    fails("topology", "new", "ring", "--shards", "a,a", match="duplicate shard id")


def test_error_no_hash_space_view(work: dict[str, Path]) -> None:
    a = work["dir"] / "rv4.json"
    b = work["dir"] / "rv5.json"
    a.write_text(routing.RendezvousRouter(["a", "b"]).to_json())
    b.write_text(routing.RendezvousRouter(["a", "b", "c"]).to_json())
    fails("plan", a, b, match="--ids")


def test_error_output_directory_missing(work: dict[str, Path]) -> None:
    fails("route", work["old"], work["ids"], "-o", work["dir"] / "no" / "out.parquet", match="does not exist")


def test_route_text_ids_as_strings(work: dict[str, Path]) -> None:
    ids = work["dir"] / "ids.txt"
    ids.write_text("007\n42\nalice\n")
    out = work["dir"] / "routed.csv"
    run("route", work["old"], ids, "--id-type", "str", "-o", out)
    r = shardhash.load_router(work["old"].read_text())
    rows = [line.split(",") for line in out.read_text().splitlines()]
    assert rows[0] == ["id", "shard"]
    assert rows[1:] == [[k, r.route(k)] for k in ("007", "42", "alice")]
    # Without a declared key type nothing is guessed; as integers, "alice"
    # is an error naming its line.
    fails("route", work["old"], ids, "--chunk-size", "2", "-o", out, match="key type of the ids is not known")
    fails("route", work["old"], ids, "--id-type", "int", "-o", out, match="line 3: 'alice' is not an integer id")
