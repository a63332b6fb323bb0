"""``shardhash route``: which shard owns each id (a file, stdin, or ``--key``)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from .common import (
    UsageError,
    abort_on_error,
    add_ids_options,
    command_parser,
    describe_hashing,
    echo,
    exc_text,
    file_error,
    format_table,
    ids_path,
    ids_progress,
    open_ids_file,
    output_errors,
    read_router,
    refuse_overwrite,
    resolve_key_type,
)


def _csv_cell(text: str, delim: str) -> str:
    if any(c in text for c in (delim, '"', "\r", "\n")) or text != text.strip():
        return '"' + text.replace('"', '""') + '"'
    return text


def _append_cell(raw: str, cell: str, delim: str) -> str:
    """A raw CSV record with one more field, its line ending kept."""
    if raw.endswith("\r\n"):
        return raw[:-2] + delim + cell + "\r\n"
    if raw.endswith(("\n", "\r")):
        return raw[:-1] + delim + cell + raw[-1]
    return raw + delim + cell + "\n"


def _parse_key(text: str, kt: Any) -> Any:
    from .._keytypes import parse_text

    if isinstance(kt, tuple):
        import csv as _csv

        parts = next(_csv.reader([text]))
        if len(parts) != len(kt):
            raise ValueError(f"key {text!r} has {len(parts)} part(s), the key type has {len(kt)} (comma separated)")
        return tuple(parse_text(p, k) for p, k in zip(parts, kt))
    return parse_text(text, kt)


def _explain(router: Any, key: Any) -> list[str]:
    return [f"topology: {router.type_name} version {router.version}, fingerprint {router.fingerprint[:16]}",
            f"hashing:  {describe_hashing(router)}", *router.explain(key)]


def _route_keys(router: Any, kt: Any, args: argparse.Namespace) -> int:
    if kt is None:
        raise UsageError(f"{args.topology}: the topology declares no key type: give --id-type int|str|bytes|uuid "
                         "(the integer 7 and the string \"7\" route differently)")
    rows = []
    for text in args.key:
        try:
            key = _parse_key(text, kt)
            shard = router.route(key)
        except (ValueError, TypeError, OverflowError) as exc:
            raise UsageError(f"--key {text!r}: {exc_text(exc)}") from None
        if args.explain:
            echo(f"{text} -> {shard}")
            for line in _explain(router, key):
                echo("  " + line)
        else:
            rows.append((text, shard))
    if rows:
        echo(format_table(["key", "shard"], rows))
    return 0


def _out_format(path: str) -> str:
    from ..io import detect_format

    if path == "-":
        return "csv"
    fmt = detect_format(path)
    if fmt not in ("csv", "parquet"):
        raise UsageError(f"{path}: route writes CSV (.csv, .tsv, or - for stdout) or Parquet (.parquet); "
                         f"the name says {fmt}")
    return fmt


def cmd_route(args: argparse.Namespace) -> int:
    router = read_router(args.topology)
    kt = resolve_key_type(args, router)
    if args.key:
        if args.ids is not None or args.output is not None:
            raise UsageError("route: give either --key or an ids file (with --output), not both")
        return _route_keys(router, kt, args)
    if args.explain:
        raise UsageError("route: --explain goes with --key")
    if args.ids is None:
        raise UsageError("route: give an ids file (or - for stdin), or --key ID")
    if args.output is None:
        raise UsageError("route: give --output FILE (.csv or .parquet; - writes CSV to stdout)")
    fmt_out = _out_format(args.output)
    refuse_overwrite(args.output, [(args.ids, "ids file"), (args.topology, "topology")])
    with contextlib.ExitStack() as stack:
        path = ids_path(args, args.ids, stack)
        reader = open_ids_file(args, path, id_type=kt)
        names = list(reader.columns or ["id"])
        if args.shard_column in names:
            raise UsageError(f"--shard-column {args.shard_column!r}: the input already has a column of that name; "
                             "choose another with --shard-column")
        n = _route_file(router, reader, args, fmt_out, names)
    if args.output != "-":
        print(f"routed {n:,} ids to {args.output}", file=sys.stderr)
    return 0


def _route_file(router: Any, reader: Any, args: argparse.Namespace, fmt_out: str, names: list[str]) -> int:
    from ..io import ChunkWriter, atomic_output

    shards = list(router.shards)
    src_label = args.ids

    def routed() -> Iterator[tuple[Any, Any, np.ndarray]]:
        chunks = reader.iter_records(keep=True)
        first = True
        while True:
            try:
                chunk, rec = next(chunks)
            except StopIteration:
                return
            except (ValueError, TypeError, OverflowError) as exc:
                hint = ""
                if first and reader.format == "text" and args.format is None:
                    # (text, one id per line, is the default for stdin and unknown names: a CSV with
                    # a header fails on its first line)
                    hint = "; if the input is CSV (with a header line), say so with --format csv"
                raise UsageError(file_error(src_label, reader.path, exc) + hint) from None
            first = False
            try:
                idx = router.route_many(chunk.ids, threads=args.threads)
            except (ValueError, TypeError, OverflowError) as exc:
                raise UsageError(f"{src_label}: cannot route these ids: {exc_text(exc)}") from None
            yield chunk, rec, idx

    n = 0
    with ids_progress(reader, "routing", not args.quiet) as advance:
        if fmt_out == "csv" and reader.format in ("csv", "text"):
            # Pass every record through as written (all columns, ids byte for
            # byte) and append the shard field.
            if reader.format == "csv":
                delim = reader.delimiter
            else:
                delim = "\t" if args.output.lower().removesuffix(".gz").endswith(".tsv") else ","
            labels = [_csv_cell(s, delim) for s in shards]
            to_stdout = args.output == "-"
            atomic = None if to_stdout else atomic_output(args.output)
            with abort_on_error(atomic):
                f = sys.stdout if to_stdout else open(atomic.tmp, "w", encoding="utf-8", newline="")  # type: ignore[union-attr]
                try:
                    # (the header goes out with the first chunk that routed: nothing is
                    # written before the input proved valid)
                    if reader.format == "csv":
                        head = (_append_cell(reader.header_text or "", _csv_cell(args.shard_column, delim), delim)
                                if reader.header else "")
                    else:
                        head = f"id{delim}{_csv_cell(args.shard_column, delim)}\n"
                    for _chunk, raws, idx in routed():
                        if head:
                            f.write(head)
                            head = ""
                        if reader.format == "csv":
                            f.writelines([_append_cell(r, labels[i], delim) for r, i in zip(raws, idx.tolist())])
                        else:
                            f.writelines([_csv_cell(r.rstrip("\r\n"), delim) + delim + labels[i] + "\n"
                                          for r, i in zip(raws, idx.tolist())])
                        n += len(idx)
                        advance(len(idx))
                    if head:  # (an input without ids: the header alone)
                        f.write(head)
                finally:
                    if not to_stdout:
                        f.close()
            if atomic is not None:
                atomic.commit()
            return n
        with output_errors():
            writer = ChunkWriter(args.output, format=fmt_out) if args.output != "-" else None
        if writer is None:  # Parquet/Arrow/npy to stdout: CSV through the csv module
            import csv as _csv

            w = _csv.writer(sys.stdout, lineterminator="\n")
            pending = True
            for chunk, rec, idx in routed():
                if pending:  # (with the first chunk that routed)
                    w.writerow(names + [args.shard_column])
                    pending = False
                cols = _record_columns(reader, chunk, rec, names)
                w.writerows(zip(*(_tolist(cols[k]) for k in names), (shards[i] for i in idx.tolist())))
                n += len(idx)
                advance(len(idx))
            if pending:
                w.writerow(names + [args.shard_column])
            return n
        with writer:
            for chunk, rec, idx in routed():
                out_cols: dict[str, Any] = _record_columns(reader, chunk, rec, names)
                out_cols[args.shard_column] = (idx, shards)
                writer.write(out_cols)
                n += len(idx)
                advance(len(idx))
        return n


def _tolist(col: Any) -> list[Any]:
    out: list[Any] = col.to_pylist() if hasattr(col, "to_pylist") else col.tolist()
    return out


def _record_columns(reader: Any, chunk: Any, rec: Any, names: list[str]) -> dict[str, Any]:
    """Every input column of a chunk, as arrays (CSV and text: the text as written)."""
    if reader.format == "csv":
        import csv as _csv

        rows = list(_csv.reader(rec, delimiter=reader.delimiter))
        rows = [r for r in rows if r]
        out = {}
        for j, name in enumerate(names):
            a = np.empty(len(rows), dtype=object)
            a[:] = [r[j] for r in rows]
            out[name] = a
        return out
    if reader.format == "text":
        a = np.empty(len(rec), dtype=object)
        a[:] = [r.rstrip("\r\n") for r in rec]
        return {"id": a}
    if rec is None:  # npy
        return {"id": chunk.ids}
    from ..io import _header_name

    out = {}
    for j, raw in enumerate(rec.schema.names):
        col = rec.column(j)
        out[_header_name(raw)] = col
    return out


@command_parser("route", cmd_route, help="which shard owns each id: a file, stdin, or --key",
                description="Add a shard column to an ids file (every input column is kept; CSV records "
                "are copied as written), or print the owner of the keys given with --key.")
def _build_route(r: argparse.ArgumentParser) -> None:
    r.add_argument("topology", help="topology document (.json), e.g. from `shardhash topology new`")
    r.add_argument("ids", nargs="?", help="ids file, or - for stdin (default format there: text, one id per line)")
    r.add_argument("-o", "--output", help="output file: .csv/.tsv or .parquet; - writes CSV to stdout "
                   "(required with an ids file)")
    r.add_argument("--key", action="append", metavar="ID", help="route one key (repeatable); a compound key "
                   "is comma separated")
    r.add_argument("--explain", action="store_true", help="with --key: the hash, bucket/slot/range and topology "
                   "version behind each answer")
    r.add_argument("--shard-column", default="shard", help="name of the added column")
    add_ids_options(r, weights=False)

