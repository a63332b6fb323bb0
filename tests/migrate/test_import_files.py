"""``migrate import`` from CSV and Parquet files (``csv:PATH``, ``parquet:PATH``):
every row lands on its owner once, typed by the shards' tables (or, for a
table the import creates, by the Parquet schema and the group's key type),
resumably and verified; bad files are refused naming the file, the line and
the column; CSV needs no pyarrow."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardhash import JumpRouter
from shardhash.cli import main
from shardhash.migrate import Cluster, importer
from tests._support import oracle_missing

from ._harness import drop_cluster, make_cluster, shard_rows
from .test_import import SHARDS, N, _all, _check_placed


@pytest.fixture
def root(tmp_path: Path, backend: str) -> Iterator[Path]:
    yield tmp_path / "c"
    drop_cluster(tmp_path / "c", backend)


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        oracle_missing("pyarrow", "pip install 'shardhash[arrow]' (Parquet import sources)")
    return pyarrow


def _csv_folder(folder: Path, n: int = N) -> Path:
    """users.csv and events.csv: the rows test_import's SQLite source holds."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "users.csv").write_text("id,name,n\n" + "".join(f"{i},u{i},{i * 3}\n" for i in range(1, n + 1)))
    (folder / "events.csv").write_text("eid,user_id,payload\n"
                                       + "".join(f"{i * 7},{i},e{i}\n" for i in range(1, n + 1)))
    return folder


def _parquet_folder(folder: Path, n: int = N) -> Path:
    pa = _pyarrow()
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    ids = list(range(1, n + 1))
    pq.write_table(pa.table({"id": ids, "name": [f"u{i}" for i in ids], "n": [i * 3 for i in ids]}),
                   folder / "users.parquet", row_group_size=3000)
    pq.write_table(pa.table({"eid": [i * 7 for i in ids], "user_id": ids, "payload": [f"e{i}" for i in ids]}),
                   folder / "events.parquet")
    return folder


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_files_land_on_their_owners_typed_by_the_shards_tables(root: Path, backend: str, tmp_path: Path,
                                                              fmt: str) -> None:
    cfg = make_cluster(root, SHARDS, events=True, backend=backend)  # (the tables exist, empty, on every shard)
    folder = (_csv_folder if fmt == "csv" else _parquet_folder)(tmp_path / "files")
    cl = Cluster.load(cfg)
    try:
        rep = cl.import_from(f"{fmt}:{folder}", chunk=3000)
        assert rep.rows_read == 2 * N and rep.rows_written == 2 * N and rep.verified
        again = cl.import_from(f"{fmt}:{folder}")  # done: nothing read or written, verified again
        assert again.rows_read == 0 and again.rows_written == 0 and again.verified
    finally:
        cl.close()
    _check_placed(root)  # (ints as ints, text as text: the rows compare equal to the typed tuples)


def test_a_csv_import_resumes_after_a_crash(root: Path, backend: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = make_cluster(root, SHARDS, events=True, backend=backend)
    url = f"csv:{_csv_folder(tmp_path / 'files')}"
    real = importer._commit_cursor
    calls = [0]

    def crash_before_third(*a: Any) -> None:
        calls[0] += 1
        if calls[0] == 3:
            raise RuntimeError("injected crash")
        real(*a)

    monkeypatch.setattr(importer, "_commit_cursor", crash_before_third)
    cl = Cluster.load(cfg)
    try:
        with pytest.raises(RuntimeError, match="injected crash"):
            cl.import_from(url, chunk=1000)
        assert sum(len(v) for v in _all(root, "users").values()) == 3000
        monkeypatch.setattr(importer, "_commit_cursor", real)
        rep = cl.import_from(url, chunk=1000)
        assert rep.rows_read == 2 * N - 2000 and rep.rows_present == 1000 and rep.verified
    finally:
        cl.close()
    _check_placed(root)


def _bare_cluster(folder: Path, key_type: str = "int") -> Path:
    """Four empty SQLite shards (no tables) and a one-table group ``items`` keyed by ``sku``."""
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"metadata": "sqlite:meta.db", "shards": {s: {"primary": f"sqlite:{s}.db"} for s in SHARDS},
           "groups": {"items": {"router": JumpRouter(SHARDS).to_dict(), "key_type": key_type,
                                "tables": [{"name": "items", "key": "sku"}]}}}
    (folder / "cluster.json").write_text(json.dumps(doc))
    cl = Cluster.load(folder / "cluster.json")
    cl.init()
    cl.close()
    return folder / "cluster.json"


def _items(folder: Path) -> dict[Any, tuple[Any, ...]]:
    out: dict[Any, tuple[Any, ...]] = {}
    router = JumpRouter(SHARDS)
    for s in SHARDS:
        c = sqlite3.connect(folder / f"{s}.db")
        for r in c.execute("SELECT * FROM items").fetchall():
            assert router.route(r[0]) == s, (r, s)
            assert r[0] not in out
            out[r[0]] = tuple(r)
        c.close()
    return out


def test_csv_creates_a_missing_table_keyed_by_the_shard_key(tmp_path: Path) -> None:
    cfg = _bare_cluster(tmp_path / "c")
    (tmp_path / "items.csv").write_text('sku,title,price\n1,"a, b",3.5\n2,,7\n30,x,\n')
    assert main(["migrate", "import", "--config", str(cfg), "--from", f"csv:{tmp_path / 'items.csv'}", "-q"]) == 0
    # the key typed by key_type (int), the other columns text as written (an empty field: '')
    assert _items(tmp_path / "c") == {1: (1, "a, b", "3.5"), 2: (2, "", "7"), 30: (30, "x", "")}
    c = sqlite3.connect(tmp_path / "c" / "s0.db")
    info = c.execute("PRAGMA table_info(items)").fetchall()
    c.close()
    assert [(r[1], r[2], r[5]) for r in info] == [("sku", "INTEGER", 1), ("title", "TEXT", 0), ("price", "TEXT", 0)]


def test_parquet_creates_a_missing_table_typed_by_its_schema(tmp_path: Path) -> None:
    pa = _pyarrow()
    import pyarrow.parquet as pq

    cfg = _bare_cluster(tmp_path / "c", key_type="str")
    pq.write_table(pa.table({"sku": ["k1", "k2", "k3"], "qty": pa.array([1, None, -2**63], pa.int64()),
                             "price": [0.1, 5e-324, 1e308], "ok": [True, False, None],
                             "blob": [b"\x00\x01", b"", None]}), tmp_path / "items.parquet")
    cl = Cluster.load(cfg)
    try:
        rep = cl.import_from(f"parquet:{tmp_path / 'items.parquet'}")
        assert rep.rows_written == 3 and rep.verified
    finally:
        cl.close()
    got = _items(tmp_path / "c")
    assert got["k1"] == ("k1", 1, 0.1, 1, b"\x00\x01")
    assert got["k3"] == ("k3", -2**63, 1e308, None, None)
    assert got["k2"] == ("k2", None, 5e-324, 0, b"")
    # NaN and -0.0 would not arrive as they are (NULL, 0.0): refused, by row and column
    for bad, text in ((float("nan"), "nan"), (-0.0, "-0.0")):
        pq.write_table(pa.table({"sku": ["k9", "k8"], "price": [1.0, bad]}), tmp_path / "bad.parquet")
        c2 = _bare_cluster(tmp_path / f"c-{text}", key_type="str")
        cl = Cluster.load(c2)
        try:
            with pytest.raises(ValueError, match=rf"bad.parquet: row 2: column 'price': {text} \(NaN and -0.0"):
                cl.import_from(f"parquet:{tmp_path / 'bad.parquet'}")
        finally:
            cl.close()


def test_bad_files_are_refused_by_file_line_and_column(tmp_path: Path) -> None:
    cfg = make_cluster(tmp_path / "c", SHARDS, events=True)
    cl = Cluster.load(cfg)
    files = tmp_path / "f"
    try:
        with pytest.raises(ValueError, match="no such file or folder"):
            cl.import_from(f"csv:{tmp_path / 'nothing'}")
        _csv_folder(files, 10)
        with pytest.raises(ValueError, match=r"one file and the group has 2 tables \(users, events\): give a folder"):
            cl.import_from(f"csv:{files / 'users.csv'}")
        (files / "events.csv").unlink()
        with pytest.raises(ValueError, match="the folder has no events.csv"):
            cl.import_from(f"csv:{files}")
        _csv_folder(files, 10)
        (files / "users.csv").write_text("id,name,n\n1,a,1\n2,b,two\n")
        with pytest.raises(ValueError, match=r"users.csv: line 3: column 'n': 'two' is not an integer"):
            cl.import_from(f"csv:{files}")
        (files / "users.csv").write_text("id,name,n\n1,a,1\n2,b,\n")  # (an empty integer: NULL)
        with pytest.raises(ValueError, match=r"users.csv: data row 2: column 'n' is empty, and it is NOT NULL"):
            cl.import_from(f"csv:{files}")
        (files / "users.csv").write_text('id,name,n\n1,"a\nb",1\n2,b,x\n')  # (a record over two lines)
        with pytest.raises(ValueError, match=r"users.csv: data row 2: column 'n': 'x' is not an integer"):
            cl.import_from(f"csv:{files}")
        (files / "users.csv").write_text("id,name,n\n1,a,1\n2,b\n")
        with pytest.raises(ValueError, match=r"users.csv: line 3: 2 field\(s\), the header names 3"):
            cl.import_from(f"csv:{files}")
        (files / "users.csv").write_text("id,name,n\n1,a,1\n2,b,2\n1,c,3\n")
        with pytest.raises(ValueError, match=r"users.csv: data row 3: primary key 1 appears twice"):
            cl.import_from(f"csv:{files}")
        (files / "users.csv").write_text("id,name,zip\n1,a,1\n")
        with pytest.raises(ValueError, match=r"column\(s\) 'zip' are not in table 'users' on the shards"):
            cl.import_from(f"csv:{files}")
        (files / "users.csv").write_text("uid,name,n\n1,a,1\n")
        with pytest.raises(ValueError, match="no column 'id'"):
            cl.import_from(f"csv:{files}")
    finally:
        cl.close()
    assert all(not shard_rows(tmp_path / "c", s) for s in SHARDS)  # nothing written by a refused import
    auto = _bare_cluster(tmp_path / "auto", key_type="auto")
    (tmp_path / "items.csv").write_text("sku,title\n1,a\n")
    cl = Cluster.load(auto)
    try:
        with pytest.raises(ValueError, match="declares key_type 'auto'; declare key_type"):
            cl.import_from(f"csv:{tmp_path / 'items.csv'}")
    finally:
        cl.close()


def test_csv_needs_no_pyarrow_and_parquet_says_how_to_get_it(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for mod in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # (import pyarrow raises ImportError)
    cfg = _bare_cluster(tmp_path / "c")
    (tmp_path / "items.csv").write_text("sku,title\n1,a\n2,b\n")
    (tmp_path / "items.parquet").write_bytes(b"PAR1")
    cl = Cluster.load(cfg)
    try:
        assert cl.import_from(f"csv:{tmp_path / 'items.csv'}").rows_written == 2
        with pytest.raises(ValueError, match=r"needs pyarrow: pip install 'shardhash\[arrow\]'"):
            cl.import_from(f"parquet:{tmp_path / 'items.parquet'}")
    finally:
        cl.close()
    assert _items(tmp_path / "c") == {1: (1, "a"), 2: (2, "b")}
