"""The ``shardhash`` command.

    shardhash demo [--keys N]                 compare strategies when a 5th shard joins 4
    shardhash topology new STRATEGY --shards a,b,c [--key-type int] [--output FILE]
    shardhash topology show|validate FILE
    shardhash topology add|remove FILE --shards d [--output FILE]
    shardhash route TOPOLOGY IDS --output FILE      (IDS or FILE may be -: stdin / stdout)
    shardhash route TOPOLOGY --key ID [--key ID ...] [--explain]
    shardhash plan OLD NEW [--ids FILE] [--weights COLUMN] [--json] [--moves FILE] [--plot FILE.png]
    shardhash analyze IDS [--topology FILE] [--weights COLUMN] [--bytes COLUMN] [--requests COLUMN]
                      [--duration SECONDS] [--top K] [--propose-hot-set [--headroom F]]

Bad input (a missing file, a wrong column, a corrupt or mismatched topology)
gives one line on stderr and exit status 2; internal failures exit with 1.
Progress bars (rich) appear only when stderr is a terminal.  Every file the
command writes appears only when complete (a temporary file renamed into
place), and never over one of its inputs.

Subcommands are registered with :func:`command`: a function that adds its
parser to the subparsers and sets ``func``::

    @command("hello")
    def _hello(sub, common):
        p = sub.add_parser("hello", parents=[common], help="say hello")
        p.set_defaults(func=lambda args: 0)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn

import numpy as np

__all__ = ["main", "build_parser", "command"]

PROG = "shardhash"


class UsageError(Exception):
    """Bad input from the user: reported on one line, exit status 2."""


class _Help(argparse.HelpFormatter):
    """States every option's default (unless its help already does)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        h = action.help or ""
        if (action.option_strings and "default" not in h and action.default not in (None, False, [])
                and action.default is not argparse.SUPPRESS):
            h += f" (default: {action.default})"
        return h


class _Parser(argparse.ArgumentParser):
    def __init__(self, *a: Any, **kw: Any) -> None:
        kw.setdefault("formatter_class", _Help)
        super().__init__(*a, **kw)

    def error(self, message: str) -> NoReturn:  # one line, no usage dump
        if message.startswith("unrecognized arguments: "):
            extra = message.split(": ", 1)[1].split()
            opts = [e for e in extra if e.startswith("-") and e != "-"]
            message = (f"unknown option {opts[0]}" if len(opts) == 1 and len(extra) == 1 else
                       f"unknown option(s) or extra argument(s): {' '.join(extra)}")
        where = self.prog.removeprefix(PROG).strip()
        raise UsageError(f"{where + ': ' if where else ''}{message} (see {self.prog} --help)")


# Subcommand registry: name -> function(subparsers, common_parent) adding the parser.
_COMMANDS: dict[str, Callable[[Any, argparse.ArgumentParser], None]] = {}


def command(name: str) -> Callable[[Callable[[Any, argparse.ArgumentParser], None]],
                                   Callable[[Any, argparse.ArgumentParser], None]]:
    """Register a subcommand builder (see the module docstring)."""
    def deco(fn: Callable[[Any, argparse.ArgumentParser], None]) -> Callable[[Any, argparse.ArgumentParser], None]:
        _COMMANDS[name] = fn
        return fn
    return deco


# ------------------------------------------------------------------ helpers


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def _fmt_eta(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60}:{seconds % 60:02d}"


def _no_progress(n: int, stage: str | None = None) -> None:
    pass


@contextlib.contextmanager
def _progress(total: int | None, label: str, enabled: bool, unit: str = "ids") -> Iterator[Callable[..., None]]:
    """A progress callback: a rich bar on a terminal (done / total with
    thousands separators, rate, ETA when the total is known), nothing
    otherwise."""
    if not enabled or not sys.stderr.isatty():
        yield _no_progress
        return
    try:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
        from rich.text import Text
    except ImportError:
        yield _no_progress
        return

    class _Count(ProgressColumn):  # 1,234,567 / 10,000,000 ids  2.1M ids/s  ETA 0:03
        def render(self, task: Any) -> Any:
            done = f"{int(task.completed):,}"
            tot = f" / {int(task.total):,}" if task.total is not None else ""
            speed = task.finished_speed or task.speed
            rate = f"  {speed:,.0f} {unit}/s" if speed else ""
            eta = ""
            if task.total is not None and speed and task.remaining:
                eta = f"  ETA {_fmt_eta(task.remaining / speed)}"
            return Text(f"{done}{tot} {unit}{rate}{eta}")

    cols = [TextColumn("{task.description}"), BarColumn(), _Count(), TimeElapsedColumn()]
    with Progress(*cols, console=Console(stderr=True), transient=True) as prog:
        task = prog.add_task(label, total=total)

        def advance(n: int, stage: str | None = None) -> None:
            if stage is not None:
                prog.update(task, description=f"{label}: {stage}")
            prog.advance(task, n)

        yield advance


@contextlib.contextmanager
def _ids_progress(reader: Any, label: str, enabled: bool) -> Iterator[Callable[[int], None]]:
    """Progress over an ids file: rows when the file says how many (Parquet,
    Arrow, .npy), else bytes of the file read so far (CSV, text)."""
    if reader.total_rows is not None or reader.bytes_read is None and reader.format not in ("csv", "text"):
        with _progress(reader.total_rows, label, enabled) as adv:
            yield adv
        return
    with _progress(reader.file_size, label, enabled, unit="bytes") as adv:
        done = [0]

        def tick(n: int) -> None:
            pos = reader.bytes_read or 0
            if pos > done[0]:
                adv(pos - done[0])
                done[0] = pos

        yield tick


def _read_doc(path: str) -> Any:
    if path == "-":
        raise UsageError("a topology is read from a file, not from stdin")
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such topology file")
    if os.path.isdir(path):
        raise UsageError(f"{path}: is a directory, not a topology file")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a topology document (not UTF-8 text)") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:  # load_router's depth limit, met inside the JSON parser
        raise UsageError(f"{path}: invalid topology: nested too deeply") from None


def _load_router(path: str) -> Any:
    from .routing import load_router

    doc = _read_doc(path)
    try:
        return load_router(doc)
    except (ValueError, TypeError, KeyError, OverflowError) as exc:
        m = _msg(exc)
        if "fingerprint mismatch" in m:
            raise UsageError(
                f"{path}: fingerprint mismatch: the document was edited after it was sealed "
                f"(its \"fingerprint\" no longer matches "
                f"its content); if the edit is intended, re-seal it with `{PROG} topology validate --fix {path}` "
                "or delete the \"fingerprint\" field") from None
        raise UsageError(f"{path}: invalid topology: {m}") from None


def _msg(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    if isinstance(exc, KeyError) and text:
        return f"missing field {text[0]}"
    return text[0] if text else type(exc).__name__


def _id_type_arg(text: str) -> Any:
    from ._keytypes import parse_key_type

    try:
        return parse_key_type(text)
    except (ValueError, TypeError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _key_type(args: argparse.Namespace, *routers: Any) -> Any:
    """The key type: the topology's declaration, or --id-type (which must
    agree with a declaration)."""
    from ._keytypes import key_type_name

    declared = {r.key_type for r in routers if r is not None and r.key_type is not None}
    if len(declared) > 1:
        raise UsageError("the topologies declare different key types: "
                         + " and ".join(sorted(key_type_name(k) for k in declared)))
    given = getattr(args, "id_type", None)
    if declared:
        d = declared.pop()
        if given is not None and given != d:
            raise UsageError(f"--id-type {key_type_name(given)} contradicts the topology's declared key type "
                             f"{key_type_name(d)}")
        return d
    return given


def _open_ids(args: argparse.Namespace, path: str, *, id_type: Any, weights: str | None = None) -> Any:
    from .io import open_ids

    try:
        return open_ids(path, column=args.column, weights=weights, chunk_size=args.chunk_size,
                        format=args.format, id_type=id_type, delimiter=args.delimiter,
                        header=not args.no_header)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such ids file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not an ids file") from None
    except (ValueError, TypeError, ImportError) as exc:
        raise UsageError(_file_error(path, path, exc)) from None


def _file_error(label: str, path: str, exc: BaseException) -> str:
    """An error while reading ids, named once by the file the user gave."""
    m = _msg(exc)
    shown = "<stdin>" if label == "-" else label
    if path != shown:
        m = m.replace(path, shown)
    return m if m.startswith(shown) else f"{shown}: {m}"


def _ids_path(args: argparse.Namespace, path: str, stack: contextlib.ExitStack) -> str:
    """``-`` (stdin) is copied to a temporary file first: readers look at a
    file twice (header, then rows)."""
    if path != "-":
        return path
    d = stack.enter_context(tempfile.TemporaryDirectory(prefix="shardhash-"))
    ext = {"csv": ".csv", "parquet": ".parquet", "arrow": ".arrow", "npy": ".npy"}.get(args.format or "text", ".txt")
    p = os.path.join(d, "stdin" + ext)
    with open(p, "wb") as f:
        shutil.copyfileobj(sys.stdin.buffer, f)
    return p


def _refuse_overwrite(out: str | None, inputs: Sequence[tuple[str | None, str]]) -> None:
    from .io import same_file

    if out is None or out == "-":
        return
    for src, what in inputs:
        if src and src != "-" and same_file(out, src):
            raise UsageError(f"{out}: is the {what} itself; write the output to another file "
                             "(the input is still being read while the output is written)")


def _write_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, default=_json_default)
    sys.stdout.write("\n")


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, bytes):
        return o.hex()
    return str(o)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for k, r in enumerate(cells):
        row = (c.rjust(w) if k and i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
        lines.append("  ".join(row).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _pct(x: float) -> str:
    """A share as a percentage that stays readable for tiny shares."""
    if x == 0:
        return "0%"
    if abs(x) >= 1e-4:
        return f"{x:.4%}"
    return f"{x * 100:.3g}%"


def _bounds(lo: int, hi: int) -> str:
    if hi < 10**6:
        return f"[{lo}, {hi}]"
    return f"[{lo:#018x}, {hi:#018x}]"


def _split_ids(text: str, what: str) -> list[str]:
    ids = [s.strip() for s in text.split(",") if s.strip()]
    if not ids:
        raise UsageError(f"{what}: give at least one shard id (comma separated)")
    return ids


def _parse_weights(text: str | None) -> dict[str, float] | None:
    if not text:
        return None
    out: dict[str, float] = {}
    for part in text.split(","):
        name, sep, val = part.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--shard-weights: expected id=weight pairs, got {part!r}")
        try:
            w = float(val)
        except ValueError:
            raise UsageError(f"--shard-weights: weight {val!r} for {name.strip()!r} is not a number") from None
        if not math.isfinite(w) or w <= 0:
            raise UsageError(f"--shard-weights: weight for {name.strip()!r} must be finite and > 0, got {val}")
        out[name.strip()] = w
    return out


def _parse_zones(text: str | None, flag: str = "--zones") -> dict[str, str] | None:
    """``id=zone,...`` (a shard's failure domain) as a dict."""
    if not text:
        return None
    out: dict[str, str] = {}
    for part in text.split(","):
        name, sep, val = part.partition("=")
        if not sep or not name.strip() or not val.strip():
            raise UsageError(f"{flag}: expected id=zone pairs, got {part!r}")
        out[name.strip()] = val.strip()
    return out


# Replica movement without an ids file is counted over this many synthetic ids.
_REPLICA_SAMPLE = 1 << 18


def _replica_report(old: Any, new: Any, n: int, threads: int | None) -> Any:
    """diff(old, new, replicas=n) over _REPLICA_SAMPLE synthetic integer ids."""
    from . import plan

    try:
        return plan.diff(old, new, np.arange(_REPLICA_SAMPLE, dtype=np.int64), replicas=n, threads=threads)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--replicas: {_msg(exc)}") from None


def _replica_lines(rep: Any, sampled: bool) -> list[str]:
    """What ``plan`` and ``topology add|remove`` print for ``--replicas``."""
    d = rep.to_dict()["replicas"]
    where = f"over {rep.total:,} synthetic ids" if sampled else f"over {rep.total:,} ids"
    lines = [f"replicas: {d['n']} per key, {d['moved']:,} of {d['placements']:,} (key, replica) placements "
             f"move ({d['moved_fraction']:.2%}, {where})"]
    names = list(rep.old_shards) + [s for s in rep.new_shards if s not in rep.old_shards]
    rows = [(s, f"{d['out'].get(s, 0):,}" if s in d["out"] else "", f"{d['in'].get(s, 0):,}" if s in d["in"] else "")
            for s in names if d["out"].get(s, 0) or d["in"].get(s, 0)]
    if rows:
        lines.append(_table(["shard", "replicas out", "replicas in"], rows))
    return lines


def _write_text(path: str | None, text: str) -> None:
    from .io import atomic_output

    text = text if text.endswith("\n") else text + "\n"
    if path is None or path == "-":
        sys.stdout.write(text)
        return
    try:
        with atomic_output(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    except (FileNotFoundError, IsADirectoryError) as exc:
        raise UsageError(_msg(exc)) from None


# -------------------------------------------------------------- topology

# Short names `topology new` also accepts (a strategy's type name is accepted too).
_SHORT_NAMES = {"redis": "redis_cluster", "postgres": "postgres_hash_partition",
                "cassandra": "cassandra_token", "mongo": "mongo_hashed"}
_OPTION_FLAGS = {"vnodes": "--vnodes", "shard_weights": "--shard-weights", "table_size": "--table-size",
                 "buckets": "--buckets", "splits": "--splits", "base": "--base", "old": "--old", "new": "--new",
                 "watermark": "--watermark", "vindex": "--vindex", "pg_type": "--pg-type", "flavor": "--flavor",
                 "cql_type": "--cql-type", "probes": "--probes", "balance_factor": "--balance-factor"}


def _new_strategies() -> tuple[dict[str, str], dict[str, str]]:
    """`topology new`'s names -> document type names, and its aliases -> names.

    Every router type offers itself through ``cli_options`` (and names itself
    with ``cli_name`` when that is not its type name); the types of
    ``shardhash.compat`` are offered under their type names without importing
    them (that happens when one is chosen)."""
    from . import routing

    loaded = routing.router_types()
    names: dict[str, str] = {}
    aliases = dict(_SHORT_NAMES)
    for t in routing.router_type_names():
        cls = loaded.get(t)
        if cls is None:
            names[t] = t
        elif cls.cli_options is not None:
            names[cls.cli_name or t] = t
            if cls.cli_name:
                aliases[t] = cls.cli_name
    return names, aliases


def _strategy_class(name: str) -> Any:
    from . import routing

    names, _ = _new_strategies()
    return routing.router_type(names[name])


def _check_strategy_options(args: argparse.Namespace, s: str, cls: Any) -> None:
    allowed = cls.cli_options or frozenset()
    for opt, flag in _OPTION_FLAGS.items():
        if getattr(args, opt, None) is not None and opt not in allowed:
            users = sorted(k for k in _new_strategies()[0] if opt in (_strategy_class(k).cli_options or ()))
            raise UsageError(f"topology new {s}: {flag} does not apply to {s} (it applies to {', '.join(users)})")
    if not cls.cli_hashes and (args.algorithm is not None or args.seed is not None):
        raise UsageError(f"topology new {s}: --algorithm/--seed do not apply: {s} hashes keys its own way")
    if cls.cli_requires is not None:
        needed, how = cls.cli_requires
        if any(getattr(args, opt) is None for opt in needed):
            raise UsageError(f"topology new {s}: give {how}")


def _make_router(args: argparse.Namespace) -> Any:
    from . import routing
    from .hashing import Hasher

    s = _new_strategies()[1].get(args.strategy, args.strategy)
    cls = _strategy_class(s)
    _check_strategy_options(args, s, cls)
    shards: list[str] = _split_ids(args.shards, "--shards") if args.shards else []
    if not shards and cls.cli_needs_shards:
        raise UsageError(f"topology new {s}: give --shards a,b,c")
    weights = _parse_weights(args.shard_weights)
    if weights is not None and shards:
        unknown = sorted(set(weights) - set(shards))
        if unknown:
            raise UsageError(f"--shard-weights: {', '.join(map(repr, unknown))} not among --shards")
    hasher = None
    if cls.cli_hashes:
        hasher = Hasher(args.algorithm or "xxh3_64", seed=0 if args.seed is None else args.seed)
    try:
        r = cls.from_cli(shards, args, weights=weights, hasher=hasher, load=_load_router)
    except routing.TopologyOptionError as exc:
        raise UsageError(str(exc)) from None
    if args.key_type is not None:
        r = r.with_key_type(args.key_type)
    zones = _parse_zones(args.zones)
    if zones is not None:
        r = r.with_zones(zones)
    return r


def _describe_hashing(r: Any) -> str:
    """How a router turns a key into a position: the shardhash hasher, or the
    system's own hashing for compat routers."""
    return str(r.hashing_description())


def _ownership(r: Any) -> list[tuple[str, ...]]:
    """Rows of `topology show`: shard, target share, share of the hash space
    it really owns, and what it owns (vnodes, buckets, slots, ranges)."""
    from .plan import target_shares

    shares = target_shares(r)
    owned = r.ownership()
    space = None if owned is None else dict(zip(r.shards, owned[0]))
    what = {s: "" for s in r.shards} if owned is None else dict(zip(r.shards, owned[1]))
    rows: list[tuple[str, ...]] = []
    for s in r.shards:
        rows.append((s, f"{shares[s]:.4f}", "" if space is None else f"{space[s]:.4f}",
                     "" if space is None or not shares[s] else f"{space[s] / shares[s]:.3f}", what[s]))
    return rows


def _show(r: Any, path: str) -> None:
    from ._keytypes import key_type_name

    _out(f"file:        {path}")
    _out(f"strategy:    {r.type_name} ({type(r).__name__})")
    _out(f"version:     {r.version}")
    _out(f"fingerprint: {r.fingerprint}")
    _out(f"hashing:     {_describe_hashing(r)}")
    _out(f"key type:    {key_type_name(r.key_type) if r.key_type is not None else 'not declared (give --id-type)'}")
    details = []
    for attr, label in (("vnodes", "vnodes per unit weight"), ("bucket_count", "buckets"),
                        ("table_size", "table size")):
        v = getattr(r, attr, None)
        if isinstance(v, int):
            details.append(f"{label} {v:,}")
    if details:
        _out(f"params:      {', '.join(details)}")
    _out(f"shards:      {len(r.shards)}")
    if r.zones is not None:
        by_zone: dict[str, list[str]] = {}
        for sid, z in r.zones.items():
            by_zone.setdefault(z, []).append(sid)
        _out(f"zones:       {len(by_zone)} ({'; '.join(f'{z}: {len(v)}' for z, v in by_zone.items())})")
    _out("")
    rows = _ownership(r)
    _out(_table(["shard", "target share", "owned share", "owned/target", "owns"], rows))
    if rows and not rows[0][2]:
        _out("(owned share: not a fixed part of the hash space for this strategy; the target share is what it aims at)")


def cmd_topology(args: argparse.Namespace) -> int:
    from .routing import load_router

    if args.action == "new":
        if args.output is not None:
            _refuse_overwrite(args.output, [(getattr(args, k), "--" + k + " topology") for k in ("base", "old", "new")])
        try:
            r = _make_router(args)
        except (ValueError, TypeError, OverflowError) as exc:
            raise UsageError(f"topology new: {_msg(exc)}") from None
        _write_text(args.output, r.to_json())
        return 0
    if args.action == "validate" and args.fix:
        doc = _read_doc(args.file)
        if isinstance(doc, dict):
            doc.pop("fingerprint", None)
        try:
            r = load_router(doc)
        except (ValueError, TypeError, KeyError, OverflowError) as exc:
            raise UsageError(f"{args.file}: invalid topology: {_msg(exc)}") from None
        _write_text(args.file, r.to_json())
        print(f"{args.file}: re-sealed, fingerprint {r.fingerprint}", file=sys.stderr)
        return 0
    r = _load_router(args.file)
    if args.action == "validate":
        if args.json:
            _out(r.to_json())
            return 0
        _out(f"{args.file}: valid {r.type_name} topology, {len(r.shards)} shards, "
             f"version {r.version}, fingerprint {r.fingerprint}")
        return 0
    if args.action == "show":
        if args.json:
            _write_json(r.to_dict())
            return 0
        _show(r, args.file)
        return 0
    # add / remove: planners
    from . import plan

    _refuse_overwrite(args.output, [(args.file, "topology being changed")])
    ids = _split_ids(args.shards, "--shards")
    try:
        if args.action == "add":
            new, steps = plan.add_shards(r, ids, weights=_parse_weights(args.shard_weights),
                                         zones=_parse_zones(args.zones))
        else:
            new, steps = plan.remove_shards(r, ids)
        if r.key_type is not None and new.key_type != r.key_type:
            new = new.with_key_type(r.key_type)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"topology {args.action}: {_msg(exc)}") from None
    replica_rep = _replica_report(r, new, args.replicas, None) if args.replicas is not None else None
    _write_text(args.output, new.to_json())
    print(f"{len(steps)} migration steps; run `{PROG} plan` on the two topologies for details", file=sys.stderr)
    _warn_excess_moves(r, new)
    if replica_rep is not None:
        for line in _replica_lines(replica_rep, True):
            print(line, file=sys.stderr)
    return 0


# ------------------------------------------------------------------ route


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
    from ._keytypes import parse_text

    if isinstance(kt, tuple):
        import csv as _csv

        parts = next(_csv.reader([text]))
        if len(parts) != len(kt):
            raise ValueError(f"key {text!r} has {len(parts)} part(s), the key type has {len(kt)} (comma separated)")
        return tuple(parse_text(p, k) for p, k in zip(parts, kt))
    return parse_text(text, kt)


def _explain(router: Any, key: Any) -> list[str]:
    return [f"topology: {router.type_name} version {router.version}, fingerprint {router.fingerprint[:16]}",
            f"hashing:  {_describe_hashing(router)}", *router.explain(key)]


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
            raise UsageError(f"--key {text!r}: {_msg(exc)}") from None
        if args.explain:
            _out(f"{text} -> {shard}")
            for line in _explain(router, key):
                _out("  " + line)
        else:
            rows.append((text, shard))
    if rows:
        _out(_table(["key", "shard"], rows))
    return 0


def _out_format(path: str) -> str:
    from .io import detect_format

    if path == "-":
        return "csv"
    fmt = detect_format(path)
    if fmt not in ("csv", "parquet"):
        raise UsageError(f"{path}: route writes CSV (.csv, .tsv, or - for stdout) or Parquet (.parquet); "
                         f"the name says {fmt}")
    return fmt


def cmd_route(args: argparse.Namespace) -> int:
    router = _load_router(args.topology)
    kt = _key_type(args, router)
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
    _refuse_overwrite(args.output, [(args.ids, "ids file"), (args.topology, "topology")])
    with contextlib.ExitStack() as stack:
        path = _ids_path(args, args.ids, stack)
        reader = _open_ids(args, path, id_type=kt)
        names = list(reader.columns or ["id"])
        if args.shard_column in names:
            raise UsageError(f"--shard-column {args.shard_column!r}: the input already has a column of that name; "
                             "choose another with --shard-column")
        n = _route_file(router, reader, args, fmt_out, names)
    if args.output != "-":
        print(f"routed {n:,} ids to {args.output}", file=sys.stderr)
    return 0


def _route_file(router: Any, reader: Any, args: argparse.Namespace, fmt_out: str, names: list[str]) -> int:
    from .io import ChunkWriter, atomic_output

    shards = list(router.shards)
    src_label = args.ids

    def routed() -> Iterator[tuple[Any, Any, np.ndarray]]:
        chunks = reader.iter_records(keep=True)
        while True:
            try:
                chunk, rec = next(chunks)
            except StopIteration:
                return
            except (ValueError, TypeError, OverflowError) as exc:
                raise UsageError(_file_error(src_label, reader.path, exc)) from None
            try:
                idx = router.route_many(chunk.ids, threads=args.threads)
            except (ValueError, TypeError, OverflowError) as exc:
                raise UsageError(f"{src_label}: cannot route these ids: {_msg(exc)}") from None
            yield chunk, rec, idx

    n = 0
    with _ids_progress(reader, "routing", not args.quiet) as advance:
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
            try:
                f = sys.stdout if to_stdout else open(atomic.tmp, "w", encoding="utf-8", newline="")  # type: ignore[union-attr]
                try:
                    if reader.format == "csv":
                        if reader.header:
                            f.write(_append_cell(reader.header_text or "", _csv_cell(args.shard_column, delim), delim))
                    else:
                        f.write(f"id{delim}{_csv_cell(args.shard_column, delim)}\n")
                    for _chunk, raws, idx in routed():
                        if reader.format == "csv":
                            f.writelines([_append_cell(r, labels[i], delim) for r, i in zip(raws, idx.tolist())])
                        else:
                            f.writelines([_csv_cell(r.rstrip("\r\n"), delim) + delim + labels[i] + "\n"
                                          for r, i in zip(raws, idx.tolist())])
                        n += len(idx)
                        advance(len(idx))
                finally:
                    if not to_stdout:
                        f.close()
            except BaseException:
                if atomic is not None:
                    atomic.abort()
                raise
            if atomic is not None:
                atomic.commit()
            return n
        try:
            writer = ChunkWriter(args.output, format=fmt_out) if args.output != "-" else None
        except (ValueError, FileNotFoundError, ImportError) as exc:
            raise UsageError(_msg(exc)) from None
        if writer is None:  # Parquet/Arrow/npy to stdout: CSV through the csv module
            import csv as _csv

            w = _csv.writer(sys.stdout, lineterminator="\n")
            w.writerow(names + [args.shard_column])
            for chunk, rec, idx in routed():
                cols = _record_columns(reader, chunk, rec, names)
                w.writerows(zip(*(_tolist(cols[k]) for k in names), (shards[i] for i in idx.tolist())))
                n += len(idx)
                advance(len(idx))
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
    from .io import _header_name

    out = {}
    for j, raw in enumerate(rec.schema.names):
        col = rec.column(j)
        out[_header_name(raw)] = col
    return out


# ------------------------------------------------------------------- plan


# Strategies whose add/remove moves only the ideal share of keys.
_MINIMAL_MOVERS = ("rendezvous", "ring", "memento (jump that can lose any shard)", "multiprobe", "buckets (bucket)",
                   "maglev (close to it)")


def _moved_share_estimate(old: Any, new: Any) -> float | None:
    from . import plan

    try:
        return float(sum(m.share for m in plan.moved_ranges(old, new)))
    except (ValueError, TypeError, NotImplementedError):
        return None


def _plan_warnings(old: Any, new: Any, moved: float | None) -> list[str]:
    """Warnings a user should see before executing a plan."""
    from . import plan

    out = []
    common = set(old.shards) & set(new.shards)
    if not common:
        out.append("the two topologies have no shard in common: every key moves; they are unrelated "
                   "topologies, not a resharding of one another")
        return out
    try:
        same_hashing = old.hasher == new.hasher
    except AttributeError:  # pragma: no cover
        same_hashing = True
    if not same_hashing and old.routes_on_hash and new.routes_on_hash:
        out.append("the two topologies hash keys differently (algorithm, seed or codec): nearly every key "
                   "moves; keep the hasher when resharding")
    ideal = plan.ideal_fraction(old, new)
    if moved is not None and moved > 1.5 * ideal + 1e-9:
        kind = old.type_name
        out.append(f"this change moves {_pct(moved)} of keys where {_pct(ideal)} is the least any strategy must "
                   f"move ({moved / ideal if ideal else math.inf:.1f}x); {kind} moves more than needed here. "
                   f"Strategies that move only the ideal share: {', '.join(_MINIMAL_MOVERS)}")
    return out


def _warn_excess_moves(old: Any, new: Any) -> None:
    for w in _plan_warnings(old, new, _moved_share_estimate(old, new)):
        print(f"{PROG}: warning: {w}", file=sys.stderr)


def _balance(router: Any, load: dict[str, float]) -> dict[str, Any]:
    """Load against the router's target share (weights count): 1.0 is on target."""
    from .plan import target_shares

    tgt = target_shares(router)
    tot = sum(load.values()) or 1.0
    per = {s: (load.get(s, 0.0) / tot) / tgt[s] if tgt[s] else None for s in router.shards}
    vals = [v for v in per.values() if v is not None]
    return {"load_over_target": per, "max_load_over_target": max(vals) if vals else None}


def cmd_plan(args: argparse.Namespace) -> int:
    from . import plan

    old = _load_router(args.old)
    new = _load_router(args.new)
    if args.weights and not args.ids:
        raise UsageError("--weights needs --ids")
    if args.moves and not args.ids:
        raise UsageError("--moves needs --ids (per-key moves are written for the ids given)")
    for o in (args.moves, args.plot):
        _refuse_overwrite(o, [(args.ids, "ids file"), (args.old, "old topology"), (args.new, "new topology")])
    if args.moves and args.plot:
        from .io import same_file

        if same_file(args.moves, args.plot):
            raise UsageError("--moves and --plot name the same file")
    out: dict[str, Any] = {"old": args.old, "new": args.new, "old_version": old.version,
                           "new_version": new.version, "ids": args.ids, "report": None,
                           "ideal_fraction": plan.ideal_fraction(old, new), "moved_share": None,
                           "moved_ranges": None, "balance": None, "steps": None, "steps_error": None,
                           "warnings": []}
    report = None
    ranges = None
    if args.ids:
        kt = _key_type(args, old, new)
        with contextlib.ExitStack() as stack:
            path = _ids_path(args, args.ids, stack)
            reader = _open_ids(args, path, id_type=kt, weights=args.weights)
            writer = None
            if args.moves:
                col = reader.column if isinstance(reader.column, str) else "id"
                try:
                    writer = plan.MovesWriter(args.moves, old, new, id_column=col or "id",
                                              weight_column=args.weights or "weight")
                except (ValueError, FileNotFoundError, ImportError) as exc:
                    raise UsageError(_msg(exc)) from None
            try:
                with _ids_progress(reader, "planning", not args.quiet) as advance:
                    report = plan.diff(old, new, reader, chunk_size=args.chunk_size, threads=args.threads,
                                       on_chunk=writer, progress=advance, replicas=args.replicas)
            except (ValueError, TypeError, OverflowError) as exc:
                if writer is not None:
                    writer.abort()
                raise UsageError(_file_error(args.ids, path, exc)) from None
            except BaseException:
                if writer is not None:
                    writer.abort()
                raise
            if writer is not None:
                writer.close()
        out["report"] = report.to_dict()
        out["moved_share"] = report.moved_fraction
        load_b = dict(zip(report.old_shards, map(float, report.before)))
        load_a = dict(zip(report.new_shards, map(float, report.after)))
        out["balance"] = {"before": _balance(old, load_b), "after": _balance(new, load_a)}
    try:
        steps = plan.plan_steps(old, new, max_step_share=args.max_step_share,
                                total_keys=report.total if report else None,
                                total_bytes=(report.weighted_matrix.sum() if report is not None
                                             and report.weighted_matrix is not None else None))
    except plan.TooManySteps as exc:
        raise UsageError(f"--max-step-share: {_msg(exc).removeprefix('max_step_share ')}") from None
    except ValueError as exc:
        steps = None
        out["steps_error"] = _msg(exc)
    if steps is not None and report is not None:
        # Share each pair's exact key counts out over its steps.
        pair = {(m["source"], m["destination"]): m for m in report.moves()}
        tot: dict[tuple[str, str], float] = {}
        for st in steps:
            tot[(st.source, st.destination)] = tot.get((st.source, st.destination), 0.0) + st.share
        for st in steps:
            p = (st.source, st.destination)
            m = pair.get(p)
            frac = st.share / tot[p] if tot[p] else 0.0
            st.est_keys = (m["keys"] if m else 0) * frac
            if m is not None and "weight" in m:
                st.est_bytes = m["weight"] * frac
    if report is None:
        try:
            ranges = plan.moved_ranges(old, new)
        except ValueError as exc:
            raise UsageError(f"{_msg(exc)}; give --ids FILE to plan over real ids") from None
        out["moved_share"] = sum(m.share for m in ranges)
        out["moved_ranges"] = [m.to_dict() for m in ranges]
        out["balance"] = {"before": _balance(old, _space_shares(old)), "after": _balance(new, _space_shares(new))}
    out["warnings"] = _plan_warnings(old, new, out["moved_share"])
    replica_rep = None
    if args.replicas is not None:
        replica_rep = report if report is not None else _replica_report(old, new, args.replicas, args.threads)
        out["replicas"] = replica_rep.to_dict()["replicas"]
        if report is None:
            out["replicas"]["sampled_ids"] = replica_rep.total
    if steps is not None:
        out["steps"] = [s.to_dict() for s in steps]
    if args.plot:
        _plot_plan(args.plot, old, new, report, ranges, args.weights)
    if args.json:
        _write_json(out)
        return 0
    _print_plan(old, new, report, ranges, steps, args, out)
    if replica_rep is not None:
        _out("")
        for line in _replica_lines(replica_rep, report is None):
            _out(line)
    return 0


def _print_plan(old: Any, new: Any, report: Any, ranges: Any, steps: Any, args: argparse.Namespace,
                out: dict[str, Any]) -> None:
    _out(f"old: {type(old).__name__} v{old.version} ({len(old.shards)} shards)   "
         f"new: {type(new).__name__} v{new.version} ({len(new.shards)} shards)")
    for w in out["warnings"]:
        _out(f"warning: {w}")
    bal = out["balance"]

    def _lt(b: dict[str, Any], s: str) -> str:
        v = b["load_over_target"].get(s)
        return "" if v is None else f"{v:.3f}"


    def _balance_line() -> None:
        if bal is not None:
            mb, ma = bal["before"]["max_load_over_target"], bal["after"]["max_load_over_target"]
            _out(f"balance, max load / target share (1.0 is on target; shard weights count): "
                 f"before {mb:.4f}  after {ma:.4f}")

    if report is not None:
        _out(report.summary().splitlines()[0])
        _balance_line()
        if report.weighted_matrix is not None:
            tot = float(report.weighted_matrix.sum())
            mw = report.moved_weight or 0.0
            _out(f"{args.weights}: {tot:,.0f} total, {mw:,.0f} moved ({(mw / tot if tot else 0):.2%})")
        _out("")
        _out("per shard (keys):")
        names = sorted(set(report.old_shards) | set(report.new_shards), key=lambda s: (s not in report.old_shards, s))
        before = dict(zip(report.old_shards, report.before.tolist()))
        after = dict(zip(report.new_shards, report.after.tolist()))
        _out(_table(["shard", "before", "after", "load/target before", "load/target after"],
                    [(s, f"{before.get(s, 0):,}", f"{after.get(s, 0):,}",
                      _lt(bal["before"], s) if s in old.shards else "",
                      _lt(bal["after"], s) if s in new.shards else "") for s in names]))
        _out("")
        _out("move matrix (rows: old shard, columns: new shard):")
        mrows = [[s] + [f"{int(v):,}" for v in report.matrix[i]] for i, s in enumerate(report.old_shards)]
        _out(_table(["old \\ new"] + list(report.new_shards), mrows))
    else:
        from . import plan

        share = sum(m.share for m in ranges)
        _out(f"hash space moved: {_pct(share)}   ideal: {_pct(plan.ideal_fraction(old, new))}")
        _balance_line()
        by_pair: dict[tuple[str, str], list[Any]] = {}
        for m in ranges:
            by_pair.setdefault((m.source, m.destination), []).append(m)
        _out(_table(["source", "destination", "pieces", "share"],
                    [(s, d, len(v), _pct(sum(x.share for x in v))) for (s, d), v in sorted(by_pair.items())]))
        if ranges and len(ranges) <= 20:
            _out("")
            _out(_table(["kind", "lo", "hi", "source", "destination", "share"],
                        [(m.kind if m.bucket is None else f"{m.kind} {m.bucket} mod {m.modulus}", m.lo, m.hi,
                          m.source, m.destination, _pct(m.share)) for m in ranges]))
    if steps:
        _out("")
        _out(f"steps ({len(steps)}, at most {args.max_step_share:.2%} of the hash space each):")
        shown = steps[: args.max_steps_shown]
        rows: list[tuple[Any, ...]] = []
        for st in shown:
            if st.buckets is not None:
                what = f"{len(st.buckets)} buckets"
                if len(st.buckets) <= 3:
                    what = "bucket " + ",".join(map(str, st.buckets))
            elif st.ranges is not None:
                what = f"{len(st.ranges)} ranges in {_bounds(st.lo, st.hi)}"
            else:
                what = _bounds(st.lo, st.hi)
            rows.append((st.order, st.kind, st.source, st.destination, what, _pct(st.share),
                         "" if st.est_keys is None else f"{st.est_keys:,.0f}"))
        _out(_table(["#", "kind", "source", "destination", "what", "share", "est. keys"], rows))
        if len(steps) > len(shown):
            _out(f"... {len(steps) - len(shown)} more (use --json for all)")
    elif steps is not None:
        _out("")
        _out("nothing moves")


def _space_shares(router: Any) -> dict[str, float]:
    """Share of the hash space each shard owns (exact for tables and ranges)."""
    from .plan import target_shares

    t = router.bucket_table()
    if t is not None:
        c = np.bincount(t, minlength=len(router.shards)) / len(t)
        return {s: float(v) for s, v in zip(router.shards, c)}
    rng = router.hash_ranges()
    if rng is not None:
        out = {s: 0.0 for s in router.shards}
        for lo, hi, i in rng:
            out[router.shards[i]] += (hi - lo + 1) / 2**64
        return out
    return target_shares(router)


def _compact(v: float) -> str:
    """12, 1.2k, 3.4M; shares as percentages."""
    a = abs(v)
    if a == 0:
        return "0"
    if a < 1:
        return f"{v:.1%}" if a >= 0.001 else f"{v:.0e}"
    for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            return f"{v / div:.3g}{suf}"
    return f"{v:.0f}"


def _thin_ticks(ax_set: Callable[..., Any], labels: Sequence[str], max_labels: int, **kw: Any) -> None:
    n = len(labels)
    step = max(1, math.ceil(n / max_labels))
    pos = list(range(0, n, step))
    ax_set(pos, [labels[i] for i in pos], **kw)


def _plot_plan(path: str, old: Any, new: Any, report: Any, ranges: Any, weights_column: str | None = None) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("--plot needs matplotlib; install it with: pip install 'shardhash[plot]'") from None
    from .io import atomic_output
    from .plan import target_shares

    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{path}: directory {parent!r} does not exist")
    so, sn = list(old.shards), list(new.shards)
    if report is not None:
        weighted = report.weighted_matrix is not None
        mat = (report.weighted_matrix if weighted else report.matrix).astype(float)
        before = {s: float(mat[i].sum()) for i, s in enumerate(so)}
        after = {s: float(mat[:, j].sum()) for j, s in enumerate(sn)}
        unit = weights_column if weighted and weights_column else "keys"
    else:
        mat = np.zeros((len(so), len(sn)))
        ta = _space_shares(old)
        for i, s in enumerate(so):
            if s in sn:
                mat[i, sn.index(s)] = ta[s]
        for m in ranges:
            i, j = so.index(m.source), sn.index(m.destination)
            mat[i, j] += m.share
            if m.source in sn:
                mat[i, sn.index(m.source)] -= m.share
        before = {s: float(mat[i].sum()) for i, s in enumerate(so)}
        after = {s: float(mat[:, j].sum()) for j, s in enumerate(sn)}
        unit = "share of hash space"
    # The move matrix shows what moves: a key that stays (same shard id) is
    # masked, so the colour scale is set by moved keys alone.
    moved = mat.copy()
    col_of = {s: j for j, s in enumerate(sn)}
    for i, s in enumerate(so):
        if s in col_of:
            moved[i, col_of[s]] = np.nan
    # Many shards: sum blocks of shards so each cell stays visible.
    max_cells = 60
    gr = max(1, math.ceil(len(so) / max_cells))
    gc = max(1, math.ceil(len(sn) / max_cells))
    rlabels, clabels = so, sn
    if gr > 1 or gc > 1:
        nr, nc = math.ceil(len(so) / gr), math.ceil(len(sn) / gc)
        blk = np.full((nr, nc), np.nan)
        for bi in range(nr):
            for bj in range(nc):
                cell = moved[bi * gr:(bi + 1) * gr, bj * gc:(bj + 1) * gc]
                if not np.all(np.isnan(cell)):
                    blk[bi, bj] = np.nansum(cell)
        moved = blk
        rlabels = [f"{so[bi * gr]}..{so[min(len(so), (bi + 1) * gr) - 1]}" if gr > 1 else so[bi] for bi in range(nr)]
        clabels = [f"{sn[bj * gc]}..{sn[min(len(sn), (bj + 1) * gc) - 1]}" if gc > 1 else sn[bj] for bj in range(nc)]
    names = list(dict.fromkeys(so + sn))
    n = len(names)
    x = np.arange(n)
    b = np.array([before.get(s, 0.0) for s in names])
    a = np.array([after.get(s, 0.0) for s in names])
    tgt_b, tgt_a = target_shares(old), target_shares(new)
    tb = np.array([tgt_b.get(s, 0.0) * float(b.sum()) for s in names])
    ta_ = np.array([tgt_a.get(s, 0.0) * float(a.sum()) for s in names])
    if n <= 60:
        width = max(12.0, 6 + 0.2 * n)
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(width, 6), gridspec_kw={"width_ratios": [1.4, 1]})
        ax1.bar(x - 0.2, b, 0.4, label="before")
        ax1.bar(x + 0.2, a, 0.4, label="after")
        ax1.scatter(x + 0.2, ta_, marker="_", s=max(60, 4000 / n), color="black", zorder=3,
                    label="target after (shard weights)")
        ax1.set_ylim(0, max(float(a.max(initial=0)), float(b.max(initial=0)), float(ta_.max(initial=0))) * 1.25 or 1)
        ax1.set_ylabel(unit)
        ax1.set_title(f"load per shard ({len(so)} -> {len(sn)} shards)")
        ax1.legend(fontsize="small", loc="upper center", ncol=3)
        ax1.set_xlim(-0.7, n - 0.3)
    else:
        # Too many shards for bars: each shard's load over its target share
        # (shard weights count), 1.0 on target.
        fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(14, 12), gridspec_kw={"height_ratios": [1, 1.6]})
        with np.errstate(divide="ignore", invalid="ignore"):
            rb = np.where(tb > 0, b / tb, np.nan)
            ra = np.where(ta_ > 0, a / ta_, np.nan)
        ax1.scatter(x, rb, s=6, label="before", alpha=0.7)
        ax1.scatter(x, ra, s=6, label="after", alpha=0.7)
        ax1.axhline(1.0, color="black", lw=0.8, ls="--", label="on target")
        ax1.set_ylabel(f"{unit} / target share")
        ax1.set_title(f"load over target per shard ({len(so)} -> {len(sn)} shards; shard weights count)")
        ax1.legend(fontsize="small", loc="upper right", ncol=3)
        ax1.set_xlim(-0.5, n - 0.5)
    _thin_ticks(ax1.set_xticks, names, 40, rotation=45 if n > 8 else 0, ha="right" if n > 8 else "center")
    cmap = matplotlib.colormaps["viridis"].copy()
    cmap.set_bad("#eeeeee")
    finite = moved[np.isfinite(moved)]
    vmax = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    im = ax2.imshow(np.ma.masked_invalid(moved), cmap=cmap, vmin=0, vmax=vmax, aspect="auto",
                    interpolation="nearest")
    nr, nc = moved.shape
    _thin_ticks(ax2.set_xticks, clabels, 30, rotation=45 if nc > 6 else 0, ha="right" if nc > 6 else "center")
    _thin_ticks(ax2.set_yticks, rlabels, 30)
    if nr * nc <= 400:
        fs = 9 if nr * nc <= 64 else 7
        for i in range(nr):
            for j in range(nc):
                v = moved[i, j]
                if np.isfinite(v) and v > 0:
                    ax2.text(j, i, _compact(v), ha="center", va="center", fontsize=fs,
                             color="white" if v < 0.6 * vmax else "black")
    ax2.set_xlabel("new shard" + (f" (blocks of {gc})" if gc > 1 else ""))
    ax2.set_ylabel("old shard" + (f" (blocks of {gr})" if gr > 1 else ""))
    ax2.set_title("moved " + unit + " (grey: stays on its shard)")
    fig.colorbar(im, ax=ax2, label="moved " + unit)
    fig.tight_layout()
    try:
        with atomic_output(path) as tmp:
            fig.savefig(tmp, dpi=100, format="png")
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot write the plot ({_msg(exc)})") from None
    finally:
        plt.close(fig)


# ---------------------------------------------------------------- analyze


def cmd_analyze(args: argparse.Namespace) -> int:

    if args.propose_hot_set and not args.topology:
        raise UsageError("analyze: --propose-hot-set needs --topology (the router whose shards the hot keys' "
                         "sub-keys are placed on)")
    router = _load_router(args.topology) if args.topology else None
    kt = _key_type(args, router)
    if kt is None and router is None:
        kt = "str"  # without a topology, ids are only counted: their exact text is the key
    measures = _analyze_measures(args)
    with contextlib.ExitStack() as stack:
        path = _ids_path(args, args.ids, stack)
        # One reader per numeric column (a reader carries one), read in
        # lockstep: the same file and chunk size give the same chunks.
        readers = [_open_ids(args, path, id_type=kt, weights=col) for _, col in measures] or \
            [_open_ids(args, path, id_type=kt)]
        return _analyze(args, readers, router, measures)


def _analyze_measures(args: argparse.Namespace) -> list[tuple[str, str]]:
    """``[(label, column)]`` of the numeric columns to add up: ``--weights``
    (labelled by its column), ``--bytes``, ``--requests``."""
    out: list[tuple[str, str]] = []
    for label, col in ((args.weights, args.weights), ("bytes", args.bytes), ("requests", args.requests)):
        if col is None:
            continue
        if label in [lab for lab, _ in out] or col in [c for _, c in out]:
            raise UsageError(f"analyze: column {col!r} given twice (--weights, --bytes, --requests "
                             "must name different columns)")
        out.append((label, col))
    return out


def _lockstep(readers: list[Any], path: str) -> Iterator[tuple[np.ndarray, list[np.ndarray | None]]]:
    """``(ids, [weights of each reader])`` per chunk of the first reader."""
    its = [iter(r) for r in readers]
    for first in its[0]:
        ws = [first.weights]
        for it in its[1:]:
            other = next(it, None)
            if other is None or len(other.ids) != len(first.ids):
                raise ValueError(f"{path}: the file changed while it was read")
            ws.append(other.weights)
        yield first.ids, ws


def _analyze(args: argparse.Namespace, readers: list[Any], router: Any, measures: list[tuple[str, str]]) -> int:
    from .analysis import HeavyHitters, imbalance

    labels = [lab for lab, _ in measures]
    # Hot keys by the first measure given (by count without one), and by
    # each other measure.
    hhs = [HeavyHitters(args.capacity) for _ in range(max(1, len(measures)))]
    total = 0
    sums = [0.0] * len(measures)
    n_sh = 0 if router is None else len(router.shards)
    counts = None if router is None else np.zeros(n_sh, dtype=np.int64)
    loads = [np.zeros(n_sh) for _ in measures] if router is not None else []
    reader = readers[0]
    t0 = time.perf_counter()
    try:
        with _ids_progress(reader, "analyzing", not args.quiet) as advance:
            for ids, ws in _lockstep(readers, reader.path):
                for j, hh in enumerate(hhs):
                    hh.update(ids, ws[j] if measures else None)
                total += len(ids)
                for j, w in enumerate(ws if measures else []):
                    if w is not None:
                        sums[j] += float(w.sum())
                if router is not None:
                    idx = router.route_many(ids, threads=args.threads)
                    assert counts is not None
                    counts += np.bincount(idx, minlength=n_sh)
                    for j, w in enumerate(ws if measures else []):
                        loads[j] += np.bincount(idx, weights=w, minlength=n_sh)
                advance(len(ids))
    except (ValueError, TypeError, OverflowError) as exc:
        raise UsageError(_file_error(args.ids, reader.path, exc)) from None
    elapsed = time.perf_counter() - t0
    out: dict[str, Any] = {"ids": args.ids, "rows": total, "seconds": elapsed}
    if args.weights:
        out["weight_total"] = sums[0]
    for lab, v in zip(labels, sums):
        if lab in ("bytes", "requests"):
            out[f"{lab}_total"] = v
    # Request rate: requests (or rows, one request each) per second of --duration.
    req_j = labels.index("requests") if "requests" in labels else None
    if args.duration is not None:
        out["duration"] = args.duration
        out["requests_per_second"] = (sums[req_j] if req_j is not None else total) / args.duration

    # Hot keys: only those whose guaranteed count exceeds the error bound
    # (below it, a key may be no more frequent than any other).
    def hot(hh: HeavyHitters, weighted: bool) -> tuple[list[tuple[Any, float, float]], list[dict[str, Any]]]:
        num: Callable[[float], Any] = (lambda v: float(v)) if weighted else (lambda v: int(round(v)))
        top = [(k, lo, hi) for k, lo, hi in hh.top(args.top) if lo > hh.error]
        return top, [{"key": k, "count_at_least": num(lo), "count_at_most": num(hi)} for k, lo, hi in top]

    tops = [hot(hh, bool(measures)) for hh in hhs]
    out["hot_keys"] = tops[0][1]
    out["hot_key_error_bound"] = float(hhs[0].error) if measures else int(round(hhs[0].error))
    if len(measures) > 1:
        out["hot_keys_by"] = {lab: {"hot_keys": t[1], "error_bound": float(hh.error)}
                              for lab, t, hh in zip(labels, tops, hhs)}
    proposed: dict[Any, int] | None = None
    if args.propose_hot_set:
        from .hotkeys import propose_hot_set

        assert router is not None  # checked by cmd_analyze
        proposed = propose_hot_set(hhs[0], router, headroom=args.headroom, capacity=args.capacity)
        out["proposed_hot_set"] = [[k, n] for k, n in proposed.items()]
    if router is not None:
        assert counts is not None
        shards_out: dict[str, dict[str, Any]] = {}
        for i, s in enumerate(router.shards):
            row: dict[str, Any] = {"keys": int(counts[i])}
            for lab, load in zip(labels, loads):
                row[lab] = float(load[i])
            if args.duration is not None:
                row["requests_per_second"] = float(loads[req_j][i] if req_j is not None else counts[i]) \
                    / args.duration
            shards_out[s] = row
        out["shards"] = shards_out
        out["imbalance"] = imbalance(counts)
        if args.weights:
            out["weighted_imbalance"] = imbalance(loads[0])
        for lab, load in zip(labels, loads):
            if lab in ("bytes", "requests"):
                out[f"{lab}_imbalance"] = imbalance(load)
    if args.json:
        _write_json(out)
        return 0
    head = f"{args.ids}: {total:,} ids"
    for lab, v in zip(labels, sums):
        head += f", {lab} total {v:,.0f}"
    if args.duration is not None:
        head += f", {out['requests_per_second']:,.1f} requests/s over {args.duration:g} s"
    _out(head)
    if router is not None:
        assert counts is not None
        rows = []
        for i, s in enumerate(router.shards):
            row_t = [s, f"{int(counts[i]):,}", f"{counts[i] / max(total, 1):.2%}"]
            for j, load in enumerate(loads):
                row_t.append(f"{load[i]:,.0f}")
                row_t.append(f"{load[i] / sums[j]:.2%}" if sums[j] else "-")
            if args.duration is not None:
                row_t.append(f"{out['shards'][s]['requests_per_second']:,.1f}")
            rows.append(row_t)
        _out("")
        cols = ["shard", "keys", "share"]
        for lab in labels:
            cols += [lab, "share"]
        if args.duration is not None:
            cols.append("requests/s")
        _out(_table(cols, rows))
        imb = out["imbalance"]
        line = f"max/mean {imb['max_mean']:.4f}   cv {imb['cv']:.4f}"
        for lab, load in zip(labels, loads):
            li = imbalance(load)
            line += f"   {lab}: max/mean {li['max_mean']:.4f} cv {li['cv']:.4f}"
        _out(line)
    for j, (top, _) in enumerate(tops):
        _out("")
        what = labels[j] if measures else "count"
        err = hhs[j].error
        _out(f"hot keys by {what} (Misra-Gries, {args.capacity} counters; true value in [low, high], "
             f"error <= {err:,.0f}):")
        if top:
            _out(_table(["key", "low", "high"], [(k, f"{lo:,.0f}", f"{hi:,.0f}") for k, lo, hi in top]))
        else:
            _out("(no key stands out: every count is within the error bound)")
    if proposed is not None:
        _out("")
        by = labels[0] if measures else "count"
        _out(f"proposed hot set (by {by}; one key at most {args.headroom:g} x the mean shard load on a shard):")
        if proposed:
            _out(_table(["key", "fan-out"], [(k, str(n)) for k, n in proposed.items()]))
        else:
            _out("(none: no key puts that much on one shard)")
    return 0


# ------------------------------------------------------------------- demo


def run_demo(n_keys: int, *, threads: int | None = None, seed: int = 2024,
             progress: Callable[..., None] | None = None) -> dict[str, Any]:
    """Route ``n_keys`` synthetic user ids over 4 shards then 5, per strategy."""
    from . import plan, routing

    rng = np.random.default_rng(seed)
    keys = rng.integers(1, 1 << 62, size=n_keys, dtype=np.int64)
    four = [f"shard-{i}" for i in range(4)]
    fifth = "shard-4"
    starts: list[tuple[str, Any]] = [
        ("modulo", routing.ModuloRouter(four)),
        ("jump", routing.JumpRouter(four)),
        ("ring", routing.RingRouter(four)),
        ("buckets", routing.BucketRouter(four, buckets=4096)),
        ("rendezvous", routing.RendezvousRouter(four)),
        # Maglev keeps its table size across changes (65537, the paper's size).
        ("maglev", routing.MaglevRouter(four, table_size=65537)),
    ]
    rows = []
    for k, (name, old) in enumerate(starts, 1):
        if progress is not None:
            progress(0, f"{name} ({k}/{len(starts)})")
        new, steps = plan.add_shards(old, fifth)
        t_route = math.inf
        for _ in range(2):  # best of two: the first run also warms caches up
            t0 = time.perf_counter()
            new.route_many(keys, threads=threads)
            t_route = min(t_route, time.perf_counter() - t0)
        t0 = time.perf_counter()
        rep = plan.diff(old, new, keys, threads=threads)
        t_diff = time.perf_counter() - t0
        rows.append({
            "strategy": name,
            "router": type(new).__name__,
            "moved_fraction": rep.moved_fraction,
            "ideal_fraction": rep.ideal_fraction,
            "moved_over_ideal": rep.moved_fraction / rep.ideal_fraction if rep.ideal_fraction else None,
            "max_mean_before": rep.imbalance_before["max_mean"],
            "max_mean_after": rep.imbalance_after["max_mean"],
            "cv_after": rep.imbalance_after["cv"],
            "route_mkeys_per_s": n_keys / t_route / 1e6 if t_route else None,
            "diff_seconds": t_diff,
            "steps": len(steps),
        })
        if progress is not None:
            progress(1)
    return {"keys": n_keys, "old_shards": four, "new_shards": four + [fifth], "strategies": rows}


def cmd_demo(args: argparse.Namespace) -> int:
    if args.migrate:
        from .migrate.demo import main as migrate_demo

        return migrate_demo(args)
    if args.keys < 1:
        raise UsageError(f"--keys must be >= 1, got {args.keys}")
    t0 = time.perf_counter()
    with _progress(6, f"demo over {args.keys:,} ids", not args.quiet, unit="strategies") as advance:
        res = run_demo(args.keys, threads=args.threads, progress=advance)
    res["seconds"] = time.perf_counter() - t0
    if args.json:
        _write_json(res)
        return 0
    _out(f"{args.keys:,} synthetic user ids; 4 shards -> 5 shards (one joins); "
         f"ideal: the new shard takes its fair share, {res['strategies'][0]['ideal_fraction']:.0%} of keys")
    _out("")
    rows = []
    for r in res["strategies"]:
        rows.append((
            r["strategy"],
            f"{r['moved_fraction']:.2%}",
            f"{r['moved_over_ideal']:.2f}x",
            f"{r['max_mean_after']:.4f}",
            f"{r['cv_after']:.4f}",
            f"{r['route_mkeys_per_s']:.0f}",
        ))
    _out(_table(["strategy", "moved", "vs ideal", "max/mean (5)", "cv (5)", "Mkeys/s"], rows))
    _out("")
    _out("moved: share of ids whose shard changes; max/mean: the fullest shard over the average "
         "(1.0 is perfect);")
    _out("Mkeys/s: route_many on the 5-shard router (hash + placement), this machine.")
    _out(f"total {res['seconds']:.1f} s")
    return 0


# ----------------------------------------------------------------- parser


def _common_ids(p: argparse.ArgumentParser, *, required_type: bool = True) -> None:
    p.add_argument("--column", help="id column name; for a compound key type, the columns, comma separated; "
                   "without a header, column numbers (1, 2, ...) (default: the first column(s) that are "
                   "not the weights column)")
    p.add_argument("--format", choices=["csv", "parquet", "arrow", "npy", "text"],
                   help="file format (default: from the file name: .csv/.tsv[.gz], .parquet/.pq, "
                   ".arrow/.feather/.ipc/.arrows, .npy, anything else is text, one id per line)")
    p.add_argument("--id-type", type=_id_type_arg, default=None, metavar="TYPE",
                   help="key type of the ids: int, str, bytes (hex), uuid, or a comma-separated list for a "
                   "compound key; must agree with the topology's key_type when it declares one "
                   + ("(default: the topology's key_type; CSV and text ids are never guessed)" if required_type
                      else "(default: the topology's key_type, else str)"))
    p.add_argument("--delimiter", help="CSV field delimiter (default: tab for .tsv, else detected from the "
                   "header line among , ; tab |)")
    p.add_argument("--no-header", action="store_true", help="the CSV file has no header row "
                   "(default: the first row is the header)")
    p.add_argument("--chunk-size", type=_positive_int, default=1 << 20, help="ids read per chunk")


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    return v


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number > 0")
    return v


def _fraction(text: str) -> float:
    v = _positive_float(text)
    if v > 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be in (0, 1]")
    return v


def _seed(text: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= v < 1 << 64:
        raise argparse.ArgumentTypeError(f"{text} is out of range: a seed is an integer in [0, 2**64-1]")
    return v


def _share(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (0 < v <= 1):
        raise argparse.ArgumentTypeError(f"{text!r} must be in (0, 1]")
    return v


@command("demo")
def _build_demo(sub: Any, common: argparse.ArgumentParser) -> None:
    d = sub.add_parser("demo", parents=[common], help="compare strategies when a fifth shard joins four",
                       description="Route synthetic user ids over 4 shards, add a fifth, and compare how many "
                       "keys each strategy moves, how even the load stays and how fast it routes.")
    d.add_argument("--keys", type=_positive_int, default=10_000_000, help="number of synthetic ids")
    d.add_argument("--json", action="store_true", help="machine-readable output (default: a table)")
    d.add_argument("--migrate", action="store_true",
                   help="instead: a live migration on SQLite shards under eight writers (docs/migrate.md)")
    d.set_defaults(func=cmd_demo)


@command("migrate")
def _build_migrate(sub: Any, common: argparse.ArgumentParser) -> None:
    from .migrate import cli as migrate_cli  # the `migrate` subcommand lives with its package

    migrate_cli.add_parser(sub, [common])


@command("topology")
def _build_topology(sub: Any, common: argparse.ArgumentParser) -> None:
    t = sub.add_parser("topology", help="write, print, check or change topology documents",
                       description="Topology documents are versioned, fingerprinted JSON (docs/routers.md).")
    tsub = t.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    tsub.required = True
    names, aliases = _new_strategies()
    strategies = sorted(names) + sorted(aliases)
    tn = tsub.add_parser("new", help="write a new topology document",
                         description="Write a new topology for STRATEGY: shardhash's own routers (modulo, jump, "
                         "memento, ring, multiprobe, bounded, rendezvous, maglev, buckets, hashrange, range, "
                         "directory, watermark) or a "
                         "system's own placement (redis_cluster, vitess, citus, postgres_hash_partition, "
                         "ketama, cassandra_token, mongo_hashed). Options that do not apply to the strategy "
                         "are errors.")
    tn.add_argument("strategy", choices=strategies, metavar="STRATEGY", help=", ".join(sorted(names)))
    tn.add_argument("--shards", help="comma-separated logical shard ids (every strategy but directory and "
                    "watermark)")
    tn.add_argument("--key-type", type=_id_type_arg, default=None, metavar="TYPE",
                    help="declare the key type in the document: int, str, bytes, uuid, or a comma-separated "
                    "list for a compound key (default: not declared; readers then need --id-type)")
    tn.add_argument("--shard-weights", help="id=weight,... (ring, bounded, rendezvous, maglev, buckets, ketama) "
                    "(default: equal weights)")
    tn.add_argument("--vnodes", type=_positive_int, default=None,
                    help="ring, bounded: tokens per unit weight (default 256); cassandra_token: tokens per node "
                    "(default 1)")
    tn.add_argument("--buckets", type=_positive_int, default=None, help="buckets: bucket count (default 4096)")
    tn.add_argument("--table-size", type=_positive_int, default=None,
                    help="maglev: table size, a prime (default: the smallest prime >= 100 x shards, "
                    "at least 65537)")
    tn.add_argument("--probes", type=_positive_int, default=None,
                    help="multiprobe: probes per key, 1 to 64 (default 21)")
    tn.add_argument("--balance-factor", type=_positive_int, default=None, metavar="PERCENT",
                    help="bounded: the load cap in percent of the average, >= 100 (default 125, i.e. "
                    "1 + eps = 1.25)")
    tn.add_argument("--splits", help="range: the n-1 split keys, comma separated (needs --key-type int or str)")
    tn.add_argument("--base", metavar="FILE", help="directory: the topology keys without an override follow")
    tn.add_argument("--old", metavar="FILE", help="watermark: the topology below the watermark")
    tn.add_argument("--new", metavar="FILE", help="watermark: the topology at and above the watermark")
    tn.add_argument("--watermark", type=int, default=None, help="watermark: the first key routed by --new")
    tn.add_argument("--vindex", help="vitess: the vindex (default: hash)")
    tn.add_argument("--pg-type", help="citus: the distribution column type; postgres_hash_partition: the "
                    "partition key types, comma separated (default: bigint)")
    tn.add_argument("--flavor", help="ketama: libketama or another flavor (default: libketama)")
    tn.add_argument("--cql-type", help="cassandra_token: the partition key CQL type(s), comma separated "
                    "(default: blob)")
    tn.add_argument("--algorithm", default=None, help="hash algorithm of shardhash's own strategies "
                    "(default: xxh3_64)")
    tn.add_argument("--seed", type=_seed, default=None, help="hash seed, 0 to 2**64-1 (default: 0)")
    tn.add_argument("--zones", help="id=zone,... the failure domain of every shard, kept in the document; "
                    "replica lists put no two replicas in one zone (default: no zones)")
    tn.add_argument("-o", "--output", help="file to write (default: stdout)")
    sh = tsub.add_parser("show", help="print a topology: hashing, key type, ownership per shard",
                         description="Print a topology: its strategy, version, hashing (a compat router's own), "
                         "key type, parameters, and per shard the target share, the share of the hash space it "
                         "really owns and what it owns (buckets, slots, ranges).")
    sh.add_argument("file")
    sh.add_argument("--json", action="store_true", help="print the document, indented (default: a summary)")
    va = tsub.add_parser("validate", help="check a topology document",
                         description="Check a topology document strictly (fields, types, fingerprint).")
    va.add_argument("file")
    va.add_argument("--json", action="store_true", help="print the canonical document (default: one line)")
    va.add_argument("--fix", action="store_true", help="re-seal an edited document: rewrite it with the "
                    "fingerprint of its content (default: only check)")
    for name, helptext in (("add", "plan adding shards: write the new topology"),
                           ("remove", "plan removing shards: write the new topology")):
        x = tsub.add_parser(name, help=helptext, description=helptext + " (version + 1); the number of "
                            "migration steps goes to stderr, with a warning when far more keys move than needed.")
        x.add_argument("file")
        x.add_argument("--shards", required=True, help="comma-separated shard ids")
        if name == "add":
            x.add_argument("--shard-weights", help="id=weight,... for the new shards (default: weight 1)")
            x.add_argument("--zones", help="id=zone,... for the new shards (required when the topology has zones)")
        x.add_argument("--replicas", type=_positive_int, default=None, metavar="N",
                       help="also print how many (key, replica) placements of N-replica lists move, "
                       f"counted over {_REPLICA_SAMPLE:,} synthetic ids (default: not counted)")
        x.add_argument("-o", "--output", help="file to write (default: stdout)")
    t.set_defaults(func=cmd_topology)


@command("route")
def _build_route(sub: Any, common: argparse.ArgumentParser) -> None:
    r = sub.add_parser("route", parents=[common], help="which shard owns each id: a file, stdin, or --key",
                       description="Add a shard column to an ids file (every input column is kept; CSV records "
                       "are copied as written), or print the owner of the keys given with --key.")
    r.add_argument("topology")
    r.add_argument("ids", nargs="?", help="ids file, or - for stdin (default format there: text, one id per line)")
    r.add_argument("-o", "--output", help="output file: .csv/.tsv or .parquet; - writes CSV to stdout "
                   "(required with an ids file)")
    r.add_argument("--key", action="append", metavar="ID", help="route one key (repeatable); a compound key "
                   "is comma separated")
    r.add_argument("--explain", action="store_true", help="with --key: the hash, bucket/slot/range and topology "
                   "version behind each answer")
    r.add_argument("--shard-column", default="shard", help="name of the added column")
    _common_ids(r)
    r.set_defaults(func=cmd_route)


@command("plan")
def _build_plan(sub: Any, common: argparse.ArgumentParser) -> None:
    pl = sub.add_parser("plan", parents=[common], help="what moves from one topology to another",
                        description="Compare two topologies: the share of the hash space (or of the given ids) "
                        "that changes owner, the balance after, and ordered migration steps.")
    pl.add_argument("old")
    pl.add_argument("new")
    pl.add_argument("--ids", help="ids file to count moves over (default: the hash-space view, no ids)")
    pl.add_argument("--weights", metavar="COLUMN", help="numeric column to weigh moves by (bytes, requests) "
                    "(default: every id counts 1)")
    pl.add_argument("--json", action="store_true", help="machine-readable output (default: tables)")
    pl.add_argument("--moves", metavar="FILE", help="write moved ids (id, source, destination) to .parquet/.csv "
                    "(default: not written)")
    pl.add_argument("--plot", metavar="FILE.png", help="draw load before/after and the move matrix "
                    "(default: no plot)")
    pl.add_argument("--max-step-share", type=_share, default=0.02, help="cap per step, share of the hash space")
    pl.add_argument("--max-steps-shown", type=_positive_int, default=30, help="steps printed in the table")
    pl.add_argument("--replicas", type=_positive_int, default=None, metavar="N",
                    help="also count the (key, replica) placements of N-replica lists that move, per shard in "
                    f"and out (over --ids, else {_REPLICA_SAMPLE:,} synthetic ids) (default: not counted)")
    _common_ids(pl)
    pl.set_defaults(func=cmd_plan)


@command("analyze")
def _build_analyze(sub: Any, common: argparse.ArgumentParser) -> None:
    a = sub.add_parser("analyze", parents=[common], help="load, skew and hot keys of an ids file",
                       description="Count ids, find hot keys (Misra-Gries heavy hitters) and, with --topology, "
                       "the load per shard: by count, and by bytes, requests and request rate when those "
                       "columns (and --duration) are given.")
    a.add_argument("ids", help="ids file, or - for stdin")
    a.add_argument("--topology", help="also count ids per shard of this topology (default: no per-shard load)")
    a.add_argument("--weights", metavar="COLUMN", help="numeric column to weigh keys by: load per shard and hot "
                   "keys by it (default: counts)")
    a.add_argument("--bytes", metavar="COLUMN", help="column of each row's size in bytes: load by bytes per shard "
                   "and hot keys by bytes (default: none)")
    a.add_argument("--requests", metavar="COLUMN", help="column of each row's request count: load by requests per "
                   "shard and hot keys by requests (default: none)")
    a.add_argument("--duration", metavar="SECONDS", type=_positive_float,
                   help="time the rows cover: reports requests per second, per shard and in all (the "
                   "--requests column, or one request per row without it) (default: no rates)")
    a.add_argument("--propose-hot-set", action="store_true",
                   help="with --topology: propose a hot set {key: fan-out} for a HotKeyRouter from the hot keys "
                   "(by the first of --weights/--bytes/--requests, else by count)")
    a.add_argument("--headroom", type=_fraction, default=0.5,
                   help="with --propose-hot-set: the share of the mean per-shard load one key may put on a "
                   "shard (default: 0.5)")
    a.add_argument("--top", type=_positive_int, default=10, help="hot keys to show at most")
    a.add_argument("--capacity", type=_positive_int, default=10_000, help="heavy-hitter counters")
    a.add_argument("--json", action="store_true", help="machine-readable output (default: tables)")
    _common_ids(a, required_type=False)
    a.set_defaults(func=cmd_analyze)


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    p = _Parser(prog=PROG, description="Which shard owns this key? Routing, migration plans and analysis.")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    common = _Parser(add_help=False)
    common.add_argument("--threads", type=_positive_int, default=None,
                        help="threads (default: all cores for big inputs)")
    common.add_argument("-q", "--quiet", action="store_true", help="no progress bars (default: bars on a terminal)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for build in _COMMANDS.values():
        build(sub, common)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    from .engines_cli import main as engines_main  # --engine dask|spark|ray
    from .engines_cli import wants_engine
    if wants_engine(argv):
        return engines_main(argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return int(args.func(args))
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help / --version (printed); a message: print it
        if isinstance(exc.code, int) or exc.code is None:
            return int(exc.code or 0)
        print(exc.code if str(exc.code).startswith(PROG) else f"{PROG}: error: {exc.code}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except (OSError, MemoryError) as exc:
        print(f"{PROG}: error: {_msg(exc)}", file=sys.stderr)
        return 1
    except ImportError as exc:
        print(f"{PROG}: error: {_msg(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - never a traceback
        print(f"{PROG}: internal error: {type(exc).__name__}: {_msg(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
