"""``shardhash saga list|show|resume|abort --config CLUSTER [--json]``.

``list`` and ``show`` read the saga log only.  ``resume`` and ``abort`` run
steps and compensations, so they need the sagas' definitions: ``--import
MODULE`` imports the module that creates them (repeatable; the current
folder is searched too).  A refused
command raises the ``UsageError`` of every ``shardhash`` command (exit 2);
``resume`` exits 1 when a saga it drove ended ``stuck``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time

from ..cli.common import UsageError, format_table, json_default


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts)) if ts else "-"


def _imports(args: argparse.Namespace) -> None:
    """Import the ``--import`` modules, from the current folder too (as ``python -m`` would)."""
    import os

    if args.modules and os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    for m in args.modules:
        try:
            importlib.import_module(m)
        except ImportError as e:
            raise UsageError(f"--import {m}: {e}", command="saga") from None


def run(args: argparse.Namespace) -> int:
    """Run one ``shardhash saga`` action; returns the exit status."""
    from ..migrate.cluster import Cluster
    from . import core

    try:
        cluster = Cluster.load(args.config)
    except (ValueError, TypeError, OSError) as e:
        raise UsageError(f"{args.config}: {e}", command="saga") from None
    try:
        if args.action == "list":
            if args.saga is not None:
                raise UsageError("list takes no saga id (see `shardhash saga show ID`)", command="saga")
            rows = core.list_sagas(cluster, state=args.state, name=args.name, limit=args.limit)
            if args.json:
                _out(json.dumps({"sagas": rows, "counts": core.counts(cluster)}, default=json_default))
                return 0
            table = [(r["id"], r["state"], f"{r['step']}/{r['nsteps']}", r["attempts"], _when(r["updated"]),
                      (r["error"] or "")[:60]) for r in rows]
            _out(format_table(["saga", "state", "step", "attempts", "updated (UTC)", "error"], table))
            _out("  ".join(f"{k}: {v}" for k, v in core.counts(cluster).items()))
            return 0
        if args.saga is None and args.action in ("show", "abort"):
            raise UsageError(f"{args.action} needs a saga id (see `shardhash saga list`)", command="saga")
        if args.action == "show":
            st = core.status(cluster, args.saga)
            if args.json:
                _out(json.dumps(st, default=json_default))
                return 0
            for k in ("id", "name", "idem_key", "state", "step", "nsteps", "attempts", "error", "owner", "fence"):
                _out(f"{k + ':':10} {st[k]}")
            _out(f"{'lease:':10} until {_when(st['lease_until'])} UTC")
            _out(f"{'args:':10} {json.dumps(st['args'])}")
            _out(f"{'results:':10} {json.dumps(st['results'])}")
            _out(f"{'created:':10} {_when(st['created'])} UTC, updated {_when(st['updated'])} UTC")
            return 0
        _imports(args)
        if args.action == "abort":
            state = core.abort(cluster, args.saga)
            if args.json:
                _out(json.dumps({"id": args.saga, "state": state}))
            else:
                _out(f"{args.saga}: {state}")
                if state == "compensating":
                    _out("next: run `shardhash saga resume` with --import MODULE (the module that defines it)")
            return 1 if state == "stuck" else 0
        # resume
        ids = [args.saga] if args.saga is not None else [
            r["id"] for r in core.list_sagas(cluster, name=args.name) if r["state"] in core.ACTIVE
            and (r["lease_until"] < time.time())]
        out: dict[str, str] = {}
        for sid in ids:
            out[sid] = core.resume(cluster, sid, force=args.force)
        if args.json:
            _out(json.dumps({"resumed": out}))
        else:
            for sid, state in out.items():
                _out(f"{sid}: {state}")
            if not out:
                _out("nothing to resume")
        return 1 if "stuck" in out.values() else 0
    except KeyError as e:
        raise UsageError(str(e.args[0]) if e.args else str(e), command="saga") from None
    except (LookupError, ValueError) as e:
        raise UsageError(str(e), command="saga") from None
    finally:
        cluster.close()
