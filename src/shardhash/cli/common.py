"""What every ``shardhash`` command shares: the error type, the parser class,
the command registry, output and progress helpers, input readers, argument
types and the option groups more than one command takes."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn

import numpy as np

PROG = "shardhash"


class UsageError(Exception):
    """Bad input from the user, or a refused step: one line on stderr, exit status 2.

    Every command reports such failures by raising this.  ``command`` names
    the subcommand in the line's prefix (``shardhash migrate: error: ...``),
    ``label`` replaces ``error`` (``verify failed``) and ``status`` is the
    exit status (``migrate`` exits 3 for a verify mismatch)."""

    def __init__(self, message: str, *, command: str | None = None, label: str = "error", status: int = 2) -> None:
        super().__init__(message)
        self.command, self.label, self.status = command, label, status

    def line(self) -> str:
        """The line printed on stderr."""
        return f"{PROG}{' ' + self.command if self.command else ''}: {self.label}: {self}"


class HelpFormatter(argparse.HelpFormatter):
    """States every option's default (unless its help already does)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        h = action.help or ""
        if (action.option_strings and "default" not in h and action.default not in (None, False, [])
                and action.default is not argparse.SUPPRESS):
            h += f" (default: {action.default})"
        return h


class Parser(argparse.ArgumentParser):
    def __init__(self, *a: Any, **kw: Any) -> None:
        kw.setdefault("formatter_class", HelpFormatter)
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
COMMANDS: dict[str, Callable[[Any, argparse.ArgumentParser], None]] = {}


def command(name: str) -> Callable[[Callable[[Any, argparse.ArgumentParser], None]],
                                   Callable[[Any, argparse.ArgumentParser], None]]:
    """Register a subcommand builder (see the module docstring)."""
    def deco(fn: Callable[[Any, argparse.ArgumentParser], None]) -> Callable[[Any, argparse.ArgumentParser], None]:
        COMMANDS[name] = fn
        return fn
    return deco


def command_parser(name: str, run: Callable[[argparse.Namespace], int], *, help: str,
                   description: str | None = None) -> Callable[[Callable[[argparse.ArgumentParser], None]],
                                                               Callable[[argparse.ArgumentParser], None]]:
    """Register a subcommand (as :func:`command` does) whose builder only
    adds its options: its parser (:func:`add_command`, with ``help`` and
    ``description``) is made here, and runs ``run(args)``."""
    def deco(fill: Callable[[argparse.ArgumentParser], None]) -> Callable[[argparse.ArgumentParser], None]:
        def build(sub: Any, common: argparse.ArgumentParser) -> None:
            p = add_command(sub, common, name, help, description)
            fill(p)
            p.set_defaults(func=run)

        command(name)(build)
        return fill
    return deco


# ------------------------------------------------------------------ helpers


def echo(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def fmt_eta(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60}:{seconds % 60:02d}"


def no_progress(n: int, stage: str | None = None) -> None:
    pass


@contextlib.contextmanager
def progress_bar(total: int | None, label: str, enabled: bool, unit: str = "ids") -> Iterator[Callable[..., None]]:
    """A progress callback: a rich bar on a terminal (done / total with
    thousands separators, rate, ETA when the total is known), nothing
    otherwise."""
    if not enabled or not sys.stderr.isatty():
        yield no_progress
        return
    try:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
        from rich.text import Text
    except ImportError:
        yield no_progress
        return

    class _Count(ProgressColumn):  # 1,234,567 / 10,000,000 ids  2.1M ids/s  ETA 0:03
        def render(self, task: Any) -> Any:
            done = f"{int(task.completed):,}"
            tot = f" / {int(task.total):,}" if task.total is not None else ""
            speed = task.finished_speed or task.speed
            rate = f"  {speed:,.0f} {unit}/s" if speed else ""
            eta = ""
            if task.total is not None and speed and task.remaining:
                eta = f"  ETA {fmt_eta(task.remaining / speed)}"
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
def ids_progress(reader: Any, label: str, enabled: bool) -> Iterator[Callable[[int], None]]:
    """Progress over an ids file: rows when the file says how many (Parquet,
    Arrow, .npy), else bytes of the file read so far (CSV, text)."""
    if reader.total_rows is not None or reader.bytes_read is None and reader.format not in ("csv", "text"):
        with progress_bar(reader.total_rows, label, enabled) as adv:
            yield adv
        return
    with progress_bar(reader.file_size, label, enabled, unit="bytes") as adv:
        done = [0]

        def tick(n: int) -> None:
            pos = reader.bytes_read or 0
            if pos > done[0]:
                adv(pos - done[0])
                done[0] = pos

        yield tick


def read_doc(path: str) -> Any:
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


def read_router(path: str) -> Any:
    from ..routing import load_router

    doc = read_doc(path)
    try:
        return load_router(doc)
    except (ValueError, TypeError, KeyError, OverflowError) as exc:
        m = exc_text(exc)
        if "fingerprint mismatch" in m:
            raise UsageError(
                f"{path}: fingerprint mismatch: the document was edited after it was sealed "
                f"(its \"fingerprint\" no longer matches "
                f"its content); if the edit is intended, re-seal it with `{PROG} topology validate --fix {path}` "
                "or delete the \"fingerprint\" field") from None
        raise UsageError(f"{path}: invalid topology: {m}") from None


def exc_text(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    if isinstance(exc, KeyError) and text:
        return f"missing field {text[0]}"
    return text[0] if text else type(exc).__name__


def id_type_arg(text: str) -> Any:
    from .._keytypes import parse_key_type

    try:
        return parse_key_type(text)
    except (ValueError, TypeError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def resolve_key_type(args: argparse.Namespace, *routers: Any) -> Any:
    """The key type: the topology's declaration, or --id-type (which must
    agree with a declaration)."""
    from .._keytypes import key_type_name

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


def open_ids_file(args: argparse.Namespace, path: str, *, id_type: Any, weights: str | None = None) -> Any:
    from ..io import open_ids

    try:
        return open_ids(path, column=args.column, weights=weights, chunk_size=args.chunk_size,
                        format=args.format, id_type=id_type, delimiter=args.delimiter,
                        header=not args.no_header)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such ids file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not an ids file") from None
    except (ValueError, TypeError, ImportError) as exc:
        raise UsageError(file_error(path, path, exc)) from None


def file_error(label: str, path: str, exc: BaseException) -> str:
    """An error while reading ids, named once by the file the user gave."""
    m = exc_text(exc)
    shown = "<stdin>" if label == "-" else label
    if path != shown:
        m = m.replace(path, shown)
    return m if m.startswith(shown) else f"{shown}: {m}"


def ids_path(args: argparse.Namespace, path: str, stack: contextlib.ExitStack) -> str:
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


def refuse_overwrite(out: str | None, inputs: Sequence[tuple[str | None, str]]) -> None:
    from ..io import same_file

    if out is None or out == "-":
        return
    for src, what in inputs:
        if src and src != "-" and same_file(out, src):
            raise UsageError(f"{out}: is the {what} itself; write the output to another file "
                             "(the input is still being read while the output is written)")


def write_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, default=json_default)
    sys.stdout.write("\n")


def json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, bytes):
        return o.hex()
    return str(o)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for k, r in enumerate(cells):
        row = (c.rjust(w) if k and i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
        lines.append("  ".join(row).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def fmt_pct(x: float) -> str:
    """A share as a percentage that stays readable for tiny shares."""
    if x == 0:
        return "0%"
    if abs(x) >= 1e-4:
        return f"{x:.4%}"
    return f"{x * 100:.3g}%"


def fmt_bounds(lo: int, hi: int) -> str:
    if hi < 10**6:
        return f"[{lo}, {hi}]"
    return f"[{lo:#018x}, {hi:#018x}]"


def split_ids(text: str, what: str) -> list[str]:
    ids = [s.strip() for s in text.split(",") if s.strip()]
    if not ids:
        raise UsageError(f"{what}: give at least one shard id (comma separated)")
    return ids


def parse_weights(text: str | None) -> dict[str, float] | None:
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


def parse_zones(text: str | None, flag: str = "--zones") -> dict[str, str] | None:
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
REPLICA_SAMPLE = 1 << 18


def replica_report(old: Any, new: Any, n: int, threads: int | None) -> Any:
    """diff(old, new, replicas=n) over REPLICA_SAMPLE synthetic integer ids."""
    from .. import plan

    try:
        return plan.diff(old, new, np.arange(REPLICA_SAMPLE, dtype=np.int64), replicas=n, threads=threads)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--replicas: {exc_text(exc)}") from None


def replica_lines(rep: Any, sampled: bool) -> list[str]:
    """What ``plan`` and ``topology add|remove`` print for ``--replicas``."""
    d = rep.to_dict()["replicas"]
    where = f"over {rep.total:,} synthetic ids" if sampled else f"over {rep.total:,} ids"
    lines = [f"replicas: {d['n']} per key, {d['moved']:,} of {d['placements']:,} (key, replica) placements "
             f"move ({d['moved_fraction']:.2%}, {where})"]
    names = list(rep.old_shards) + [s for s in rep.new_shards if s not in rep.old_shards]
    rows = [(s, f"{d['out'].get(s, 0):,}" if s in d["out"] else "", f"{d['in'].get(s, 0):,}" if s in d["in"] else "")
            for s in names if d["out"].get(s, 0) or d["in"].get(s, 0)]
    if rows:
        lines.append(format_table(["shard", "replicas out", "replicas in"], rows))
    return lines


def write_text(path: str | None, text: str) -> None:
    from ..io import atomic_output

    text = text if text.endswith("\n") else text + "\n"
    if path is None or path == "-":
        sys.stdout.write(text)
        return
    try:
        with atomic_output(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    except (FileNotFoundError, IsADirectoryError) as exc:
        raise UsageError(exc_text(exc)) from None




def add_ids_options(p: argparse.ArgumentParser, *, required_type: bool = True, weights: bool = True) -> None:
    p.add_argument("--column", help="id column name; for a compound key type, the columns, comma separated; "
                   "without a header, column numbers (1, 2, ...) (default: the first column(s)"
                   + (" that are not the --weights column)" if weights else ")"))
    p.add_argument("--format", choices=["csv", "parquet", "arrow", "npy", "text"],
                   help="file format (default: from the file name: .csv/.tsv[.gz], .parquet/.pq, "
                   ".arrow/.feather/.ipc/.arrows, .npy, anything else is text, one id per line)")
    p.add_argument("--id-type", type=id_type_arg, default=None, metavar="TYPE",
                   help="key type of the ids: int, str, bytes (hex), uuid, or a comma-separated list for a "
                   "compound key; must agree with the topology's key_type when it declares one "
                   + ("(default: the topology's key_type; CSV and text ids are never guessed)" if required_type
                      else "(default: the topology's key_type, else str)"))
    p.add_argument("--delimiter", help="CSV field delimiter (default: tab for .tsv, else detected from the "
                   "header line among , ; tab |)")
    p.add_argument("--no-header", action="store_true", help="the CSV file has no header row "
                   "(default: the first row is the header)")
    p.add_argument("--chunk-size", type=positive_int, default=1 << 20, help="ids read per chunk")


def _number(text: str, conv: Callable[[str], Any], what: str) -> Any:
    try:
        return conv(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def positive_int(text: str) -> int:
    v: int = _number(text, int, "an integer")
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    return v


def positive_float(text: str) -> float:
    v: float = _number(text, float, "a number")
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number > 0")
    return v


def fraction_arg(text: str) -> float:
    v = positive_float(text)
    if v > 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be in (0, 1]")
    return v


def seed_arg(text: str) -> int:
    v: int = _number(text, lambda s: int(s, 0), "an integer")
    if not 0 <= v < 1 << 64:
        raise argparse.ArgumentTypeError(f"{text} is out of range: a seed is an integer in [0, 2**64-1]")
    return v


def share_arg(text: str) -> float:
    v: float = _number(text, float, "a number")
    if not (0 < v <= 1):
        raise argparse.ArgumentTypeError(f"{text!r} must be in (0, 1]")
    return v




@contextlib.contextmanager
def output_errors() -> Iterator[None]:
    """An output that cannot be made (a bad name, a missing folder, no pyarrow) is bad input."""
    try:
        yield
    except (ValueError, FileNotFoundError, ImportError) as exc:
        raise UsageError(exc_text(exc)) from None


@contextlib.contextmanager
def abort_on_error(out: Any) -> Iterator[None]:
    """Run the block that fills ``out`` (a file being written, or None): when it
    fails, ``out.abort()`` throws away what was written and the failure goes on."""
    try:
        yield
    except BaseException:
        if out is not None:
            out.abort()
        raise


# ------------------------------------------------------- topologies and plans


def describe_hashing(r: Any) -> str:
    """How a router turns a key into a position: the shardhash hasher, or the
    system's own hashing for compat routers."""
    return str(r.hashing_description())


# Strategies whose add/remove moves only the ideal share of keys.
_MINIMAL_MOVERS = ("rendezvous", "ring", "memento (jump that can lose any shard)", "multiprobe", "buckets (bucket)",
                   "maglev (close to it)")


def moved_share_estimate(old: Any, new: Any) -> float | None:
    from .. import plan

    try:
        return float(sum(m.share for m in plan.moved_ranges(old, new)))
    except (ValueError, TypeError, NotImplementedError):
        return None


def plan_warnings(old: Any, new: Any, moved: float | None) -> list[str]:
    """Warnings a user should see before executing a plan."""
    from .. import plan

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
        out.append(f"this change moves {fmt_pct(moved)} of keys where {fmt_pct(ideal)} is the least any strategy must "
                   f"move ({moved / ideal if ideal else math.inf:.1f}x); {kind} moves more than needed here. "
                   f"Strategies that move only the ideal share: {', '.join(_MINIMAL_MOVERS)}")
    return out


def warn_excess_moves(old: Any, new: Any) -> None:
    for w in plan_warnings(old, new, moved_share_estimate(old, new)):
        print(f"{PROG}: warning: {w}", file=sys.stderr)


# ------------------------------------------------------- options more than one command takes


def wants_engine(argv: Sequence[str]) -> bool:
    """True when a command line asks for an engine (``--engine`` given)."""
    return any(a == "--engine" or a.startswith("--engine=") for a in argv)


def add_command(sub: Any, common: argparse.ArgumentParser, name: str, help: str,
                description: str | None = None) -> argparse.ArgumentParser:
    """A command's parser, taking the options every command takes (``common``)."""
    p: argparse.ArgumentParser = sub.add_parser(name, parents=[common], help=help, description=description)
    return p


def add_json(p: argparse.ArgumentParser, what: str | None = "tables") -> None:
    """``--json``: machine-readable output instead of ``what``."""
    p.add_argument("--json", action="store_true",
                   help="machine-readable output" + (f" (default: {what})" if what else ""))


def add_output(p: argparse.ArgumentParser) -> None:
    """``-o/--output FILE``: the document goes there instead of stdout."""
    p.add_argument("-o", "--output", help="file to write (default: stdout)")
