"""Chunked readers and writers (shardhash.io)."""

from __future__ import annotations

import csv
import gzip
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest

from shardhash import io as sio

pa = pytest.importorskip("pyarrow")
import pyarrow.csv as pcsv  # noqa: E402
import pyarrow.feather as feather  # noqa: E402
import pyarrow.ipc as ipc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from tests._support import ill_typed  # noqa: E402

IDS = np.arange(1000, 1000 + 2500, dtype=np.int64) * 7919
W = (np.arange(2500) % 13).astype(np.float64)


def _collect(reader: Iterable[sio.IdChunk]) -> tuple[list[sio.IdChunk], np.ndarray, np.ndarray | None]:
    chunks = list(reader)
    ids = np.concatenate([c.ids for c in chunks]) if chunks else np.zeros(0)
    ws: np.ndarray | None = None
    if chunks and chunks[0].weights is not None:
        ws = np.concatenate([c.weights for c in chunks])
    return chunks, ids, ws


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    table = pa.table({"user_id": IDS, "bytes": W, "name": [f"u{i}" for i in range(len(IDS))]})
    out = {}
    out["parquet"] = tmp_path / "ids.parquet"
    pq.write_table(table, out["parquet"], row_group_size=700)
    out["feather"] = tmp_path / "ids.feather"
    feather.write_feather(table, out["feather"], chunksize=900)
    out["stream"] = tmp_path / "ids.arrows"
    with pa.OSFile(str(out["stream"]), "wb") as f, ipc.new_stream(f, table.schema) as w:
        w.write_table(table, max_chunksize=600)
    out["csv"] = tmp_path / "ids.csv"
    pcsv.write_csv(table, out["csv"])
    out["npy"] = tmp_path / "ids.npy"
    np.save(out["npy"], IDS)
    out["txt"] = tmp_path / "ids.txt"
    out["txt"].write_text("\n".join(map(str, IDS.tolist())) + "\n\n")
    out["csvgz"] = tmp_path / "ids.csv.gz"
    with gzip.open(out["csvgz"], "wt") as f:
        f.write("user_id,bytes\n" + "".join(f"{i},{w}\n" for i, w in zip(IDS.tolist(), W.tolist())))
    return out


@pytest.mark.parametrize("kind", ["parquet", "feather", "stream", "csv", "csvgz"])
def test_tabular_formats_roundtrip_ids_and_weights(files: dict[str, Path], kind: str) -> None:
    r = sio.open_ids(files[kind], column="user_id", weights="bytes", chunk_size=512, id_type="int")
    chunks, ids, ws = _collect(r)
    assert all(len(c.ids) <= 512 for c in chunks)
    assert len(chunks) >= 5
    assert ids.dtype == np.int64
    np.testing.assert_array_equal(ids, IDS)
    np.testing.assert_array_equal(ws, W)


@pytest.mark.parametrize("kind", ["npy", "txt"])
def test_single_column_formats(files: dict[str, Path], kind: str) -> None:
    chunks, ids, ws = _collect(sio.open_ids(files[kind], chunk_size=1000, id_type="int"))
    assert [len(c.ids) for c in chunks] == [1000, 1000, 500]
    np.testing.assert_array_equal(ids, IDS)
    assert ws is None


def test_total_rows_known_for_columnar_formats(files: dict[str, Path]) -> None:
    assert sio.open_ids(files["parquet"]).total_rows == len(IDS)
    assert sio.open_ids(files["feather"]).total_rows == len(IDS)
    assert sio.open_ids(files["npy"]).total_rows == len(IDS)
    assert sio.open_ids(files["csv"], id_type="int").total_rows is None


def test_default_column_is_first_non_weight_column(files: dict[str, Path]) -> None:
    r = sio.open_ids(files["parquet"], weights="user_id")
    assert r.column == "bytes" or r.column == "name"
    assert sio.open_ids(files["parquet"]).column == "user_id"


def test_string_ids(files: dict[str, Path]) -> None:
    chunks, ids, _ = _collect(sio.open_ids(files["parquet"], column="name", chunk_size=999))
    assert ids.dtype == object
    assert ids[0] == "u0" and ids[-1] == f"u{len(IDS) - 1}"


def test_npy_is_memory_mapped_and_chunks_are_views(files: dict[str, Path]) -> None:
    r = sio.open_ids(files["npy"], chunk_size=100)
    first = next(iter(r))
    # A chunk of a memory-mapped file does not own its data.
    assert not first.ids.flags.owndata


def test_text_ids_parsed_by_the_declared_type_never_guessed(tmp_path: Path) -> None:
    p = tmp_path / "mixed.txt"
    p.write_text("1\n2\n3\nabc\n")
    with pytest.raises(ValueError, match=r"line 4: 'abc' is not an integer"):
        list(sio.read_ids(p, chunk_size=3, id_type="int"))
    # As text, everything is a string, including the digits.
    ids = np.concatenate([c.ids for c in sio.read_ids(p, chunk_size=3, id_type="str")])
    assert ids.tolist() == ["1", "2", "3", "abc"]
    # No key type, no guess.
    with pytest.raises(ValueError, match="key type of the ids is not known"):
        sio.open_ids(p)
    with pytest.raises(ValueError, match="never guessed"):
        sio.open_ids(p, id_type="auto")


def test_uint64_ids_in_text(tmp_path: Path) -> None:
    p = tmp_path / "big.txt"
    p.write_text(f"{2**64 - 1}\n{2**63}\n")
    ids = next(iter(sio.read_ids(p, id_type="int"))).ids
    assert ids.dtype == np.uint64 and ids.tolist() == [2**64 - 1, 2**63]


def test_csv_matches_parquet(files: dict[str, Path]) -> None:
    r = sio.open_ids(files["csv"], column="user_id", weights="bytes", chunk_size=400, id_type="int")
    _, ids_a, w_a = _collect(r)
    r2 = sio.open_ids(files["parquet"], column="user_id", weights="bytes", chunk_size=400)
    _, ids_b, w_b = _collect(r2)
    np.testing.assert_array_equal(ids_a, ids_b)
    np.testing.assert_array_equal(w_a, w_b)


# ------------------------------------------------------------------ errors


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file"):
        sio.open_ids(tmp_path / "nope.parquet")


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        sio.open_ids(tmp_path)


@pytest.mark.parametrize("kind", ["parquet", "feather", "csv"])
def test_wrong_column(files: dict[str, Path], kind: str) -> None:
    with pytest.raises(ValueError, match=r"no column 'nope'; columns are 'user_id', 'bytes', 'name'"):
        sio.open_ids(files[kind], column="nope", id_type="int")
    with pytest.raises(ValueError, match=r"no weights column 'nope'"):
        sio.open_ids(files[kind], weights="nope", id_type="int")


def test_weights_column_must_be_numeric(files: dict[str, Path]) -> None:
    r = sio.open_ids(files["parquet"], weights="name")
    with pytest.raises(ValueError, match=r"weights column 'name' has type string"):
        list(r)


def test_bad_weight_value_in_csv(tmp_path: Path) -> None:
    p = tmp_path / "w.csv"
    p.write_text("id,bytes\n1,10\n2,-5\n")
    with pytest.raises(ValueError, match=r"line 3: weight -5.0"):
        list(sio.read_ids(p, weights="bytes", id_type="int"))


@pytest.mark.parametrize("name", ["bad.parquet", "bad.feather", "bad.npy"])
def test_corrupt_binary_files(tmp_path: Path, name: str) -> None:
    p = tmp_path / name
    p.write_bytes(b"this is not what the extension promises" * 10)
    with pytest.raises(ValueError, match="not a readable"):
        sio.open_ids(p)


def test_npy_wrong_shape_and_dtype(tmp_path: Path) -> None:
    p = tmp_path / "two.npy"
    np.save(p, np.zeros((3, 2), dtype=np.int64))
    with pytest.raises(ValueError, match=r"1-D"):
        sio.open_ids(p)
    np.save(p, np.zeros(3))
    with pytest.raises(ValueError, match=r"dtype float64"):
        sio.open_ids(p)


def test_single_column_formats_reject_columns(files: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match="single unnamed column"):
        sio.open_ids(files["npy"], column="x")
    with pytest.raises(ValueError, match="weights need CSV"):
        sio.open_ids(files["txt"], weights="x", id_type="int")


def test_float_ids_rejected(tmp_path: Path) -> None:
    p = tmp_path / "f.parquet"
    pq.write_table(pa.table({"id": [1.5, 2.5]}), p)
    with pytest.raises(ValueError, match="ids must be integers, strings or bytes"):
        list(sio.read_ids(p))


def test_null_id_rejected(tmp_path: Path) -> None:
    p = tmp_path / "n.parquet"
    pq.write_table(pa.table({"id": pa.array([1, None, 3], pa.int64())}), p)
    with pytest.raises(ValueError, match="missing id"):
        list(sio.read_ids(p))


def test_ragged_csv(tmp_path: Path) -> None:
    p = tmp_path / "r.csv"
    p.write_text("a,b\n1,2\n3\n")
    with pytest.raises(ValueError, match="line 3: expected 2 fields, got 1"):
        list(sio.read_ids(p, id_type="int"))


def test_bad_chunk_size(files: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match="chunk_size"):
        sio.open_ids(files["npy"], chunk_size=0)
    with pytest.raises(TypeError, match="chunk_size"):
        sio.open_ids(files["npy"], chunk_size=ill_typed(1.5))


# ------------------------------------------------------------------ writers


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_chunk_writer_roundtrip(tmp_path: Path, suffix: str) -> None:
    p = tmp_path / f"out.{suffix}"
    shards = ["s0", "s1", "s2"]
    idx = (np.arange(len(IDS)) % 3).astype(np.int32)
    with sio.ChunkWriter(p) as w:
        for s in range(0, len(IDS), 1000):
            w.write({"user_id": IDS[s : s + 1000], "shard": (idx[s : s + 1000], shards)})
    assert w.rows == len(IDS)
    if suffix == "parquet":
        t = pq.read_table(p)
        assert t.column("user_id").to_pylist() == IDS.tolist()
        assert t.column("shard").to_pylist() == [shards[i] for i in idx]
        assert pa.types.is_dictionary(t.schema.field("shard").type)
    else:
        rows = list(csv.reader(open(p)))
        assert rows[0] == ["user_id", "shard"]
        assert [int(r[0]) for r in rows[1:]] == IDS.tolist()
        assert [r[1] for r in rows[1:]] == [shards[i] for i in idx]


def test_chunk_writer_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="can only write Parquet"):
        sio.ChunkWriter(tmp_path / "x.npy")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        sio.ChunkWriter(tmp_path / "no" / "x.csv")
    with sio.ChunkWriter(tmp_path / "x.csv") as w:
        w.write({"a": np.arange(2)})
        with pytest.raises(ValueError, match="columns changed"):
            w.write({"b": np.arange(2)})


# ---------------------------------------------------------------- iter_chunks


def test_iter_chunks_arrays_and_streams() -> None:
    out = list(sio.iter_chunks(np.arange(10), np.ones(10), chunk_size=4))
    assert [len(k) for k, _, _ in out] == [4, 4, 2]
    stream = iter([(np.arange(6), np.ones(6)), np.arange(3)])
    out = list(sio.iter_chunks(stream, chunk_size=4))
    assert [(len(k), w is None) for k, w, _ in out] == [(4, False), (2, False), (3, True)]


def test_iter_chunks_errors() -> None:
    with pytest.raises(ValueError, match="weights has 2 values but there are 3 keys"):
        list(sio.iter_chunks([1, 2, 3], [1.0, 2.0]))
    with pytest.raises(ValueError, match=r"weights\[1\] = nan"):
        list(sio.iter_chunks([1, 2], [1.0, float("nan")]))
    with pytest.raises(TypeError, match="keys must be an array-like"):
        list(sio.iter_chunks(42))


def test_an_unknown_option_is_refused_in_the_readers_own_name(files: dict[str, Path]) -> None:
    # open_ids and read_ids pass their options on to IdReader: a keyword none
    # of them takes is refused before the file is read, naming the function called
    with pytest.raises(TypeError, match=r"^open_ids\(\) got an unexpected keyword argument 'colum'$"):
        sio.open_ids(files["csv"], **ill_typed({"colum": "user_id"}))
    with pytest.raises(TypeError, match=r"^read_ids\(\) got an unexpected keyword argument 'colum'$"):
        sio.read_ids(files["csv"], **ill_typed({"colum": "user_id"}))
    r = sio.read_ids(files["csv"], column="user_id", chunk_size=7, id_type="int", weights="bytes")
    first = next(r)
    assert len(first.ids) == 7 and first.weights is not None
