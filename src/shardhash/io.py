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

Integer ids come out as ``int64`` (or ``uint64``; an object array of Python
ints when a chunk mixes negative ids and ids >= 2**63) arrays and text ids as
object arrays of ``str``.  The distinction matters: the integer ``42`` and the
string ``"042"`` are different keys and hash differently, so text and CSV
files are parsed by the key type you declare (``id_type``, or the
topology's ``key_type`` on the command line), never by a guess from the
values; a value that does not parse is an error naming its line.  Every
reader drops a UTF-8 byte order mark and the spaces around column names.

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
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict, TypeVar

import numpy as np

from shardhash._options import check_options
from shardhash._parallel import kernel_array

if TYPE_CHECKING:
    from typing_extensions import Unpack

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
    "atomic_output",
    "same_file",
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


_COMMON_DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab"}
_WS = " \t\r\n\f\v"


def _header_name(name: str) -> str:
    """A header cell as matched against --column: no BOM, no surrounding spaces."""
    return name.lstrip("\ufeff").strip(_WS)


def _arrow_column_to_keys(arr: Any, name: str, kind: str | None, path: str, row0: int) -> np.ndarray:
    """One pyarrow array of ids as keys of ``kind`` (None: the column's own type)."""
    pa = require_pyarrow("reading Arrow data")
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if arr.null_count:
        mask = arr.is_null().to_numpy(zero_copy_only=False)
        first = int(np.flatnonzero(mask)[0])
        raise ValueError(f"{path}: row {row0 + first}: missing id (null) in column {name!r}")
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    is_view = getattr(pa.types, "is_string_view", None)
    is_str = pa.types.is_string(t) or pa.types.is_large_string(t) or (is_view is not None and is_view(t))
    is_bin = pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
    is_int = pa.types.is_integer(t)
    if is_str and kind not in (None, "str"):
        from ._keytypes import parse_column

        return parse_column(arr.to_pylist(), kind, row0, path)
    if kind is None or (kind == "int" and is_int) or (kind == "str" and is_str) or (kind == "bytes" and is_bin):
        if is_int:
            dtype = np.uint64 if pa.types.is_unsigned_integer(t) and t.bit_width == 64 else np.int64
            return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=dtype)
        if is_str or is_bin:
            return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=object)
    if kind == "uuid" and pa.types.is_fixed_size_binary(t) and t.byte_width == 16:
        out = np.empty(len(arr), dtype=object)
        out[:] = [uuid.UUID(bytes=b) for b in arr.to_pylist()]
        return out
    if kind is None and (pa.types.is_timestamp(t) or pa.types.is_date(t)):
        return np.asarray(arr.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        raise ValueError(f"{path}: column {name!r} holds {t} values; ids must be integers, strings or bytes")
    if kind is not None:
        raise ValueError(f"{path}: column {name!r} holds {t} values but the key type is {kind}")
    raise ValueError(f"{path}: column {name!r} has unsupported type {t} for ids")


def _weights_to_numpy(arr: Any, name: str, path: str, row0: int) -> np.ndarray:
    pa = require_pyarrow("reading Arrow data")
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
        raise ValueError(f"{path}: weights column {name!r} has type {arr.type}; it must be numeric")
    if arr.null_count:
        first = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
        raise ValueError(f"{path}: row {row0 + first}: missing weight (null) in column {name!r}")
    w = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64)
    _check_weights(w, name, path, row0, "row")
    return w


def _check_weights(w: np.ndarray, name: str, path: str, row0: int | Sequence[int], unit: str) -> None:
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        where = row0 + i if isinstance(row0, int) else row0[i]
        raise ValueError(f"{path}: {unit} {where}: weight {float(w[i])!r} in column {name!r} is invalid "
                         "(weights must be finite and >= 0)")


class IdReader:
    """An iterable over the ids of one file, in chunks (see :func:`open_ids`).

    Attributes: ``path``, ``format``, ``column`` (the id column, ``None`` for
    single-column formats; a tuple of names for a compound key),
    ``weights_column``, ``columns`` (all column names, when the format has
    names), ``key_type`` (the declared key type or ``None``), ``delimiter``
    (CSV) and ``total_rows`` (``None`` when unknown without reading the whole
    file, e.g. for CSV and text).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        column: str | Sequence[str] | None = None,
        weights: str | None = None,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        format: str | None = None,
        id_type: Any = None,
        delimiter: str | None = None,
        header: bool = True,
    ) -> None:
        from ._keytypes import parse_key_type

        self.path = os.fspath(path)
        self.chunk_size = _check_chunk_size(chunk_size)
        fmt = format or detect_format(self.path)
        if fmt not in _FORMATS:
            raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(_FORMATS)}")
        if id_type == "auto":
            raise ValueError("id_type='auto' is gone: ids are never guessed from the values "
                             "(give the key type: 'int', 'str', 'bytes', 'uuid' or a tuple of those)")
        self.key_type = None if id_type is None else parse_key_type(id_type)
        self.id_type = self.key_type
        if delimiter is not None and (len(delimiter) != 1 or delimiter in "\r\n\"" ):
            raise ValueError(f"delimiter must be one character (not a quote or a newline), got {delimiter!r}")
        self.format = fmt
        self.weights_column = weights
        self.header = bool(header)
        self._explicit_delimiter = delimiter is not None
        self.delimiter = delimiter
        if not os.path.exists(self.path):
            raise FileNotFoundError(f"{self.path}: no such file")
        if os.path.isdir(self.path):
            raise IsADirectoryError(f"{self.path}: is a directory, not an ids file")
        self.columns: list[str] | None = None
        self.total_rows: int | None = None
        self.file_size = os.path.getsize(self.path)
        # Text formats: how far into the file the chunks read so far reach
        # (bytes, on disk), for progress bars with a known total.
        self.bytes_read: int | None = None
        if isinstance(column, str) and "," in column:
            column = [c.strip() for c in column.split(",")]
        self._want = column
        self.column: Any = None
        getattr(self, f"_open_{fmt}")()

    # -- metadata ---------------------------------------------------------
    @property
    def _parts(self) -> tuple[str, ...] | None:
        kt = self.key_type
        return kt if isinstance(kt, tuple) else None

    def _kinds(self) -> list[str | None]:
        kt = self.key_type
        if kt is None:
            return [None]
        return list(kt) if isinstance(kt, tuple) else [kt]

    def _resolve_column(self, names: list[str]) -> None:
        """Pick the id column(s) among ``names`` (matched without BOM and
        surrounding spaces, the same way for every format)."""
        clean = [_header_name(n) for n in names]
        self.columns = clean
        if not names:
            raise ValueError(f"{self.path}: the file has no columns")
        nparts = len(self._parts) if self._parts else 1
        want = self._want
        if want is None:
            candidates = [i for i, n in enumerate(clean) if n != self.weights_column]
            if len(candidates) < nparts:
                raise ValueError(f"{self.path}: the key type {self.key_type} needs {nparts} id columns, "
                                 f"the file has {len(candidates)}")
            idx = candidates[:nparts]
        else:
            wl = [want] if isinstance(want, str) else list(want)
            if len(wl) != nparts:
                raise ValueError(f"{self.path}: {len(wl)} id column(s) given for a key type of {nparts} part(s)")
            idx = []
            for w in wl:
                w = _header_name(w)
                if w not in clean:
                    hint = "" if self.header else " (without a header, columns are named 1, 2, ...)"
                    raise ValueError(f"{self.path}: no column {w!r}; columns are {', '.join(map(repr, clean))}{hint}")
                idx.append(clean.index(w))
        self._idx = idx
        self._raw_names = [names[i] for i in idx]
        self.column = clean[idx[0]] if nparts == 1 else tuple(clean[i] for i in idx)
        self._wi = None
        if self.weights_column is not None:
            wname = _header_name(self.weights_column)
            if wname not in clean:
                raise ValueError(
                    f"{self.path}: no weights column {wname!r}; columns are {', '.join(map(repr, clean))}")
            self._wi = clean.index(wname)
            self._raw_wname = names[self._wi]

    def _no_columns(self) -> None:
        if self._want is not None:
            raise ValueError(f"{self.path}: {self.format} files have a single unnamed column; do not pass a column")
        if self.weights_column is not None:
            raise ValueError(f"{self.path}: {self.format} files hold ids only; weights need CSV, Parquet or Arrow")
        if self._parts:
            raise ValueError(f"{self.path}: a compound key type needs a file with columns (CSV, Parquet, Arrow)")

    def _need_type(self) -> None:
        if self.key_type is None:
            raise ValueError(
                f"{self.path}: the key type of the ids is not known: declare it in the topology "
                "(topology new --key-type) or give --id-type int|str|bytes|uuid (id_type= in Python); "
                "ids are never guessed from the values (007 and 7 are different keys)")

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
        kind = {"i": "int", "u": "int", "U": "str", "S": "bytes"}[arr.dtype.kind]
        if self.key_type is not None and self.key_type != kind:
            raise ValueError(f"{self.path}: the array holds {arr.dtype} values but the key type is {self.key_type}")
        self._npy = arr
        self.total_rows = int(arr.shape[0])

    def _open_text(self) -> None:
        self._no_columns()
        self._need_type()
        self._check_readable_text()

    def _check_readable_text(self) -> None:
        with self._open_textfile() as f:
            try:
                f.read(4096)
            except (UnicodeDecodeError, OSError, EOFError) as exc:
                raise ValueError(f"{self.path}: not a readable text file ({exc})") from None

    def _open_textfile(self) -> Any:
        # utf-8-sig: a byte order mark is not part of the first id or column name.
        if self.path.lower().endswith(".gz"):
            return _stdio.TextIOWrapper(gzip.open(self.path, "rb"), encoding="utf-8-sig", newline="")
        return open(self.path, encoding="utf-8-sig", newline="")

    def _open_csv(self) -> None:
        self._need_type()
        with self._open_textfile() as f:
            try:
                first = f.readline()
            except (UnicodeDecodeError, OSError, EOFError) as exc:
                raise ValueError(f"{self.path}: not a readable CSV file ({exc})") from None
            if self.delimiter is None:
                if self.path.lower().removesuffix(".gz").endswith(".tsv"):
                    self.delimiter = "\t"
                else:
                    counts = {d: first.count(d) for d in (",", ";", "\t", "|")}
                    best = max(counts, key=lambda d: counts[d])
                    self.delimiter = "," if counts[","] or not counts[best] else best
            f.seek(0)
            try:
                row = next(csv.reader(f, delimiter=self.delimiter), None)
            except (UnicodeDecodeError, csv.Error, OSError, EOFError) as exc:
                raise ValueError(f"{self.path}: not a readable CSV file ({exc})") from None
        if row is None:
            raise ValueError(f"{self.path}: empty CSV file" + (" (no header row)" if self.header else ""))
        if self.header:
            self._resolve_column(row)
            self._check_header_not_data(row)
        else:
            self._resolve_column([str(i + 1) for i in range(len(row))])
        self._ncols = len(row)

    def _check_header_not_data(self, row: list[str]) -> None:
        from ._keytypes import parse_text

        for i, kind in zip(self._idx, self._kinds()):
            if kind in (None, "str"):
                continue
            try:
                parse_text(row[i].lstrip("\ufeff"), kind)
            except ValueError:
                continue
            raise ValueError(
                f"{self.path}: line 1: the header {row[i]!r} looks like data (it parses as a {kind} id): "
                "if the file has no header row, pass --no-header (header=False)")

    def _open_parquet(self) -> None:
        require_pyarrow("reading Parquet")
        import pyarrow as pa
        import pyarrow.parquet as pq

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
        for chunk, _ in self.iter_records():
            yield chunk

    def iter_records(self, *, keep: bool = False) -> Iterator[tuple[IdChunk, Any]]:
        """Chunks with the records they came from (``keep=True``): for CSV
        and text a list of each record's raw text (line terminator
        included, exactly as in the file), for Parquet/Arrow the record
        batch with every column, for .npy ``None``.  Used to write ids back
        byte for byte with all their columns."""
        it: Iterator[tuple[IdChunk, Any]] = getattr(self, f"_iter_{self.format}")(keep)
        return it

    @property
    def header_text(self) -> str | None:
        """The raw header record of a CSV file (``None`` otherwise)."""
        if self.format != "csv" or not self.header:
            return None
        with self._open_textfile() as f:
            raw: list[str] = []
            for _ in csv.reader(self._capture(f, raw), delimiter=self.delimiter or ","):
                break
            return "".join(raw)

    def _iter_npy(self, keep: bool) -> Iterator[tuple[IdChunk, Any]]:
        arr = self._npy
        n = arr.shape[0]
        for s in range(0, n, self.chunk_size):
            part = arr[s : s + self.chunk_size]
            if part.dtype.kind in "US":
                yield IdChunk(np.asarray(part, dtype=object), None), None
            else:
                yield IdChunk(np.ascontiguousarray(part), None), None

    def _iter_text(self, keep: bool) -> Iterator[tuple[IdChunk, Any]]:
        from ._keytypes import parse_column

        kind = self._kinds()[0]
        assert kind is not None
        buf: list[str] = []
        lines: list[int] = []
        raws: list[str] = []
        with self._open_textfile() as f:
            for line_no, line in enumerate(f, 1):
                s = line.rstrip("\r\n")
                if not s.strip(_WS):
                    continue
                buf.append(s)
                lines.append(line_no)
                if keep:
                    raws.append(line)
                if len(buf) >= self.chunk_size:
                    self.bytes_read = self._disk_pos(f)
                    yield IdChunk(parse_column(buf, kind, lines, self.path, "line"), None), raws
                    buf, lines, raws = [], [], []
        self.bytes_read = self.file_size
        if buf:
            yield IdChunk(parse_column(buf, kind, lines, self.path, "line"), None), raws

    @staticmethod
    def _disk_pos(f: Any) -> int | None:
        try:
            buf = f.buffer
            raw = getattr(buf, "fileobj", None)  # gzip: the compressed position
            return int((raw or buf).tell())
        except (AttributeError, OSError, ValueError):
            return None

    @staticmethod
    def _capture(f: Any, raw: list[str]) -> Iterator[str]:
        for line in f:
            raw.append(line)
            yield line

    def _iter_csv(self, keep: bool) -> Iterator[tuple[IdChunk, Any]]:
        ncols = self._ncols
        idx = self._idx
        wi = self._wi
        cols: list[list[str]] = [[] for _ in idx]
        ws: list[str] = []
        lines: list[int] = []
        raws: list[str] = []
        raw: list[str] = []
        with self._open_textfile() as f:
            src = self._capture(f, raw) if keep else f
            reader = csv.reader(src, delimiter=self.delimiter or ",")
            try:
                if self.header:
                    next(reader, None)
                    raw.clear()
                line = reader.line_num + 1
                for row in reader:
                    start, line = line, reader.line_num + 1
                    if not row:
                        raw.clear()
                        continue
                    if len(row) != ncols:
                        raise ValueError(f"{self.path}: line {start}: expected {ncols} fields, got {len(row)}")
                    for c, i in zip(cols, idx):
                        c.append(row[i])
                    if wi is not None:
                        ws.append(row[wi])
                    lines.append(start)
                    if keep:
                        raws.append("".join(raw))
                        raw.clear()
                    if len(lines) >= self.chunk_size:
                        self.bytes_read = self._disk_pos(f)
                        yield self._csv_chunk(cols, ws, lines), raws
                        cols, ws, lines, raws = [[] for _ in idx], [], [], []
            except csv.Error as exc:
                raise ValueError(f"{self.path}: line {reader.line_num}: malformed CSV ({exc})") from None
        self.bytes_read = self.file_size
        if lines:
            yield self._csv_chunk(cols, ws, lines), raws

    def _csv_chunk(self, cols: list[list[str]], ws: list[str], lines: list[int]) -> IdChunk:
        from ._keytypes import parse_column

        parsed = []
        for c, kind, name in zip(cols, self._kinds(), self._raw_names):
            assert kind is not None
            if not self._explicit_delimiter and kind != "int":
                joined = "\x00".join(c)
                for d, what in _COMMON_DELIMITERS.items():
                    if d != self.delimiter and d in joined:
                        i = next(k for k, v in enumerate(c) if d in v)
                        raise ValueError(
                            f"{self.path}: line {lines[i]}: id {c[i]!r} in column {_header_name(name)!r} holds "
                            f"{d!r}, the delimiter of {what}-separated files: pass --delimiter {d!r} if that is "
                            f"the file's delimiter, or --delimiter {self.delimiter!r} if {d!r} is part of the ids")
            parsed.append(parse_column(c, kind, lines, self.path, "line"))
        if len(parsed) == 1:
            arr = parsed[0]
        else:
            arr = np.empty(len(lines), dtype=object)
            arr[:] = list(zip(*(p.tolist() for p in parsed)))
        w = None
        if self.weights_column is not None:
            try:
                w = np.array([float(x) for x in ws], dtype=np.float64)
            except ValueError:
                for i, x in enumerate(ws):
                    try:
                        float(x)
                    except ValueError:
                        raise ValueError(f"{self.path}: line {lines[i]}: weight {x!r} in column "
                                         f"{self.weights_column!r} is not a number") from None
                raise  # pragma: no cover
            _check_weights(w, self.weights_column, self.path, lines, "line")
        return IdChunk(arr, w)

    def _batch_chunk(self, batch: Any, row0: int) -> IdChunk:
        parts = [
            _arrow_column_to_keys(batch.column(i), _header_name(n), kind, self.path, row0)
            for i, n, kind in zip(self._batch_idx(batch), self._raw_names, self._kinds())
        ]
        if len(parts) == 1:
            ids = parts[0]
        else:
            ids = np.empty(batch.num_rows, dtype=object)
            ids[:] = list(zip(*(p.tolist() for p in parts)))
        w = None
        if self.weights_column is not None:
            w = _weights_to_numpy(batch.column(batch.schema.names.index(self._raw_wname)),
                                  self.weights_column, self.path, row0)
        return IdChunk(ids, w)

    def _batch_idx(self, batch: Any) -> list[int]:
        names = batch.schema.names
        return [names.index(n) for n in self._raw_names]

    def _columns_wanted(self, keep: bool) -> list[str] | None:
        if keep:
            return None
        cols = list(self._raw_names)
        if self.weights_column is not None and self._raw_wname not in cols:
            cols.append(self._raw_wname)
        return cols

    def _iter_parquet(self, keep: bool) -> Iterator[tuple[IdChunk, Any]]:
        import pyarrow as pa

        row0 = 1
        try:
            for batch in self._pf.iter_batches(batch_size=self.chunk_size, columns=self._columns_wanted(keep)):
                if batch.num_rows:
                    yield self._batch_chunk(batch, row0), (batch if keep else None)
                    row0 += batch.num_rows
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"{self.path}: error while reading Parquet ({exc})") from None

    def _iter_arrow(self, keep: bool) -> Iterator[tuple[IdChunk, Any]]:
        import pyarrow as pa
        import pyarrow.ipc as ipc

        def chunks(batches: Iterable[Any]) -> Iterator[tuple[IdChunk, Any]]:
            row0 = 1
            for batch in batches:
                for s in range(0, batch.num_rows, self.chunk_size):
                    part = batch.slice(s, self.chunk_size)
                    yield self._batch_chunk(part, row0), (part if keep else None)
                    row0 += part.num_rows

        try:
            if self._ipc_kind == "file":
                with pa.memory_map(self.path, "r") as src:
                    r = ipc.open_file(src)
                    yield from chunks(r.get_batch(i) for i in range(r.num_record_batches))
            else:
                with pa.OSFile(self.path, "rb") as src:
                    yield from chunks(ipc.open_stream(src))
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"{self.path}: error while reading Arrow data ({exc})") from None


class _ReadOptions(TypedDict, total=False):
    """The keyword options of :func:`open_ids` and :func:`read_ids`: those of
    :class:`IdReader`, whose defaults apply."""

    column: str | Sequence[str] | None
    weights: str | None
    chunk_size: int
    format: str | None
    id_type: Any
    delimiter: str | None
    header: bool


def open_ids(path: str | os.PathLike[str], **options: Unpack[_ReadOptions]) -> IdReader:
    """Open an ids file for chunked reading; checks the file and columns now.

    ``id_type`` is the key type (``"int"``, ``"str"``, ``"bytes"``,
    ``"uuid"`` or a tuple of those for a compound key, one column per part):
    text formats (CSV, text) need it, since ids are never guessed from their
    values; typed formats (Parquet, Arrow, .npy) use their column's type when
    it is not given, and check it when it is.  ``column`` names the id column
    (or columns; default: the first columns that are not ``weights``);
    ``weights`` names an optional numeric column (bytes, requests...).  CSV
    only: ``delimiter`` (default: tab for .tsv, else detected from the header
    line among ``,`` ``;`` tab ``|``) and ``header=False`` for a file without
    a header row (columns are then named ``"1"``, ``"2"``, ...).  Raises
    FileNotFoundError, ValueError (bad column, corrupt file, no key type) or
    ImportError (pyarrow missing for Parquet/Arrow) before any chunk is read.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "ids.csv")
    >>> _ = open(p, "w").write("user_id,bytes\\n7,100\\n008,250\\n")
    >>> r = open_ids(p, weights="bytes", id_type="int")
    >>> r.column, [c.ids.tolist() for c in r], [c.weights.tolist() for c in r]
    ('user_id', [[7, 8]], [[100.0, 250.0]])
    >>> [c.ids.tolist() for c in open_ids(p, id_type="str")]
    [['7', '008']]
    """
    check_options("open_ids", options, _ReadOptions)
    return IdReader(path, **options)


def read_ids(path: str | os.PathLike[str], **options: Unpack[_ReadOptions]) -> Iterator[IdChunk]:
    """Iterate over ``(ids, weights)`` chunks of a file (see :func:`open_ids`).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "ids.txt")
    >>> _ = open(p, "w").write("alice\\nbob\\n\\ncarol\\n")
    >>> [c.ids.tolist() for c in read_ids(p, chunk_size=2, id_type="str")]
    [['alice', 'bob'], ['carol']]
    """
    check_options("read_ids", options, _ReadOptions)
    return iter(IdReader(path, **options))


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """True when two paths name the same file (also through links).

    >>> same_file("x.csv", "./x.csv")
    True
    """
    a, b = os.fspath(a), os.fspath(b)
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


class atomic_output:
    """A temporary file next to ``path``, renamed over ``path`` only when the
    block ends without an error (else removed): readers never see a partial
    file, and an error leaves any previous file untouched.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "out.txt")
    >>> with atomic_output(p) as tmp:
    ...     _ = open(tmp, "w").write("done")
    >>> open(p).read()
    'done'
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        parent = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(parent):
            raise FileNotFoundError(f"{self.path}: directory {parent!r} does not exist")
        if os.path.isdir(self.path):
            raise IsADirectoryError(f"{self.path}: is a directory")
        import tempfile

        fd, self.tmp = tempfile.mkstemp(prefix="." + os.path.basename(self.path) + ".", suffix=".tmp", dir=parent)
        os.close(fd)
        self.done = False

    def __enter__(self) -> str:
        return self.tmp

    def commit(self) -> None:
        if not self.done:
            self.done = True
            try:
                # mkstemp creates the file 0600: give it the usual mode.
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(self.tmp, 0o666 & ~umask)
            except OSError:  # pragma: no cover
                pass
            os.replace(self.tmp, self.path)

    def abort(self) -> None:
        if not self.done:
            self.done = True
            try:
                os.unlink(self.tmp)
            except FileNotFoundError:
                pass

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


_W = TypeVar("_W", bound="AtomicWriter")


class AtomicWriter:
    """A writer whose output appears whole or not at all.

    Use as a context manager: leaving the ``with`` block calls :meth:`close`
    (the output appears) or, on an error, :meth:`abort` (nothing is left).
    """

    def close(self) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def __enter__(self: _W) -> _W:
        return self

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


class ChunkWriter(AtomicWriter):
    """Write columns to Parquet or CSV one chunk at a time.

    Use as a context manager; each :meth:`write` call appends rows.  Rows go
    to a temporary file in the same folder, renamed over ``path`` by
    :meth:`close` (or at the end of a ``with`` block without an error);
    :meth:`abort` (or an error in the ``with`` block) removes it, so no
    partial output is ever left behind.  Columns
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
        if fmt == "parquet":
            require_pyarrow("writing Parquet")
        self._atomic = atomic_output(self.path)
        self._tmp = self._atomic.tmp
        self.rows = 0
        self._writer: Any = None
        self._file: Any = None
        self._names: list[str] | None = None
        self._empty: Any = None

    def abort(self) -> None:
        """Drop everything written: the target file is left as it was."""
        try:
            if self._writer is not None:
                self._writer.close()
            if self._file is not None:
                self._file.close()
        finally:
            self._writer = self._file = None
            self._atomic.abort()

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
                arr = pa.DictionaryArray.from_arrays(pa.array(np.asarray(codes, dtype=np.int32)),
                                                     pa.array(list(labels), pa.string()))
            elif isinstance(col, (pa.Array, pa.ChunkedArray)):
                arr = col
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
            self._writer = pq.ParquetWriter(self._tmp, table.schema)
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
            elif hasattr(col, "to_pylist"):  # a pyarrow array
                a = np.empty(len(col), dtype=object)
                a[:] = col.to_pylist()
                cols.append(a)
            else:
                cols.append(np.asarray(col))
        n = len(cols[0]) if cols else 0
        if any(len(c) != n for c in cols):
            raise ValueError("all columns of a chunk must have the same length")
        if self._file is None:
            self._file = open(self._tmp, "w", encoding="utf-8", newline="")
            self._csv = csv.writer(self._file, lineterminator="\n")
            self._csv.writerow(list(columns))
        self._csv.writerows(zip(*(c.tolist() for c in cols)))
        self.rows += n

    def close(self) -> None:
        """Finish the file and move it into place."""
        if self._atomic.done:
            return
        try:
            self._finish()
        except BaseException:
            self.abort()
            raise
        self._atomic.commit()

    def _finish(self) -> None:
        if self._writer is None and self._empty is not None:
            import pyarrow.parquet as pq

            self._writer = pq.ParquetWriter(self._tmp, self._empty.schema)
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
            open(self._tmp, "w").close()


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
        arr = kernel_array(w, dtype=np.float64)
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
