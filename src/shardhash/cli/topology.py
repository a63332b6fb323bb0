"""``shardhash topology new|show|validate|add|remove``: write, print, check or change topology documents."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import (
    PROG,
    REPLICA_SAMPLE,
    Parser,
    UsageError,
    add_output,
    command,
    describe_hashing,
    echo,
    exc_text,
    format_table,
    id_type_arg,
    parse_weights,
    parse_zones,
    positive_int,
    read_doc,
    read_router,
    refuse_overwrite,
    replica_lines,
    replica_report,
    seed_arg,
    split_ids,
    warn_excess_moves,
    write_json,
    write_text,
)

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
    from .. import routing

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
    from .. import routing

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
    from .. import routing
    from ..hashing import Hasher

    s = _new_strategies()[1].get(args.strategy, args.strategy)
    cls = _strategy_class(s)
    _check_strategy_options(args, s, cls)
    shards: list[str] = split_ids(args.shards, "--shards") if args.shards else []
    if not shards and cls.cli_needs_shards:
        raise UsageError(f"topology new {s}: give --shards a,b,c")
    weights = parse_weights(args.shard_weights)
    if weights is not None and shards:
        unknown = sorted(set(weights) - set(shards))
        if unknown:
            raise UsageError(f"--shard-weights: {', '.join(map(repr, unknown))} not among --shards")
    hasher = None
    if cls.cli_hashes:
        hasher = Hasher(args.algorithm or "xxh3_64", seed=0 if args.seed is None else args.seed)
    try:
        r = cls.from_cli(shards, args, weights=weights, hasher=hasher, load=read_router)
    except routing.TopologyOptionError as exc:
        raise UsageError(str(exc)) from None
    if args.key_type is not None:
        r = r.with_key_type(args.key_type)
    zones = parse_zones(args.zones)
    if zones is not None:
        r = r.with_zones(zones)
    return r


def _ownership(r: Any) -> list[tuple[str, ...]]:
    """Rows of `topology show`: shard, target share, share of the hash space
    it really owns, and what it owns (vnodes, buckets, slots, ranges)."""
    from ..plan import target_shares

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
    from .._keytypes import key_type_name

    echo(f"file:        {path}")
    echo(f"strategy:    {r.type_name} ({type(r).__name__})")
    echo(f"version:     {r.version}")
    echo(f"fingerprint: {r.fingerprint}")
    echo(f"hashing:     {describe_hashing(r)}")
    echo(f"key type:    {key_type_name(r.key_type) if r.key_type is not None else 'not declared (give --id-type)'}")
    details = []
    for attr, label in (("vnodes", "vnodes per unit weight"), ("bucket_count", "buckets"),
                        ("table_size", "table size")):
        v = getattr(r, attr, None)
        if isinstance(v, int):
            details.append(f"{label} {v:,}")
    if details:
        echo(f"params:      {', '.join(details)}")
    echo(f"shards:      {len(r.shards)}")
    if r.zones is not None:
        by_zone: dict[str, list[str]] = {}
        for sid, z in r.zones.items():
            by_zone.setdefault(z, []).append(sid)
        echo(f"zones:       {len(by_zone)} ({'; '.join(f'{z}: {len(v)}' for z, v in by_zone.items())})")
    echo("")
    rows = _ownership(r)
    echo(format_table(["shard", "target share", "owned share", "owned/target", "owns"], rows))
    if rows and not rows[0][2]:
        echo("(owned share: not a fixed part of the hash space for this strategy; the target share is what it aims at)")


def cmd_topology(args: argparse.Namespace) -> int:
    from ..routing import load_router

    if args.action == "new":
        if args.output is not None:
            refuse_overwrite(args.output, [(getattr(args, k), "--" + k + " topology") for k in ("base", "old", "new")])
        try:
            r = _make_router(args)
        except (ValueError, TypeError, OverflowError) as exc:
            raise UsageError(f"topology new: {exc_text(exc)}") from None
        write_text(args.output, r.to_json())
        return 0
    if args.action == "validate" and args.fix:
        doc = read_doc(args.file)
        if isinstance(doc, dict):
            doc.pop("fingerprint", None)
        try:
            r = load_router(doc)
        except (ValueError, TypeError, KeyError, OverflowError) as exc:
            raise UsageError(f"{args.file}: invalid topology: {exc_text(exc)}") from None
        write_text(args.file, r.to_json())
        print(f"{args.file}: re-sealed, fingerprint {r.fingerprint}", file=sys.stderr)
        return 0
    r = read_router(args.file)
    if args.action == "validate":
        if args.json:
            echo(r.to_json())
            return 0
        echo(f"{args.file}: valid {r.type_name} topology, {len(r.shards)} shards, "
             f"version {r.version}, fingerprint {r.fingerprint}")
        return 0
    if args.action == "show":
        if args.json:
            write_json(r.to_dict())
            return 0
        _show(r, args.file)
        return 0
    # add / remove: planners
    from .. import plan

    refuse_overwrite(args.output, [(args.file, "topology being changed")])
    ids = split_ids(args.shards, "--shards")
    try:
        if args.action == "add":
            new, steps = plan.add_shards(r, ids, weights=parse_weights(args.shard_weights),
                                         zones=parse_zones(args.zones))
        else:
            new, steps = plan.remove_shards(r, ids)
        if r.key_type is not None and new.key_type != r.key_type:
            new = new.with_key_type(r.key_type)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"topology {args.action}: {exc_text(exc)}") from None
    replica_rep = replica_report(r, new, args.replicas, None) if args.replicas is not None else None
    write_text(args.output, new.to_json())
    print(f"{len(steps)} migration steps; run `{PROG} plan` on the two topologies for details", file=sys.stderr)
    warn_excess_moves(r, new)
    if replica_rep is not None:
        for line in replica_lines(replica_rep, True):
            print(line, file=sys.stderr)
    return 0


@command("topology")
def _build_topology(sub: Any, common: argparse.ArgumentParser) -> None:
    t = sub.add_parser("topology", help="write, print, check or change topology documents",
                       description="Topology documents are versioned, fingerprinted JSON (docs/routers.md).")
    tsub = t.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
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
    tn.add_argument("--key-type", type=id_type_arg, default=None, metavar="TYPE",
                    help="declare the key type in the document: int, str, bytes, uuid, or a comma-separated "
                    "list for a compound key (default: not declared; readers then need --id-type)")
    tn.add_argument("--shard-weights", help="id=weight,... (ring, bounded, rendezvous, maglev, buckets, ketama) "
                    "(default: equal weights)")
    tn.add_argument("--vnodes", type=positive_int, default=None,
                    help="ring, bounded: tokens per unit weight (default 256); cassandra_token: tokens per node "
                    "(default 1)")
    tn.add_argument("--buckets", type=positive_int, default=None, help="buckets: bucket count (default 4096)")
    tn.add_argument("--table-size", type=positive_int, default=None,
                    help="maglev: table size, a prime (default: the smallest prime >= 100 x shards, "
                    "at least 65537)")
    tn.add_argument("--probes", type=positive_int, default=None,
                    help="multiprobe: probes per key, 1 to 64 (default 21)")
    tn.add_argument("--balance-factor", type=positive_int, default=None, metavar="PERCENT",
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
    tn.add_argument("--seed", type=seed_arg, default=None, help="hash seed, 0 to 2**64-1 (default: 0)")
    tn.add_argument("--zones", help="id=zone,... the failure domain of every shard, kept in the document; "
                    "replica lists put no two replicas in one zone (default: no zones)")
    add_output(tn)
    sh = tsub.add_parser("show", help="print a topology: hashing, key type, ownership per shard",
                         description="Print a topology: its strategy, version, hashing (a compat router's own), "
                         "key type, parameters, and per shard the target share, the share of the hash space it "
                         "really owns and what it owns (buckets, slots, ranges).")
    sh.add_argument("file", help="topology document (.json)")
    sh.add_argument("--json", action="store_true", help="print the document, indented (default: a summary)")
    va = tsub.add_parser("validate", help="check a topology document",
                         description="Check a topology document strictly (fields, types, fingerprint).")
    va.add_argument("file", help="topology document (.json)")
    va.add_argument("--json", action="store_true", help="print the canonical document (default: one line)")
    va.add_argument("--fix", action="store_true", help="re-seal an edited document: rewrite it with the "
                    "fingerprint of its content (default: only check)")
    for name, helptext in (("add", "plan adding shards: write the new topology"),
                           ("remove", "plan removing shards: write the new topology")):
        x = tsub.add_parser(name, help=helptext, description=helptext + " (version + 1); the number of "
                            "migration steps goes to stderr, with a warning when far more keys move than needed.")
        x.add_argument("file", help="the current topology document (.json)")
        x.add_argument("--shards", required=True, help="comma-separated shard ids")
        if name == "add":
            x.add_argument("--shard-weights", help="id=weight,... for the new shards (default: weight 1)")
            x.add_argument("--zones", help="id=zone,... for the new shards (required when the topology has zones)")
        x.add_argument("--replicas", type=positive_int, default=None, metavar="N",
                       help="also print how many (key, replica) placements of N-replica lists move, "
                       f"counted over {REPLICA_SAMPLE:,} synthetic ids (default: not counted)")
        add_output(x)
    t.set_defaults(func=cmd_topology)

