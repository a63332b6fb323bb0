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
    shardhash migrate ACTION --config CLUSTER  (docs/migrate.md)
    shardhash saga list|show|resume|abort --config CLUSTER  (docs/saga.md)
    shardhash route|plan|analyze ... --engine dask|spark|ray

Bad input (a missing file, a wrong column, a corrupt or mismatched topology)
gives one line on stderr and exit status 2; internal failures exit with 1.
Every command reports such input by raising :class:`UsageError` (``migrate``
exits 3 for a verify mismatch).  Progress bars (rich) appear only when stderr
is a terminal.  Every file the command writes appears only when complete (a
temporary file renamed into place), and never over one of its inputs.

One module per command (``demo``, ``migrate``, ``saga``, ``topology``, ``route``,
``plan``, ``analyze``, and ``engines`` for ``--engine``), the shared helpers in
:mod:`shardhash.cli.common`.  A command module adds its parser with
:func:`command`: a function that adds its parser to the subparsers and sets
``func``::

    @command("hello")
    def _hello(sub, common):
        p = sub.add_parser("hello", parents=[common], help="say hello")
        p.set_defaults(func=lambda args: 0)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from .common import COMMANDS, PROG, Parser, UsageError, command, exc_text, positive_int, wants_engine

__all__ = ["main", "build_parser", "command", "UsageError", "PROG"]

# The built-in commands, in the order `shardhash --help` lists them.
_BUILTIN = ("demo", "migrate", "saga", "topology", "route", "plan", "analyze")


def __getattr__(name: str) -> Any:  # `from shardhash.cli import run_demo` without importing every command
    if name == "run_demo":
        from .demo import run_demo

        return run_demo
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    p = Parser(prog=PROG, description="Which shard owns this key? Routing, migration plans and analysis.")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    common = Parser(add_help=False)
    common.add_argument("--threads", type=positive_int, default=None,
                        help="threads (default: all cores for big inputs)")
    common.add_argument("-q", "--quiet", action="store_true", help="no progress bars (default: bars on a terminal)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for name in _BUILTIN:  # each registers its parser builder with @command
        __import__(f"{__name__}.{name}")
    for name in (*_BUILTIN, *(n for n in COMMANDS if n not in _BUILTIN)):
        COMMANDS[name](sub, common)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if wants_engine(argv):
        from .engines import main as engines_main  # --engine dask|spark|ray

        return engines_main(argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return int(args.func(args))
    except UsageError as exc:
        print(exc.line(), file=sys.stderr)
        return exc.status
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
        print(f"{PROG}: error: {exc_text(exc)}", file=sys.stderr)
        return 1
    except ImportError as exc:
        print(f"{PROG}: error: {exc_text(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - never a traceback
        print(f"{PROG}: internal error: {type(exc).__name__}: {exc_text(exc)}", file=sys.stderr)
        return 1
