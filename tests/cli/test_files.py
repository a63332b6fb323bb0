"""The command line on realistic files: no data loss, ids routed exactly as the
application routes them, the same results and errors with and without pyarrow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import shardhash
from shardhash import routing
from tests._support import child_env, present

# The command runs in a child Python; "without" blocks the pyarrow import there.
_RUNNER = (
    "import sys\n"
    "if sys.argv[1] == 'without':\n"
    "    sys.modules['pyarrow'] = None\n"
    "from shardhash.cli import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)
ARROW = ["with", "without"]


def run(arrow: str, *args: object, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    if arrow == "with":
        pytest.importorskip("pyarrow")
    return subprocess.run([sys.executable, "-c", _RUNNER, arrow, *map(str, args)], capture_output=True,
                          text=True, timeout=300, env=child_env(COLUMNS="200"), input=stdin)


def ok(arrow: str, *args: object, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    p = run(arrow, *args, stdin=stdin)
    assert p.returncode == 0, p.stderr
    return p


def fails(arrow: str, *args: object, match: str) -> str:
    p = run(arrow, *args)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert match in lines[0], lines[0]
    return lines[0]


@pytest.fixture()
def topo(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for kt in ("int", "str", None):
        r: routing.Router = routing.JumpRouter([f"s{i}" for i in range(4)])
        if kt is not None:
            r = r.with_key_type(kt)
        p = tmp_path / f"jump-{kt or 'untyped'}.json"
        p.write_text(r.to_json())
        out[kt or "untyped"] = p
    return out


def _router(path: Path) -> routing.Router:
    return shardhash.load_router(path.read_text())


# ------------------------------------------------------------- 1, 2: data loss


@pytest.mark.parametrize("arrow", ARROW)
def test_route_refuses_to_overwrite_its_input(arrow: str, topo: dict[str, Path], tmp_path: Path) -> None:
    ids = tmp_path / "same.csv"
    text = "id,name\n1,a\n2,b\n"
    ids.write_text(text)
    fails(arrow, "route", topo["int"], ids, "-o", ids, match="is the ids file itself")
    link = tmp_path / "link.csv"
    os.link(ids, link)
    fails(arrow, "route", topo["int"], ids, "-o", link, match="is the ids file itself")
    sym = tmp_path / "sym.csv"
    sym.symlink_to(ids)
    fails(arrow, "route", topo["int"], ids, "-o", sym, match="is the ids file itself")
    assert ids.read_text() == text


@pytest.mark.parametrize("arrow", ARROW)
def test_route_error_midway_leaves_no_partial_output(arrow: str, topo: dict[str, Path], tmp_path: Path) -> None:
    ids = tmp_path / "ids.csv"
    ids.write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(50)) + "oops,x\n")
    out = tmp_path / "out.csv"
    out.write_text("previous result\n")
    fails(arrow, "route", topo["int"], ids, "-o", out, "--chunk-size", "10",
          match="line 52: 'oops' is not an integer id")
    assert out.read_text() == "previous result\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        sorted(["ids.csv", "out.csv"] + [p.name for p in topo.values()])


@pytest.mark.parametrize("arrow", ARROW)
def test_route_keeps_every_column_and_round_trips_ids(arrow: str, topo: dict[str, Path], tmp_path: Path) -> None:
    ids = tmp_path / "ids.csv"
    rows = ["user,name,bytes\r\n", '007,"Smith, J",10\r\n', "7,b,20\r\n", 'x-1,"say ""hi""",30\r\n']
    ids.write_text("".join(rows), newline="")
    out = tmp_path / "out.csv"
    ok(arrow, "route", topo["str"], ids, "-o", out, "--shard-column", "owner")
    r = _router(topo["str"])
    got = out.read_bytes().decode()
    want = "".join(rows[0][:-2] + ",owner\r\n" if i == 0 else
                   rows[i][:-2] + "," + r.route(["007", "7", "x-1"][i - 1]) + "\r\n" for i in range(len(rows)))
    assert got == want
    fails(arrow, "route", topo["str"], ids, "-o", tmp_path / "o2.csv", "--shard-column", "name",
          match="already has a column of that name")


# ------------------------------------------------------- 3-7: silent wrong routes


@pytest.mark.parametrize("arrow", ARROW)
def test_no_header_and_header_that_looks_like_data(arrow: str, topo: dict[str, Path], tmp_path: Path) -> None:
    ids = tmp_path / "ids.csv"
    ids.write_text("5\n6\n7\n")
    fails(arrow, "route", topo["int"], ids, "-o", tmp_path / "o.csv",
          match="the header '5' looks like data")
    out = tmp_path / "o.csv"
    ok(arrow, "route", topo["int"], ids, "-o", out, "--no-header")
    r = _router(topo["int"])
    assert out.read_text().splitlines() == [f"{k},{r.route(k)}" for k in (5, 6, 7)]


@pytest.mark.parametrize("arrow", ARROW)
def test_key_type_is_declared_never_guessed(arrow: str, topo: dict[str, Path], tmp_path: Path) -> None:
    ids = tmp_path / "ids.csv"
    ids.write_text("id\n0\n007\n")
    more = tmp_path / "more.csv"
    more.write_text("id\n0\nalice\n")
    fails(arrow, "route", topo["untyped"], ids, "-o", tmp_path / "o.csv", match="key type of the ids is not known")
    r = _router(topo["str"])
    for f in (ids, more):
        out = tmp_path / f"o-{f.name}"
        ok(arrow, "route", topo["str"], f, "-o", out)
        got = dict(line.split(",") for line in out.read_text().splitlines()[1:])
        # "0" routes as the string "0" whatever else the file holds.
        assert got["0"] == r.route("0")
    out = tmp_path / "o-int.csv"
    ok(arrow, "route", topo["int"], ids, "-o", out)
    ri = _router(topo["int"])
    assert out.read_text().splitlines()[1:] == [f"0,{ri.route(0)}", f"007,{ri.route(7)}"]
    fails(arrow, "route", topo["int"], more, "-o", out, match="line 3: 'alice' is not an integer id")
    fails(arrow, "route", topo["int"], ids, "--id-type", "str", "-o", out, match="contradicts")


@pytest.mark.parametrize("arrow", ARROW)
def test_u64_ids_above_2_63(arrow: str, topo: dict[str, Path], tmp_path: Path) -> None:
    ids = tmp_path / "ids.csv"
    big = [2**64 - 1, 2**63, 5, -3]
    ids.write_text("id\n" + "".join(f"{k}\n" for k in big))
    out = tmp_path / "o.csv"
    ok(arrow, "route", topo["int"], ids, "-o", out)
    r = _router(topo["int"])
    assert out.read_text().splitlines()[1:] == [f"{k},{r.route(k)}" for k in big]


@pytest.mark.parametrize("arrow", ARROW)
def test_delimiters(arrow: str, topo: dict[str, Path], tmp_path: Path) -> None:
    r = _router(topo["str"])
    semi = tmp_path / "semi.csv"
    semi.write_text("id;name\nu1;a\nu2;b\n")
    out = tmp_path / "o.csv"
    ok(arrow, "route", topo["str"], semi, "-o", out)
    assert out.read_text().splitlines() == ["id;name;shard", f"u1;a;{r.route('u1')}", f"u2;b;{r.route('u2')}"]
    one = tmp_path / "one.csv"
    one.write_text("id\nu1;a\n")
    fails(arrow, "route", topo["str"], one, "-o", out, match="the delimiter of semicolon-separated files")
    ok(arrow, "route", topo["str"], one, "-o", out, "--delimiter", ",")
    assert out.read_text().splitlines()[1] == f"u1;a,{r.route('u1;a')}"


@pytest.mark.parametrize("arrow", ARROW)
def test_bom_and_spaces_in_header(arrow: str, topo: dict[str, Path], tmp_path: Path) -> None:
    ids = tmp_path / "ids.csv"
    ids.write_bytes("\ufeff user_id , name\n1,a\n".encode())
    out = tmp_path / "o.csv"
    ok(arrow, "route", topo["int"], ids, "--column", "user_id", "-o", out)
    assert out.read_text().splitlines()[1] == f"1,a,{_router(topo['int']).route(1)}"


def test_bom_and_spaces_same_in_parquet(topo: dict[str, Path], tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    p = tmp_path / "ids.parquet"
    pq.write_table(pa.table({"\ufeff user_id ": pa.array([1, 2], pa.int64())}), p)
    out = tmp_path / "o.csv"
    ok("with", "route", topo["int"], p, "--column", "user_id", "-o", out)
    assert out.read_text().splitlines()[0] == "user_id,shard"


# -------------------------------------------------------------- 8: the tagline


@pytest.mark.parametrize("arrow", ["without"])
def test_route_key_explain_and_pipes(arrow: str, topo: dict[str, Path], tmp_path: Path) -> None:
    r = _router(topo["str"])
    p = ok(arrow, "route", topo["str"], "--key", "user-42", "--key", "007")
    assert p.stdout.split()[-4:] == ["user-42", r.route("user-42"), "007", r.route("007")]
    p = ok(arrow, "route", topo["str"], "--key", "user-42", "--explain")
    h = r.hasher("user-42")
    assert f"{h:#018x}" in p.stdout and "version 1" in p.stdout and "bucket" in p.stdout
    p = ok(arrow, "route", topo["str"], "-", "-o", "-", stdin="a\nb\n")
    assert p.stdout.splitlines() == ["id,shard", f"a,{r.route('a')}", f"b,{r.route('b')}"]


# ----------------------------------------------------------------- 9: topology


@pytest.mark.parametrize("strategy,extra", [
    ("redis_cluster", []), ("vitess", []), ("citus", ["--pg-type", "bigint"]), ("ketama", []),
    ("cassandra_token", []), ("postgres_hash_partition", []), ("mongo_hashed", []),
    ("range", ["--splits", "100,200", "--key-type", "int"]), ("maglev", []), ("buckets", ["--buckets", "64"]),
])
def test_topology_new_every_type(strategy: str, extra: list[str], tmp_path: Path) -> None:
    shards = "-80,80-" if strategy == "vitess" else "a,b,c"
    if strategy == "range":
        shards = "a,b,c"
    out = tmp_path / "t.json"
    ok("without", "topology", "new", strategy, f"--shards={shards}", *extra, "-o", out)
    r = _router(out)
    assert r.type_name == {"buckets": "bucket"}.get(strategy, strategy)
    show = ok("without", "topology", "show", out).stdout
    assert "owned share" in show
    if strategy not in ("maglev", "buckets", "range"):
        assert "xxh3_64" not in show


def test_topology_show_real_ownership(tmp_path: Path) -> None:
    out = tmp_path / "ring.json"
    ok("without", "topology", "new", "ring", "--shards", "a,b", "--vnodes", "4", "-o", out)
    show = ok("without", "topology", "show", out).stdout
    r = _router(out)
    from shardhash.plan import _ranges_of

    own = {s: 0 for s in r.shards}
    for lo, hi, i in present(_ranges_of(r)):
        own[r.shards[i]] += hi - lo + 1
    line = next(x for x in show.splitlines() if x.startswith("a "))
    assert f"{own['a'] / 2**64:.4f}" in line and "ranges" in line


def test_topology_options_that_do_not_apply_are_errors(tmp_path: Path) -> None:
    fails("without", "topology", "new", "jump", "--shards", "a,b", "--shard-weights", "a=2",
          match="--shard-weights does not apply to jump")
    fails("without", "topology", "new", "jump", "--shards", "a,b", "--seed", str(2**64),
          match="out of range")
    fails("without", "topology", "new", "redis_cluster", "--shards", "a,b", "--seed", "3",
          match="do not apply")


# -------------------------------------------------------------- 10-12: plans


def test_remove_on_modulo_warns(tmp_path: Path) -> None:
    t = tmp_path / "m.json"
    t.write_text(routing.ModuloRouter(list("abcde")).to_json())
    p = ok("without", "topology", "remove", t, "--shards", "b", "-o", tmp_path / "m2.json")
    assert "warning" in p.stderr and "rendezvous" in p.stderr and "memento" in p.stderr


def test_remove_a_middle_shard_of_jump_moves_only_its_keys(tmp_path: Path) -> None:
    t = tmp_path / "j.json"
    t.write_text(routing.JumpRouter(list("abcde")).to_json())
    p = ok("without", "topology", "remove", t, "--shards", "b", "-o", tmp_path / "j2.json")
    assert "warning" not in p.stderr
    new = routing.load_router((tmp_path / "j2.json").read_text(encoding="utf-8"))
    assert new.type_name == "memento" and new.shards == tuple("acde")
    old = routing.JumpRouter(list("abcde"))
    keys = list(range(20000))
    before = [old.route(k) for k in keys]
    after = [new.route(k) for k in keys]
    moved = [b for b, a in zip(before, after) if a != b]
    assert set(moved) == {"b"} and len(moved) == before.count("b")
    # and back: adding a shard restores the removed bucket, so every key returns
    p = ok("without", "topology", "add", tmp_path / "j2.json", "--shards", "f", "-o", tmp_path / "j3.json")
    back = routing.load_router((tmp_path / "j3.json").read_text(encoding="utf-8"))
    assert back.type_name == "jump" and back.shards == tuple("afcde")
    assert [back.route(k) for k in keys] == [{"b": "f"}.get(s, s) for s in before]


def test_unrelated_topologies_and_weighted_balance(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    a.write_text(routing.RendezvousRouter(["x", "y"]).to_json())
    b.write_text(routing.RendezvousRouter(["p", "q"]).to_json())
    ids = tmp_path / "ids.txt"
    ids.write_text("".join(f"{i}\n" for i in range(2000)))
    p = ok("without", "plan", a, b, "--ids", ids, "--id-type", "int", "--json")
    assert any("no shard in common" in w for w in json.loads(p.stdout)["warnings"])
    w = tmp_path / "w.json"
    w.write_text(routing.RendezvousRouter(["a", "b"], weights={"a": 1, "b": 2}).to_json())
    p = ok("without", "plan", w, w, "--ids", ids, "--id-type", "int", "--json")
    bal = json.loads(p.stdout)["balance"]["after"]
    assert abs(bal["max_load_over_target"] - 1) < 0.1


def test_plan_json_same_keys_with_and_without_ids(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    a.write_text(routing.JumpRouter(list("abcd")).to_json())
    b.write_text(routing.JumpRouter(list("abcde"), version=2).to_json())
    ids = tmp_path / "ids.txt"
    ids.write_text("1\n2\n")
    k1 = set(json.loads(ok("without", "plan", a, b, "--json").stdout))
    k2 = set(json.loads(ok("without", "plan", a, b, "--json", "--ids", ids, "--id-type", "int").stdout))
    assert k1 == k2


def test_plot_readable_at_5_32_and_1000_shards(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from PIL import Image

    ids = tmp_path / "ids.npy"
    np.save(ids, np.arange(20_000, dtype=np.int64))
    for n in (5, 32, 1000):
        a, b = tmp_path / f"a{n}.json", tmp_path / f"b{n}.json"
        a.write_text(routing.RingRouter([f"s{i}" for i in range(n - 1)], vnodes=8).to_json())
        b.write_text(routing.RingRouter([f"s{i}" for i in range(n)], vnodes=8,
                                        weights={"s0": 2.0}, version=2).to_json())
        png = tmp_path / f"p{n}.png"
        ok("without", "plan", a, b, "--ids", ids, "--plot", png, "-q")
        w, h = Image.open(png).size
        # Many shards: load and matrix stacked, the matrix in blocks of shards.
        assert (h >= 1000) == (n > 60), (n, w, h)
    fails("without", "plan", a, b, "--ids", ids, "--plot", ids, match="is the ids file itself")


# ---------------------------------------------------------- 15-16: presentation


def test_error_messages(topo: dict[str, Path]) -> None:
    e = fails("without", "route", topo["int"], "--frobnicate", match="unknown option --frobnicate")
    assert e.count("shardhash") == 2  # "shardhash: error: route: ... (see shardhash route --help)"
    assert "error: shardhash" not in e


def test_route_output_format_explained(topo: dict[str, Path], tmp_path: Path) -> None:
    ids = tmp_path / "ids.txt"
    ids.write_text("1\n")
    fails("without", "route", topo["int"], ids, "-o", tmp_path / "x.json", match="route writes CSV")


def test_fingerprint_mismatch_and_fix(tmp_path: Path) -> None:
    t = tmp_path / "t.json"
    doc = json.loads(routing.JumpRouter(["a", "b"]).to_json())
    doc["version"] = 9
    t.write_text(json.dumps(doc))
    fails("without", "topology", "show", t, match="validate --fix")
    ok("without", "topology", "validate", "--fix", t)
    assert _router(t).version == 9
    p = ok("without", "topology", "validate", t, "--json")
    assert p.stdout.strip() == _router(t).to_json()


def test_help_states_defaults() -> None:
    p = ok("without", "route", "--help")
    assert "default: shard" in p.stdout and "--no-header" in p.stdout


def test_analyze_integers_and_hot_keys(tmp_path: Path) -> None:
    ids = tmp_path / "ids.txt"
    ids.write_text("hot\n" * 50 + "".join(f"k{i}\n" for i in range(200)))
    out = json.loads(ok("without", "analyze", ids, "--capacity", "16", "--json").stdout)
    assert [h["key"] for h in out["hot_keys"]] == ["hot"]
    assert all(isinstance(h["count_at_least"], int) for h in out["hot_keys"])
    assert isinstance(out["rows"], int)


# ------------------------------------------------------------- the "done when"


def test_route_big_csv_round_trips(topo: dict[str, Path], tmp_path: Path) -> None:
    n = 30_000
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 10**12, size=n)
    ids = tmp_path / "big.csv"
    lines = ["id,name,score\n"] + [f"{k:015d},name {i},{i * 0.5}\n" for i, k in enumerate(keys.tolist())]
    ids.write_text("".join(lines))
    out = tmp_path / "o.csv"
    ok("without", "route", topo["str"], ids, "-o", out, "-q")
    got = out.read_text().splitlines(keepends=True)
    assert len(got) == n + 1
    r = _router(topo["str"])
    want = r.route_many(np.array([ln.split(",")[0] for ln in lines[1:]], dtype=object))
    for i in (0, 1, n // 2, n - 1):
        assert got[i + 1] == lines[i + 1][:-1] + "," + r.shards[want[i]] + "\n"
    assert [g.rsplit(",", 1)[0] + "\n" for g in got] == [lines[0][:-1] + "\n"] + lines[1:]


# ------------------------------------------------------------ 13: progress


class _TTY:
    """A stderr that says it is a terminal and keeps what is written."""

    def __init__(self) -> None:
        import io

        self.buf = io.StringIO()

    def isatty(self) -> bool:
        return True

    def write(self, s: str) -> int:
        return self.buf.write(s)

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        raise OSError("no file descriptor")


def test_progress_shows_totals_rate_and_eta(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("rich")
    from shardhash import cli

    ids = tmp_path / "ids.csv"
    ids.write_text("id\n" + "".join(f"user-{i}\n" for i in range(200_000)))
    tty = _TTY()
    monkeypatch.setattr(sys, "stderr", tty)
    monkeypatch.setenv("COLUMNS", "160")
    assert cli.main(["analyze", str(ids), "--id-type", "str", "--chunk-size", "20000"]) == 0
    text = tty.buf.getvalue()
    size = ids.stat().st_size
    assert f"/ {size:,} bytes" in text  # the file's size is the known total
    assert "bytes/s" in text


def test_demo_progress_names_each_stage() -> None:
    from shardhash.cli import run_demo

    stages: list[str] = []
    run_demo(2000, progress=lambda n, stage=None: stages.append(stage) if stage else None)
    assert stages == [f"{s} ({k}/6)" for k, s in
                      enumerate(["modulo", "jump", "ring", "buckets", "rendezvous", "maglev"], 1)]


@pytest.mark.parametrize("arrow", ARROW)
def test_plan_moves_error_midway_leaves_no_partial_output(arrow: str, tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(routing.JumpRouter(list("abcd")).with_key_type("int").to_json())
    b.write_text(routing.JumpRouter(list("abcde"), version=2).with_key_type("int").to_json())
    ids = tmp_path / "ids.txt"
    ids.write_text("".join(f"{i}\n" for i in range(300)) + "bad\n")
    moves = tmp_path / "moves.csv"
    moves.write_text("old moves\n")
    fails(arrow, "plan", a, b, "--ids", ids, "--moves", moves, "--chunk-size", "100",
          match="line 301: 'bad' is not an integer id")
    assert moves.read_text() == "old moves\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json", "ids.txt", "moves.csv"]


def test_route_parquet_keeps_every_column(topo: dict[str, Path], tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    p = tmp_path / "ids.parquet"
    t = pa.table({"user": pa.array([2**64 - 1, 5, 2**63], pa.uint64()), "name": ["x", "y", "z"],
                  "score": [1.5, 2.5, 3.5]})
    pq.write_table(t, p)
    out = tmp_path / "o.parquet"
    ok("with", "route", topo["int"], p, "-o", out)
    got = pq.read_table(out)
    r = _router(topo["int"])
    assert got.column_names == ["user", "name", "score", "shard"]
    assert got.column("user").to_pylist() == t.column("user").to_pylist()
    assert got.column("score").to_pylist() == [1.5, 2.5, 3.5]
    assert got.column("shard").to_pylist() == [r.route(k) for k in t.column("user").to_pylist()]
