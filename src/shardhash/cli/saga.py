"""``shardhash saga list|show|resume|abort``: the parser.

The actions run in :mod:`shardhash.saga.cli`, imported when the command runs.
"""

from __future__ import annotations

import argparse

from .common import add_json, command_parser

ACTIONS = ("list", "show", "resume", "abort")


def _run(args: argparse.Namespace) -> int:
    from ..saga.cli import run

    return run(args)


@command_parser("saga", _run, help="inspect, resume or abort the sagas of a cluster (docs/saga.md)")
def _build_saga(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=ACTIONS,
                   help="list: the sagas and their states; show: one saga's log and step records; "
                        "resume: drive a saga (or every saga whose driver died) to its end; "
                        "abort: stop a running saga and compensate its applied steps")
    p.add_argument("saga", nargs="?", help="saga id (resume: default every saga whose driver died)")
    p.add_argument("--config", required=True, help="cluster file (.toml or .json)")
    p.add_argument("--state", help="list: only sagas in this state")
    p.add_argument("--name", help="list/resume: only sagas of this name")
    p.add_argument("--limit", type=int, default=None, help="list: at most this many sagas")
    p.add_argument("--import", dest="modules", metavar="MODULE", action="append", default=[],
                   help="resume/abort: import this module first (it defines the sagas; repeatable)")
    p.add_argument("--force", action="store_true",
                   help="resume SAGA: take the saga over even if its driver's lease has not expired")
    add_json(p, None)
