"""Run an implementation of the routing protocol against the conformance kit.

The kit (``conformance/cases.jsonl`` in the source tree, format
``shardhash.conformance/1``, described in ``conformance/README.md``) is a
JSON Lines file: a header line, then one case per line.  A *port* -- a
program in any language -- reads the cases on its standard input and writes
one JSON result line per case, in order::

    python -m shardhash.conformance [--cases FILE] -- PORT_COMMAND [ARG...]

runs the port, compares every result line with the case's ``expect`` and
names the first mismatch with its inputs.  ``--results FILE`` checks a file
of result lines written earlier instead of running a command.  The exit
status is 0 when every case passes, 1 on a mismatch, a missing line or (unless
``--allow-unsupported``) a case the port declared unsupported, 2 on a usage
error.

A result line is ``{"id": <the case's id>, ...}`` plus either the fields of
the case's ``expect`` or ``{"error": "<kind>"}`` (``"TypeError"``,
``"ValueError"``, ``"OverflowError"``) or ``{"unsupported": "<why>"}``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["FORMAT", "Report", "check", "default_cases", "load_cases", "main", "run_port"]

FORMAT = "shardhash.conformance/1"

# Ops whose error kind must match exactly (the key codec's TypeError /
# ValueError / OverflowError); elsewhere any error satisfies an expected error.
_STRICT_ERRORS = frozenset({"encode", "hash_key"})


def default_cases() -> Path | None:
    """``conformance/cases.jsonl`` of the source tree this module sits in, if any."""
    p = Path(__file__).resolve().parents[2] / "conformance" / "cases.jsonl"
    return p if p.is_file() else None


def load_cases(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, cases) of a kit file; a ValueError if it is not one."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise ValueError(f"{path}: empty file")
    header = json.loads(lines[0])
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError(f"{path}: the first line is not a {FORMAT} header")
    cases = [json.loads(line) for line in lines[1:] if line.strip()]
    if header.get("cases") != len(cases):
        raise ValueError(f"{path}: the header announces {header.get('cases')} cases, the file has {len(cases)}")
    return header, cases


@dataclass
class Report:
    """What :func:`check` found."""

    total: int = 0
    passed: int = 0
    unsupported: Counter[str] = field(default_factory=Counter)
    unsupported_ids: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    first_failure: str | None = None

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        parts = [f"{self.passed} of {self.total} cases pass"]
        if self.unsupported:
            parts.append("unsupported: " + ", ".join(f"{op} {n}" for op, n in sorted(self.unsupported.items())))
        if self.failures:
            parts.append(f"{len(self.failures)} fail")
        return "; ".join(parts)


def _matches(op: str, expect: Any, got: Any) -> bool:
    if isinstance(expect, dict) and "error" in expect and len(expect) == 1:
        if not isinstance(got, dict) or set(got) != {"error"} or not isinstance(got["error"], str):
            return False
        return op not in _STRICT_ERRORS or got["error"] == expect["error"]
    if isinstance(expect, str) and expect.startswith("!"):  # a refused key inside a list
        return isinstance(got, str) and got.startswith("!") and (op not in _STRICT_ERRORS or got == expect)
    if isinstance(expect, dict):
        return isinstance(got, dict) and set(got) == set(expect) and all(
            _matches(op, expect[k], got[k]) for k in expect)
    if isinstance(expect, list):
        return isinstance(got, list) and len(got) == len(expect) and all(
            _matches(op, e, g) for e, g in zip(expect, got))
    if isinstance(expect, bool) or isinstance(got, bool):
        return type(expect) is type(got) and expect == got
    return bool(expect == got)


def _first_difference(expect: Any, got: Any, path: str = "") -> str:
    """Where two results first differ, e.g. ``routes[17]: expected 3, got 4``."""
    if isinstance(expect, dict) and isinstance(got, dict) and "error" not in expect:
        for k in expect:
            if k not in got:
                return f"{path}{k}: missing"
            if not _matches("", expect[k], got[k]):
                return _first_difference(expect[k], got[k], f"{path}{k}")
        extra = sorted(set(got) - set(expect))
        return f"{path}: unexpected field(s) {extra}" if extra else f"{path}: differs"
    if isinstance(expect, list) and isinstance(got, list) and len(expect) == len(got):
        for i, (e, g) in enumerate(zip(expect, got)):
            if not _matches("", e, g):
                return _first_difference(e, g, f"{path}[{i}]")
    return f"{path or 'result'}: expected {json.dumps(expect)[:300]}, got {json.dumps(got)[:300]}"


def _index_of(where: str) -> int | None:
    """The list position a difference path names (``routes[17]`` -> 17)."""
    if where.count("[") and where.index("[") < where.index(":"):
        try:
            return int(where[where.index("[") + 1:where.index("]")])
        except ValueError:
            return None
    return None


def _describe(case: dict[str, Any], where: str) -> str:
    """A mismatching case's inputs, the list entry concerned first."""
    lines = [f"case {case['id']} (op {case['op']})"]
    i = _index_of(where)
    for name in ("keys", "hashes"):
        if i is not None and name in case and where.startswith(("routes", "key_hashes", "ids", "hash_routes",
                                                                 "lists", "buckets", "hashes", "reads")):
            items = case[name]
            if where.startswith("hash_routes") and name == "keys" or where.startswith(
                    ("routes", "key_hashes", "ids", "reads")) and name == "hashes":
                continue
            if i < len(items):
                lines.append(f"  input {name}[{i}] = {json.dumps(items[i])}")
    for name, value in case.items():
        if name in ("id", "op", "expect"):
            continue
        text = json.dumps(value, ensure_ascii=False)
        lines.append(f"  {name}: {text if len(text) <= 400 else text[:400] + ' ...'}")
    return "\n".join(lines)


def check(cases: Sequence[dict[str, Any]], results: Iterable[str], *, max_failures: int = 20) -> Report:
    """Compare result lines with the cases, in order."""
    rep = Report(total=len(cases))
    it = iter(results)
    for case in cases:
        line = next(it, None)
        while line is not None and not line.strip():
            line = next(it, None)
        if line is None:
            msg = f"{case['id']}: no result line (the port stopped after {rep.passed + len(rep.failures)} lines)"
            rep.failures.append(msg)
            rep.first_failure = rep.first_failure or msg + "\n" + _describe(case, "")
            break
        try:
            got = json.loads(line)
        except ValueError:
            got = None
        if not isinstance(got, dict) or got.get("id") != case["id"]:
            msg = f"{case['id']}: expected a result line for this id, got {line.strip()[:200]!r}"
            rep.failures.append(msg)
            rep.first_failure = rep.first_failure or msg + "\n" + _describe(case, "")
            break
        del got["id"]
        if set(got) == {"unsupported"}:
            rep.unsupported[case["op"]] += 1
            rep.unsupported_ids.append(case["id"])
            continue
        if _matches(case["op"], case["expect"], got):
            rep.passed += 1
            continue
        where = _first_difference(case["expect"], got)
        msg = f"{case['id']}: {where}"
        if len(rep.failures) < max_failures:
            rep.failures.append(msg)
        else:
            rep.failures.append("")
        rep.first_failure = rep.first_failure or msg + "\n" + _describe(case, where)
    else:
        extra = [x for x in it if x.strip()]
        if extra:
            rep.failures.append(f"{len(extra)} result line(s) after the last case")
    return rep


def run_port(command: Sequence[str], cases_path: Path, *, timeout: float = 600.0) -> tuple[list[str], str, int]:
    """Run ``command`` with the kit on its stdin: (stdout lines, stderr, exit status)."""
    data = cases_path.read_bytes()
    proc = subprocess.run(list(command), input=data, capture_output=True, timeout=timeout, check=False)
    return proc.stdout.decode("utf-8", "replace").splitlines(), proc.stderr.decode("utf-8", "replace"), \
        proc.returncode


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m shardhash.conformance",
        description="Check an implementation of the shardhash routing protocol against the conformance kit.")
    ap.add_argument("--cases", type=Path, default=None,
                    help="the kit (default: conformance/cases.jsonl of this source tree)")
    ap.add_argument("--results", type=Path, default=None,
                    help="check a file of result lines instead of running a command")
    ap.add_argument("--allow-unsupported", action="store_true",
                    help="cases the port declares unsupported do not fail the run (they are still counted)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds the port may run (default 600)")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="the port's command line (after --)")
    args = ap.parse_args(argv)
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if bool(command) == (args.results is not None):
        ap.error("give either a port command (after --) or --results FILE")
    cases_path = args.cases or default_cases()
    if cases_path is None:
        ap.error("no conformance/cases.jsonl next to this package: pass --cases FILE")
    try:
        header, cases = load_cases(cases_path)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.results is not None:
        lines = args.results.read_text(encoding="utf-8").splitlines()
        status = 0
    else:
        try:
            lines, stderr, status = run_port(command, cases_path, timeout=args.timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            print(f"error: cannot run {' '.join(command)}: {exc}", file=sys.stderr)
            return 1
        if stderr.strip():
            print("port stderr (last lines):\n  " + "\n  ".join(stderr.strip().splitlines()[-10:]),
                  file=sys.stderr)
    rep = check(cases, lines)
    print(f"{cases_path.name} ({header['format']}): {rep.summary()}")
    if rep.unsupported and not args.allow_unsupported:
        rep.failures.append(f"{sum(rep.unsupported.values())} case(s) unsupported, e.g. {rep.unsupported_ids[0]} "
                            "(--allow-unsupported to accept)")
    if status != 0:
        rep.failures.append(f"the port exited with status {status}")
    if rep.first_failure:
        print("FIRST MISMATCH: " + rep.first_failure)
    for msg in [m for m in rep.failures if m][:20]:
        print("FAIL: " + msg)
    return 0 if rep.ok else 1


if __name__ == "__main__":
    sys.exit(main())
