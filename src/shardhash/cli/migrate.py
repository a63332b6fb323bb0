"""``shardhash migrate init|start|status|resume|pause|set|verify|cutover|rollback|cleanup``: the parser.

The actions run in :mod:`shardhash.migrate.cli`, imported when the command
runs (building this parser imports nothing of :mod:`shardhash.migrate`).
"""

from __future__ import annotations

import argparse
import textwrap

from .common import HelpFormatter, add_json, command_parser, positive_float, positive_int


def non_negative_float(text: str) -> float:
    """A number >= 0 (an argparse ``type``)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (0 <= v < 1e12):
        raise argparse.ArgumentTypeError(f"must be >= 0 (and < 1e12), not {text!r}")
    return v

#: Every action, with what it does (``shardhash migrate --help`` lists them).
ACTION_HELP = {
    "init": "record the cluster file's shard map and routers in the metadata store, install the shards' "
            "triggers (once; again to record shards added to the file)",
    "import": "load an unsharded database's tables (or CSV or Parquet files) onto their owners (--from URL), "
              "resumable, verified",
    "start": "plan and run a migration: --add IDS [--primary URL], --remove IDS or --to ROUTER",
    "status": "the migration's state, figures and next step (--watch: refresh until it stops running)",
    "resume": "continue a migration after a failure, a crash or a pause",
    "pause": "stop a running migration at its next chunk boundary (any phase before the fence); "
             "`resume` continues it",
    "set": "change a running migration's settings (--max-rows-per-s), taken up within a quarter second",
    "verify": "compare the copied rows with their sources (while catching up, or the retained copies "
              "against their owners)",
    "cutover": "finish a migration started with --no-cutover",
    "rollback": "undo a migration (after its cutover: a reverse migration)",
    "cleanup": "delete the retained copies of a cut-over migration (or of a rolled-back one's reverse)",
    "check": "find rows on a shard that does not own them (--repair: move them to their owners)",
}
ACTIONS = ("init", "start", "status", "resume", "pause", "set", "verify", "cutover", "rollback", "cleanup", "import",
           "check")
assert set(ACTIONS) == set(ACTION_HELP)


_DESCRIPTION = (textwrap.fill("Shard a database, add or remove shards and move keys between them while the "
                             "application writes (docs/migrate.md).", 79) + "\n\nactions:\n"
                + "\n".join(textwrap.fill(h, 79, initial_indent=f"  {a:<10}", subsequent_indent=" " * 12)
                            for a, h in ACTION_HELP.items()))


class _Formatter(HelpFormatter, argparse.RawDescriptionHelpFormatter):
    """The common formatter, with the description's lines kept as written."""


def _run(args: argparse.Namespace) -> int:
    from ..migrate.cli import run

    return run(args)


@command_parser("migrate", _run, help="execute a migration on the cluster's databases", description=_DESCRIPTION)
def _build_migrate(p: argparse.ArgumentParser) -> None:
    p.formatter_class = _Formatter  # (the description's list of actions as written)
    p.add_argument("action", choices=ACTIONS, metavar="ACTION",
                   help="one of " + ", ".join(ACTION_HELP) + " (described above)")
    p.add_argument("migration", nargs="?", help="migration id (default: the group's latest)")
    p.add_argument("--config", required=True, help="cluster file (.toml or .json)")
    p.add_argument("--group", help="table group (default: the only one)")
    p.add_argument("--to", help="start: the new router document (e.g. from `shardhash topology add`)")
    p.add_argument("--add", metavar="IDS", action="append", default=[],
                   help="start: shard id(s) to add, comma-separated or repeated (plans the new router)")
    p.add_argument("--remove", metavar="IDS", help="start: comma-separated shard ids to remove")
    p.add_argument("--primary", metavar="URL", action="append", default=[],
                   help="start --add ID: register the new shard ID with this primary (sqlite:PATH or "
                        "postgresql://...) in the shard map, in the transaction that records the migration; "
                        "repeat --add ID --primary URL for each new shard, in the same order")
    p.add_argument("--replica", metavar="URL", action="append", default=[],
                   help="start --add ID --primary URL (one new shard): a replica of it (repeatable)")
    p.add_argument("--from-version", type=int, help="start: the topology version the plan was made from")
    p.add_argument("--max-step-share", type=float, default=0.02, help="start: largest unit (share of keys)")
    p.add_argument("--fence-threshold", type=float, default=0.5,
                   help="freeze only when the remaining catch-up is estimated below this (s, default 0.5)")
    p.add_argument("--chunk", type=int, default=None,
                   help="rows per copy chunk (default: adapted to the time a chunk takes, from 10000)")
    p.add_argument("--no-cutover", action="store_true", help="start/resume: stop once copied, caught up and verified")
    p.add_argument("--dry-run", action="store_true", help="start: print the steps and the rows each would move")
    p.add_argument("--from", dest="source", metavar="URL",
                   help="import: the unsharded database to load (sqlite:PATH or postgresql://...), or CSV or "
                        "Parquet files (csv:PATH, parquet:PATH: a file, or a folder with TABLE.csv / "
                        "TABLE.parquet per table)")
    p.add_argument("--repair", action="store_true",
                   help="check: move each stranded row to its owner (when the owner has no row with its key)")
    p.add_argument("--watch", action="store_true",
                   help="status: refresh until the migration stops running (or Ctrl-C): state, rows copied of "
                        "the estimate, rate, lag in changes and seconds, ETA, write pause")
    p.add_argument("--interval", type=positive_float, default=2.0, metavar="S",
                   help="status --watch: seconds between refreshes (default 2)")
    p.add_argument("--count", type=positive_int, default=None, metavar="N",
                   help="status --watch: stop after N refreshes (default: until the migration stops running)")
    p.add_argument("--max-rows-per-s", type=non_negative_float, default=None, metavar="N",
                   help="start/resume/set: limit the snapshot copy to N rows read per second, recorded in the "
                        "metadata store (0: no limit; default: keep the recorded limit)")
    p.add_argument("--parallel", type=positive_int, default=None, metavar="N",
                   help="start/resume: copy N sources at once, each by a worker with its own connections "
                        "(default: the number of sources, at most the cores)")
    p.add_argument("--throttle-sql", metavar="SQL", default=None,
                   help="start/resume/cutover: a load probe run on each destination (its first column: a number, "
                        "e.g. a replica's lag); the copy and the catch-up back off while it is above "
                        "--throttle-above")
    p.add_argument("--throttle-above", type=float, default=None, metavar="X",
                   help="start/resume/cutover, with --throttle-sql: the threshold of the load probe")
    p.add_argument("--throttle-max-backoff", type=positive_float, default=None, metavar="S",
                   help="start/resume/cutover, with --throttle-sql: the longest back-off between two probes "
                        "(seconds, default 5; the first is 0.05 s, doubling while the signal stays high)")
    p.add_argument("--fence-timeout", type=positive_float, default=None, metavar="SECONDS",
                   help="start/resume/cutover: the deadline of a freeze -- a writer that waits longer aborts "
                        "the fence attempt and writes on the source (default 2)")
    p.add_argument("--skip-preflight", action="store_true",
                   help="start/resume: copy even when the preflight estimates that a destination lacks room")
    p.add_argument("--max-dest-bytes", type=positive_int, default=None, metavar="BYTES",
                   help="start/resume (and --dry-run): the largest size a destination may reach, for the "
                        "preflight (PostgreSQL: compared with pg_database_size; SQLite: with the file's size, "
                        "besides the file system's free space)")
    add_json(p, None)
