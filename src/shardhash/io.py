"""Read ids in chunks from files of any size, and write per-key results in chunks.

Every reader yields :class:`IdChunk` tuples ``(ids, weights)`` of at most
``chunk_size`` rows, so memory stays constant however big the file is:

* ``.csv`` / ``.tsv`` (optionally ``.gz``) -- streamed with pyarrow when it is
  installed, with the standard library's :mod:`csv` otherwise;
* ``.parquet`` / ``.pq`` -- one row group batch at a time (needs pyarrow);
* ``.arrow`` / ``.feather`` / ``.ipc`` -- Arrow IPC file or stream format
  (needs pyarrow);
* ``.npy`` -- memory-mapped, sliced;
* anything else -- plain text, one id per line (blank lines skipped).

pyarrow is optional: install ``shardhash[arrow]`` for Parquet and Arrow files.

Integer ids come out as ``int64`` (or ``uint64``) arrays and text ids as
object arrays of ``str``.  The distinction matters: the integer ``42`` and the
string ``"42"`` are different keys and hash differently, so text and CSV
readers decide once per file (``id_type="auto"``: integers when the first
chunk is all integers) and never change type in the middle of a file.

>>> import numpy as np, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "ids.npy")
>>> np.save(path, np.arange(10, dtype=np.int64))
>>> [len(c.ids) for c in read_ids(path, chunk_size=4)]
[4, 4, 2]
"""

from __future__ import annotations

import csv
import gzip
import io as _stdio
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "IdChunk",
    "IdReader",
    "ChunkWriter",
    "open_ids",
    "read_ids",
    "detect_format",
    "require_pyarrow",
    "DEFAULT_CHUNK_SIZE",
    "iter_chunks",
]

DEFAULT_CHUNK_SIZE = 1 << 20

_FORMATS = ("csv", "parquet", "arrow", "npy", "text")


class IdChunk(NamedTuple):
    """One chunk of ids, with the matching weights (or ``None``)."""

    ids: np.ndarray
    weights: np.ndarray | None


def require_pyarrow(what: str) -> Any:
    """Import pyarrow or raise an ImportError naming the extra to install."""
    try:
        import pyarrow
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"{what} needs pyarrow; install it with: pip install 'shardhash[arrow]'"
        ) from exc
    return pyarrow


def detect_format(path: str | os.PathLike[str]) -> str:
    """Guess the file format from its name: csv, parquet, arrow, npy or text.

    >>> detect_format("ids.parquet"), detect_format("x.csv.gz"), detect_format("ids.txt")
    ('parquet', 'csv', 'text')
    """
    name = os.fspath(path).lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith((".csv", ".tsv")):
        return "csv"
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith((".arrow", ".feather", ".ipc", ".arrows")):
        return "arrow"
    if name.endswith(".npy"):
        return "npy"
    return "text"


def _check_chunk_size(chunk_size: int) -> int:
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int):
        raise TypeError(f"chunk_size must be an int, not {type(chunk_size).__name__}")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    return chunk_size


def _as_int_array(values: list[str], start_line: int, path: str) -> np.ndarray:
    try:
        ints = [int(v) for v in values]
    except ValueError:
        for i, v in enumerate(values):
            try:
                int(v)
            except ValueError:
                raise ValueError(
                    f"{path}: row {start_line + i}: {v!r} is not an integer id "
                    "(earlier ids were integers; read all ids as text with id_type='str' / --id-type str)"
                ) from None
        raise  # pragma: no cover
    try:
        return np.array(ints, dtype=np.int64)
    except OverflowError:
        try:
            return np.array(ints, dtype=np.uint64)
        except OverflowError:
            raise ValueError(f"{path}: integer ids must fit in 64 bits (row {start_line}...)") from None


def _looks_int(values: Sequence[str]) -> bool:
    if not values:
        return False
    for v in values:
        s = v[1:] if v[:1] in "+-" else v
        if not s.isdigit() or not s.isascii():
            return False
    return True


def _arrow_to_numpy(arr: Any, name: str, path: str) -> np.ndarray:
    """Convert one pyarrow array (or chunked array) of ids to numpy."""
    pa = require_pyarrow("reading Arrow data")
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    t = arr.type
    if arr.null_count:
        # Position of the first null, for a useful message.
        mask = arr.is_null().to_numpy(zero_copy_only=False)
        first = int(np.flatnonzero(mask)[0])
        raise ValueError(f"{path}: column {name!r} has a missing id (null) at row offset {first} of a chunk")
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_integer(t):
        dtype = np.uint64 if pa.types.is_unsigned_integer(t) and t.bit_width == 64 else np.int64
        return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=dtype)
    is_view = getattr(pa.types, "is_string_view", None)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or (is_view is not None and is_view(t)):
        return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=object)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=object)
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        raise ValueError(f"{path}: column {name!r} holds {t} values; ids must be integers, strings or bytes")
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return np.asarray(arr.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
    raise ValueError(f"{path}: column {name!r} has unsupported type {t} for ids")


def _weights_to_numpy(arr: Any, name: str, path: str) -> np.ndarray:
    pa = require_pyarrow("reading Arrow data")
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
        raise ValueError(f"{path}: weights column {name!r} has type {arr.type}; it must be numeric")
    w = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64)
    _check_weights(w, name, path)
    return w


def _check_weights(w: np.ndarray, name: str, path: str) -> None:
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{path}: weights column {name!r} has an invalid value {float(w[i])!r} at row offset {i} of a chunk (must be finite and >= 0; missing values are not allowed)")


class IdReader:
    """An iterable over the ids of one file, in chunks (see :func:`open_ids`).

    Attributes: ``path``, ``format``, ``column`` (the id column, ``None`` for
    single-column formats), ``weights_column``, ``columns`` (all column names,
    when the format has names) and ``total_rows`` (``None`` when unknown
    without reading the whole file, e.g. for CSV and text).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        column: str | None = None,
        weights: str | None = None,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        format: str | None = None,
        id_type: str = "auto",
    ) -> None:
        self.path = os.fspath(path)
        self.chunk_size = _check_chunk_size(chunk_size)
        fmt = format or detect_format(self.path)
        if fmt not in _FORMATS:
            raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(_FORMATS)}")
        if id_type not in ("auto", "int", "str"):
            raise ValueError(f"id_type must be 'auto', 'int' or 'str', not {id_type!r}")
        self.format = fmt
        self.id_type = id_type
        self.weights_column = weights
        if not os.path.exists(self.path):
            raise FileNotFoundError(f"{self.path}: no such file")
        if os.path.isdir(self.path):
            raise IsADirectoryError(f"{self.path}: is a directory, not an ids file")
        self.columns: list[str] | None = None
        self.total_rows: int | None = None
        self._mode: str | None = None
        self.column = column
        getattr(self, f"_open_{fmt}")()

    # -- metadata ---------------------------------------------------------
    def _resolve_column(self, names: list[str]) -> None:
        self.columns = names
        if not names:
            raise ValueError(f"{self.path}: the file has no columns")
        if self.column is None:
            candidates = [n for n in names if n != self.weights_column]
            if not candidates:
                raise ValueError(f"{self.path}: no id column (only the weights column {self.weights_column!r})")
            self.column = candidates[0]
        if self.column not in names:
            raise ValueError(f"{self.path}: no column {self.column!r}; columns are {', '.join(map(repr, names))}")
        if self.weights_column is not None and self.weights_column not in names:
            raise ValueError(
                f"{self.path}: no weights column {self.weights_column!r}; columns are {', '.join(map(repr, names))}"
            )

    def _no_columns(self) -> None:
        if self.column is not None:
            raise ValueError(f"{self.path}: {self.format} files have a single unnamed column; do not pass a column")
        if self.weights_column is not None:
            raise ValueError(f"{self.path}: {self.format} files hold ids only; weights need CSV, Parquet or Arrow")

    def _open_npy(self) -> None:
        self._no_columns()
        try:
            arr = np.load(self.path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise ValueError(f"{self.path}: not a readable .npy file ({exc})") from None
        if arr.ndim != 1:
            raise ValueError(f"{self.path}: expected a 1-D array of ids, got shape {arr.shape}")
        if arr.dtype.kind not in "iuUS":
            raise ValueError(f"{self.path}: ids must be integers, str or bytes, not dtype {arr.dtype}")
        self._npy = arr
        self.total_rows = int(arr.shape[0])

    def _open_text(self) -> None:
        self._no_columns()
        self._check_readable_text()

    def _check_readable_text(self) -> None:
        with self._open_textfile() as f:
            try:
                f.read(4096)
            except (UnicodeDecodeError, OSError, EOFError) as exc:
                raise ValueError(f"{self.path}: not a readable text file ({exc})") from None

    def _open_textfile(self) -> Any:
        if self.path.lower().endswith(".gz"):
            return _stdio.TextIOWrapper(gzip.open(self.path, "rb"), encoding="utf-8", newline="")
        return open(self.path, encoding="utf-8", newline="")

    def _open_csv(self) -> None:
        self._delim = "\t" if self.path.lower().removesuffix(".gz").endswith(".tsv") else ","
        with self._open_textfile() as f:
            try:
                header = next(csv.reader(f, delimiter=self._delim))
            except StopIteration:
                raise ValueError(f"{self.path}: empty CSV file (no header row)") from None
            except (UnicodeDecodeError, csv.Error, OSError, EOFError) as exc:
                raise ValueError(f"{self.path}: not a readable CSV file ({exc})") from None
        self._resolve_column([h.strip() for h in header])

    def _open_parquet(self) -> None:
        require_pyarrow("reading Parquet")
        import pyarrow.parquet as pq
        import pyarrow as pa

        try:
            self._pf = pq.ParquetFile(self.path, pre_buffer=False)
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"{self.path}: not a readable Parquet file ({exc})") from None
        self._resolve_column(list(self._pf.schema_arrow.names))
        self.total_rows = int(self._pf.metadata.num_rows)

    def _open_arrow(self) -> None:
        pa = require_pyarrow("reading Arrow IPC / Feather")
        import pyarrow.ipc as ipc

        self._ipc_kind = None
        try:
            with pa.memory_map(self.path, "r") as src:
                r = ipc.open_file(src)
                schema = r.schema
                self.total_rows = sum(r.get_batch(i).num_rows for i in range(r.num_record_batches))
            self._ipc_kind = "file"
        except (pa.ArrowException, OSError):
            try:
                with pa.OSFile(self.path, "rb") as src:
                    schema = ipc.open_stream(src).schema
                self._ipc_kind = "stream"
            except (pa.ArrowException, OSError) as exc:
                raise ValueError(f"{self.path}: not a readable Arrow IPC / Feather file ({exc})") from None
        self._resolve_column(list(schema.names))

    # -- iteration --------------------------------------------------------
    def __iter__(self) -> Iterator[IdChunk]:
        it: Iterator[IdChunk] = getattr(self, f"_iter_{self.format}")()
        return it

    def _iter_npy(self) -> Iterator[IdChunk]:
        arr = self._npy
        n = arr.shape[0]
        for s in range(0, n, self.chunk_size):
            part = arr[s : s + self.chunk_size]
            if part.dtype.kind in "US":
                yield IdChunk(np.asarray(part, dtype=object), None)
            else:
                yield IdChunk(np.ascontiguousarray(part), None)

    def _typed(self, values: list[str], row0: int) -> np.ndarray:
        if self._mode is None:
            if self.id_type == "str":
                self._mode = "str"
            elif self.id_type == "int":
                self._mode = "int"
            else:
                self._mode = "int" if _looks_int(values) else "str"
        if self._mode == "int":
            return _as_int_array(values, row0, self.path)
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        return arr

    def _iter_text(self) -> Iterator[IdChunk]:
        self._mode = None
        buf: list[str] = []
        row0 = 1
        line_no = 0
        with self._open_textfile() as f:
            for line in f:
                line_no += 1
                s = line.strip()
                if not s:
                    continue
                if not buf:
                    row0 = line_no
                buf.append(s)
                if len(buf) >= self.chunk_size:
                    yield IdChunk(self._typed(buf, row0), None)
                    buf = []
        if buf:
            yield IdChunk(self._typed(buf, row0), None)

    def _iter_csv(self) -> Iterator[IdChunk]:
        try:
            import pyarrow  # noqa: F401
            import pyarrow.csv  # noqa: F401
        except ImportError:
            return self._iter_csv_stdlib()
        return self._iter_csv_arrow()

    def _iter_csv_arrow(self) -> Iterator[IdChunk]:
        import pyarrow as pa
        import pyarrow.csv as pcsv

        types: dict[str, Any] = {}
        if self.id_type == "str":
            types[self.column or ""] = pa.string()
        elif self.id_type == "int":
            types[self.column or ""] = pa.int64()
        read = pcsv.ReadOptions(block_size=max(1 << 16, min(1 << 26, self.chunk_size * 16)))
        parse = pcsv.ParseOptions(delimiter=self._delim)
        convert = pcsv.ConvertOptions(include_columns=self._columns_wanted(), column_types=types,
                                      strings_can_be_null=False, quoted_strings_can_be_null=False)
        try:
            reader = pcsv.open_csv(self.path, read_options=read, parse_options=parse, convert_options=convert)
            for batch in reader:
                yield from self._split(batch)
        except (pa.ArrowException, OSError) as exc:
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ValueError(f"{self.path}: error while reading CSV ({msg})") from None

    def _iter_csv_stdlib(self) -> Iterator[IdChunk]:
        self._mode = None
        assert self.columns is not None
        ci = self.columns.index(self.column or "")
        wi = self.columns.index(self.weights_column) if self.weights_column else None
        ids: list[str] = []
        ws: list[str] = []
        row0 = 2
        with self._open_textfile() as f:
            reader = csv.reader(f, delimiter=self._delim)
            next(reader, None)
            try:
                for row in reader:
                    if not row:
                        continue
                    if len(row) != len(self.columns):
                        raise ValueError(
                            f"{self.path}: line {reader.line_num}: expected {len(self.columns)} fields, got {len(row)}"
                        )
                    if not ids:
                        row0 = reader.line_num
                    v = row[ci].strip()
                    if v == "":
                        raise ValueError(f"{self.path}: line {reader.line_num}: empty id in column {self.column!r}")
                    ids.append(v)
                    if wi is not None:
                        ws.append(row[wi])
                    if len(ids) >= self.chunk_size:
                        yield self._csv_chunk(ids, ws, row0)
                        ids, ws = [], []
            except csv.Error as exc:
                raise ValueError(f"{self.path}: line {reader.line_num}: malformed CSV ({exc})") from None
        if ids:
            yield self._csv_chunk(ids, ws, row0)

    def _csv_chunk(self, ids: list[str], ws: list[str], row0: int) -> IdChunk:
        arr = self._typed(ids, row0)
        w = None
        if self.weights_column is not None:
            try:
                w = np.array([float(x) for x in ws], dtype=np.float64)
            except ValueError:
                for i, x in enumerate(ws):
                    try:
                        float(x)
                    except ValueError:
                        raise ValueError(
                            f"{self.path}: line {row0 + i}: weight {x!r} in column {self.weights_column!r} is not a number"
                        ) from None
                raise  # pragma: no cover
            _check_weights(w, self.weights_column, self.path)
        return IdChunk(arr, w)

    def _columns_wanted(self) -> list[str]:
        cols = [self.column]
        if self.weights_column is not None and self.weights_column != self.column:
            cols.append(self.weights_column)
        return [c for c in cols if c is not None]

    def _batch_chunk(self, batch: Any) -> IdChunk:
        ids = _arrow_to_numpy(batch.column(self.column), self.column or "", self.path)
        w = None
        if self.weights_column is not None:
            w = _weights_to_numpy(batch.column(self.weights_column), self.weights_column, self.path)
        return IdChunk(ids, w)

    def _iter_parquet(self) -> Iterator[IdChunk]:
        import pyarrow as pa

        try:
            for batch in self._pf.iter_batches(batch_size=self.chunk_size, columns=self._columns_wanted()):
                if batch.num_rows:
                    yield self._batch_chunk(batch)
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"{self.path}: error while reading Parquet ({exc})") from None

    def _iter_arrow(self) -> Iterator[IdChunk]:
        import pyarrow as pa
        import pyarrow.ipc as ipc

        try:
            if self._ipc_kind == "file":
                with pa.memory_map(self.path, "r") as src:
                    r = ipc.open_file(src)
                    for i in range(r.num_record_batches):
                        yield from self._split(r.get_batch(i))
            else:
                with pa.OSFile(self.path, "rb") as src:
                    for batch in ipc.open_stream(src):
                        yield from self._split(batch)
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"{self.path}: error while reading Arrow data ({exc})") from None

    def _split(self, batch: Any) -> Iterator[IdChunk]:
        for s in range(0, batch.num_rows, self.chunk_size):
            yield self._batch_chunk(batch.slice(s, self.chunk_size))


def open_ids(
    path: str | os.PathLike[str],
    *,
    column: str | None = None,
    weights: str | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    format: str | None = None,
    id_type: str = "auto",
) -> IdReader:
    """Open an ids file for chunked reading; checks the file and columns now.

    ``column`` names the id column (default: the first column that is not
    ``weights``); ``weights`` names an optional numeric column (bytes,
    requests...).  Raises FileNotFoundError, ValueError (bad column, corrupt
    file) or ImportError (pyarrow missing for Parquet/Arrow) before any chunk
    is read.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "ids.csv")
    >>> _ = open(p, "w").write("user_id,bytes\\n7,100\\n8,250\\n")
    >>> r = open_ids(p, weights="bytes")
    >>> r.column, [c.ids.tolist() for c in r], [c.weights.tolist() for c in r]
    ('user_id', [[7, 8]], [[100.0, 250.0]])
    """
    return IdReader(path, column=column, weights=weights, chunk_size=chunk_size, format=format, id_type=id_type)


def read_ids(
    path: str | os.PathLike[str],
    *,
    column: str | None = None,
    weights: str | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    format: str | None = None,
    id_type: str = "auto",
) -> Iterator[IdChunk]:
    """Iterate over ``(ids, weights)`` chunks of a file (see :func:`open_ids`).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "ids.txt")
    >>> _ = open(p, "w").write("alice\\nbob\\n\\ncarol\\n")
    >>> [c.ids.tolist() for c in read_ids(p, chunk_size=2)]
    [['alice', 'bob'], ['carol']]
    """
    return iter(open_ids(path, column=column, weights=weights, chunk_size=chunk_size, format=format, id_type=id_type))


class ChunkWriter:
    """Write columns to Parquet or CSV one chunk at a time.

    Use as a context manager; each :meth:`write` call appends rows.  Columns
    may be numpy arrays (numbers or objects) or, for a string column with few
    distinct values, a pair ``(codes, labels)`` written as a dictionary column
    in Parquet (the shard column costs one small integer per row).

    >>> import numpy as np, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "out.csv")
    >>> with ChunkWriter(p) as w:
    ...     w.write({"id": np.array([1, 2]), "shard": (np.array([0, 1], np.int32), ["a", "b"])})
    >>> open(p).read().splitlines()
    ['id,shard', '1,a', '2,b']
    """

    def __init__(self, path: str | os.PathLike[str], *, format: str | None = None) -> None:
        self.path = os.fspath(path)
        fmt = format or detect_format(self.path)
        if fmt not in ("parquet", "csv"):
            raise ValueError(f"{self.path}: can only write Parquet (.parquet) or CSV (.csv), not {fmt}")
        parent = Path(self.path).parent
        if not parent.exists():
            raise FileNotFoundError(f"{self.path}: directory {str(parent)!r} does not exist")
        self.format = fmt
        self.rows = 0
        self._writer: Any = None
        self._file: Any = None
        self._names: list[str] | None = None
        self._empty: Any = None
        if fmt == "parquet":
            require_pyarrow("writing Parquet")

    def __enter__(self) -> ChunkWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, columns: Mapping[str, Any]) -> None:
        names = list(columns)
        if self._names is None:
            self._names = names
        elif names != self._names:
            raise ValueError(f"columns changed between chunks: {self._names} then {names}")
        if self.format == "parquet":
            self._write_parquet(columns)
        else:
            self._write_csv(columns)

    def _write_parquet(self, columns: Mapping[str, Any]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        arrays = []
        n = None
        for name, col in columns.items():
            if isinstance(col, tuple):
                codes, labels = col
                arr = pa.DictionaryArray.from_arrays(pa.array(np.asarray(codes, dtype=np.int32)), pa.array(list(labels), pa.string()))
            else:
                col = np.asarray(col)
                arr = pa.array(col.tolist() if col.dtype == object else col)
            if n is None:
                n = len(arr)
            elif len(arr) != n:
                raise ValueError(f"column {name!r} has {len(arr)} rows, expected {n}")
            arrays.append(arr)
        table = pa.Table.from_arrays(arrays, names=list(columns))
        if self._writer is None:
            if table.num_rows == 0:
                # An empty chunk cannot tell the column types (an empty
                # object column is "null"): wait for rows, or use it at close.
                self._empty = table
                return
            self._writer = pq.ParquetWriter(self.path, table.schema)
        elif not table.schema.equals(self._writer.schema):
            try:
                table = table.cast(self._writer.schema)
            except (pa.ArrowException, ValueError) as exc:
                raise ValueError(f"{self.path}: column types changed between chunks ({exc})") from None
        self._writer.write_table(table)
        self.rows += table.num_rows

    def _write_csv(self, columns: Mapping[str, Any]) -> None:
        cols = []
        for col in columns.values():
            if isinstance(col, tuple):
                codes, labels = col
                cols.append(np.asarray(list(labels), dtype=object)[np.asarray(codes)])
            else:
                cols.append(np.asarray(col))
        n = len(cols[0]) if cols else 0
        if any(len(c) != n for c in cols):
            raise ValueError("all columns of a chunk must have the same length")
        if self._file is None:
            self._file = open(self.path, "w", encoding="utf-8", newline="")
            self._csv = csv.writer(self._file, lineterminator="\n")
            self._csv.writerow(list(columns))
        self._csv.writerows(zip(*(c.tolist() for c in cols)))
        self.rows += n

    def close(self) -> None:
        if self._writer is None and self._empty is not None:
            import pyarrow.parquet as pq

            self._writer = pq.ParquetWriter(self.path, self._empty.schema)
            self._writer.write_table(self._empty)
            self._empty = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._file is not None:
            self._file.close()
            self._file = None
        elif self.format == "csv" and self._names is None:
            # Nothing written: still leave a valid (empty) file.
            open(self.path, "w").close()


def _slice(obj: Any, start: int, stop: int) -> Any:
    if hasattr(obj, "iloc"):  # pandas
        return obj.iloc[start:stop]
    if hasattr(obj, "slice") and hasattr(obj, "type") and not isinstance(obj, np.ndarray):  # pyarrow
        return obj.slice(start, stop - start)
    return obj[start:stop]


def _is_chunk_stream(keys: Any) -> bool:
    """True for iterables of chunks (readers, generators, lists of arrays)."""
    if isinstance(keys, (IdReader, Iterator)):
        return True
    return False


def iter_chunks(
    keys: Any,
    weights: Any = None,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    extra: Any = None,
) -> Iterator[tuple[Any, np.ndarray | None, np.ndarray | None]]:
    """Split keys (and aligned weights) into chunks of at most ``chunk_size``.

    ``keys`` is either one array-like of keys (numpy, list, pandas, pyarrow:
    anything the routers accept), sliced without copying where possible, or
    a stream of chunks: an :class:`IdReader`, or any iterator whose items are
    arrays of keys or ``(keys, weights)`` / ``(keys, weights, extra)`` tuples.
    Yields ``(keys, weights, extra)`` triples; weights are float64 arrays or
    ``None``.

    >>> [(list(k), w) for k, w, _ in iter_chunks([5, 6, 7], chunk_size=2)]
    [([5, 6], None), ([7], None)]
    """
    _check_chunk_size(chunk_size)
    if _is_chunk_stream(keys):
        if weights is not None or extra is not None:
            raise ValueError("weights must come inside the chunks when keys is a stream of chunks")
        for item in keys:
            if isinstance(item, tuple):
                if len(item) == 2:
                    k, w = item
                    e = None
                elif len(item) == 3:
                    k, w, e = item
                else:
                    raise ValueError(f"a chunk must be keys or (keys, weights[, extra]), got a tuple of {len(item)}")
            else:
                k, w, e = item, None, None
            n = len(k)
            w = _weights_array(w, n, "weights")
            e = _weights_array(e, n, "extra")
            for s in range(0, n, chunk_size):
                yield (
                    _slice(k, s, s + chunk_size) if n > chunk_size else k,
                    None if w is None else w[s : s + chunk_size],
                    None if e is None else e[s : s + chunk_size],
                )
        return
    if isinstance(keys, (str, bytes)) or not hasattr(keys, "__len__"):
        raise TypeError(f"keys must be an array-like of keys or an iterator of chunks, not {type(keys).__name__}")
    n = len(keys)
    w = _weights_array(weights, n, "weights")
    e = _weights_array(extra, n, "extra")
    if isinstance(keys, np.ndarray) and keys.ndim != 1:
        raise ValueError(f"keys must be one-dimensional, got shape {keys.shape}")
    for s in range(0, n, chunk_size):
        yield (
            _slice(keys, s, s + chunk_size) if n > chunk_size else keys,
            None if w is None else w[s : s + chunk_size],
            None if e is None else e[s : s + chunk_size],
        )


def _weights_array(w: Any, n: int, what: str) -> np.ndarray | None:
    if w is None:
        return None
    if hasattr(w, "to_numpy") and not isinstance(w, np.ndarray):
        w = w.to_numpy()
    try:
        arr = np.ascontiguousarray(w, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be numeric, got {type(w).__name__}") from None
    if arr.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{what} has {arr.shape[0]} values but there are {n} keys")
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{what}[{i}] = {float(arr[i])!r}: weights must be finite and >= 0")
    return arr
