#!/usr/bin/env python3
"""Compare the benchmark suite of two git revisions.

Usage::

    python bench/compare.py BASE HEAD [--fail-threshold 10%] [--repeat N]
                            [--markdown FILE] [--json FILE] [-- PYTEST-ARGS...]

Each revision is checked out into its own git worktree in a temporary
directory, installed with its ``[test]`` extra into its own fresh venv, and
the bench suite (``bench/bench_*.py`` and ``bench/test_*.py``) is run on it
with pytest-benchmark
(``--benchmark-enable --benchmark-only --benchmark-json``).  One table of
per-benchmark medians and ratios (HEAD/BASE) is printed; the exit status is
1 when any median regressed by more than the threshold (default 10%), 0
otherwise, and 2 when a revision could not be built or benchmarked.

With ``--repeat N`` the two suites are run N times, alternating BASE and
HEAD, and each benchmark keeps its best (lowest) median: a slow spell on the
machine then hurts neither side more than the other.

By default both builds run HEAD's bench suite (``--suite head``), so that a
change to a benchmark itself (its sizes, its rounds) cannot pass for a change
in speed; a HEAD benchmark that fails on BASE (say, it uses a new function)
is reported as new.  ``--suite own`` runs each revision's own suite instead.

Benchmarks are matched by their pytest node id; one present in a single
revision is listed as new or removed and never fails the comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from dataclasses import dataclass
from pathlib import Path

EXIT_OK, EXIT_REGRESSION, EXIT_ERROR = 0, 1, 2


class CompareError(RuntimeError):
    """A revision could not be checked out, built or benchmarked."""


@dataclass(frozen=True)
class Row:
    name: str
    base: float | None  # median seconds
    head: float | None

    @property
    def ratio(self) -> float | None:
        if self.base is None or self.head is None or self.base <= 0:
            return None
        return self.head / self.base


def parse_threshold(text: str) -> float:
    """``"10%"``, ``"10"`` or ``"0.10"`` -> 0.10 (a fraction of the base median)."""
    raw = text.strip()
    try:
        if raw.endswith("%"):
            value = float(raw[:-1]) / 100.0
        else:
            value = float(raw)
            if value >= 1.0:  # "10" means 10%
                value /= 100.0
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a threshold: {text!r} (use e.g. 10% or 0.10)") from None
    if not 0.0 < value < 10.0:
        raise argparse.ArgumentTypeError(f"threshold out of range: {text!r}")
    return value


def run(cmd: list[str], *, cwd: Path | None = None, quiet: bool = False) -> subprocess.CompletedProcess[str]:
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(
        cmd,
        cwd=cwd,
        text=True,
        stdout=subprocess.PIPE if quiet else None,
        stderr=subprocess.STDOUT if quiet else None,
        check=False,
    )


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], text=True, capture_output=True, check=False)
    if proc.returncode != 0:
        detail = proc.stderr.strip() or "no such revision"
        raise CompareError(f"git {' '.join(args)} failed: {detail}")
    return proc.stdout.strip()


def venv_python(env_dir: Path) -> Path:
    if os.name == "nt":
        return env_dir / "Scripts" / "python.exe"
    return env_dir / "bin" / "python"


def install(label: str, tree: Path, env_dir: Path, python: str) -> Path:
    """Create a fresh venv for one revision and install it with its test extra."""
    print(f"\n=== {label}: building into {env_dir}", flush=True)
    if python == sys.executable:
        venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    else:
        proc = run([python, "-m", "venv", "--clear", str(env_dir)])
        if proc.returncode != 0:
            raise CompareError(f"{label}: could not create a venv with {python}")
    py = venv_python(env_dir)
    steps = [
        [str(py), "-m", "pip", "install", "-q", "--upgrade", "pip"],
        [str(py), "-m", "pip", "install", "-q", f"{tree}[test]"],
    ]
    t0 = time.monotonic()
    for cmd in steps:
        proc = run(cmd, quiet=True)
        if proc.returncode != 0:
            sys.stdout.write(proc.stdout or "")
            raise CompareError(f"{label}: installation failed")
    print(f"=== {label}: installed in {time.monotonic() - t0:.0f} s", flush=True)
    return py


def bench(label: str, tree: Path, py: Path, out: Path, pytest_args: list[str],
          tolerate_failures: bool = False) -> dict[str, float]:
    """Run one revision's bench/ suite; return {benchmark node id: median seconds}."""
    # The files are named explicitly, so that bench_*.py modules are collected
    # whatever the revision's pytest `python_files` setting says.
    files = sorted({p.relative_to(tree).as_posix()
                    for pattern in ("bench_*.py", "test_*.py", "*_test.py")
                    for p in (tree / "bench").glob(pattern)})
    if not files:
        print(f"=== {label}: no bench/bench_*.py or bench/test_*.py, nothing to run", flush=True)
        return {}
    print(f"\n=== {label}: benchmarks", flush=True)
    # From the revision's own tree, so that its pytest configuration applies;
    # the src/ layout keeps the checkout's sources off sys.path, so the
    # installed build is the one measured.
    cmd = [
        str(py), "-m", "pytest", *files, "-q", "-p", "no:cacheprovider",
        "--benchmark-enable", "--benchmark-only", f"--benchmark-json={out}",
        "--benchmark-columns=min,median,iqr,rounds",
        *(["--continue-on-collection-errors"] if tolerate_failures else []),
        *pytest_args,
    ]
    proc = run(cmd, cwd=tree)
    if proc.returncode == 5:  # no benchmark collected
        return {}
    if proc.returncode == 1 and tolerate_failures and out.is_file():
        print(f"=== {label}: some benchmarks failed; they count as new in HEAD", flush=True)
    elif proc.returncode != 0:
        raise CompareError(f"{label}: the benchmark run failed (pytest exit status {proc.returncode})")
    data = json.loads(out.read_text(encoding="utf-8"))
    return {b["fullname"]: float(b["stats"]["median"]) for b in data.get("benchmarks", [])}


def merge_best(runs: list[dict[str, float]]) -> dict[str, float]:
    best: dict[str, float] = {}
    for result in runs:
        for name, median in result.items():
            best[name] = min(median, best.get(name, median))
    return best


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def verdict(row: Row, threshold: float) -> str:
    if row.base is None:
        return "new"
    if row.head is None:
        return "removed"
    ratio = row.ratio
    assert ratio is not None
    if ratio > 1.0 + threshold:
        return "REGRESSED"
    if ratio < 1.0 / (1.0 + threshold):
        return "faster"
    return "same"


def build_rows(base: dict[str, float], head: dict[str, float]) -> list[Row]:
    names = sorted(set(base) | set(head))
    return [Row(n, base.get(n), head.get(n)) for n in names]


def table(rows: list[Row], threshold: float, base_label: str, head_label: str) -> list[list[str]]:
    out = [["benchmark", f"BASE {base_label}", f"HEAD {head_label}", "HEAD/BASE", "verdict"]]
    for r in rows:
        ratio = r.ratio
        out.append([
            r.name,
            fmt_time(r.base),
            fmt_time(r.head),
            "-" if ratio is None else f"{ratio:.3f}",
            verdict(r, threshold),
        ])
    return out


def render_text(cells: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    lines = []
    for k, row in enumerate(cells):
        parts = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(parts).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_markdown(cells: list[list[str]], title: str) -> str:
    lines = [f"### {title}", "", "| " + " | ".join(cells[0]) + " |", "|" + "---|" * len(cells[0])]
    for row in cells[1:]:
        lines.append("| `" + row[0] + "` | " + " | ".join(row[1:]) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    pytest_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, pytest_args = argv[:cut], argv[cut + 1:]
    parser = argparse.ArgumentParser(
        prog="bench/compare.py",
        usage="%(prog)s [options] BASE HEAD [-- PYTEST-ARGS...]",
        description="Build two git revisions into separate venvs, run the bench suite on each "
        "and print per-benchmark median ratios (HEAD/BASE).  Arguments after -- go to pytest.",
    )
    parser.add_argument("base", metavar="BASE", help="the reference revision (any git revision)")
    parser.add_argument("head", metavar="HEAD", help="the revision under test")
    parser.add_argument("--fail-threshold", type=parse_threshold, default=0.10, metavar="PCT",
                        help="fail when a median is slower by more than this (default: 10%%)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="run both suites N times, alternating, and keep each best median (default: 1)")
    parser.add_argument("--suite", choices=("head", "own"), default="head",
                        help="head: both builds run HEAD's bench/ (default); own: each runs its own")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter for the two venvs (default: the one running this script)")
    parser.add_argument("--repo", type=Path, default=None,
                        help="the git repository (default: the one containing this script)")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where to put worktrees and venvs (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the worktrees, venvs and JSON files")
    parser.add_argument("--json", type=Path, default=None, help="also write the comparison as JSON")
    parser.add_argument("--markdown", type=Path, default=None,
                        help="also append the table as Markdown (e.g. to $GITHUB_STEP_SUMMARY)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    try:
        repo = Path(git(args.repo or Path(__file__).resolve().parent, "rev-parse", "--show-toplevel"))
        base_sha = git(repo, "rev-parse", "--verify", "--quiet", f"{args.base}^{{commit}}")
        head_sha = git(repo, "rev-parse", "--verify", "--quiet", f"{args.head}^{{commit}}")
    except CompareError as exc:
        print(f"error: {exc or 'unknown revision'}", file=sys.stderr)
        return EXIT_ERROR
    base_label, head_label = f"{args.base} ({base_sha[:10]})", f"{args.head} ({head_sha[:10]})"

    work = Path(tempfile.mkdtemp(prefix="shardhash-compare-", dir=args.workdir))
    worktrees: list[Path] = []
    try:
        sides = []
        for label, sha in (("BASE", base_sha), ("HEAD", head_sha)):
            tree = work / label.lower()
            git(repo, "worktree", "add", "--detach", str(tree), sha)
            worktrees.append(tree)
            print(f"{label}: {sha} checked out in {tree}", flush=True)
            py = install(label, tree, work / f"venv-{label.lower()}", args.python)
            sides.append((label, tree, py))

        if args.suite == "head":
            base_tree, head_tree = sides[0][1], sides[1][1]
            shutil.rmtree(base_tree / "bench", ignore_errors=True)
            if (head_tree / "bench").is_dir():
                shutil.copytree(head_tree / "bench", base_tree / "bench")
            print("\nBASE runs HEAD's bench suite (--suite head)", flush=True)

        results: dict[str, list[dict[str, float]]] = {"BASE": [], "HEAD": []}
        for i in range(args.repeat):
            for label, tree, py in sides:
                out = work / f"{label.lower()}-{i}.json"
                tolerate = label == "BASE" and args.suite == "head"
                results[label].append(bench(label, tree, py, out, pytest_args, tolerate))
        base = merge_best(results["BASE"])
        head = merge_best(results["HEAD"])
    except CompareError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        if args.keep:
            print(f"kept: {work}")
        else:
            for tree in worktrees:
                subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(tree)],
                               check=False, capture_output=True)
            shutil.rmtree(work, ignore_errors=True)
            subprocess.run(["git", "-C", str(repo), "worktree", "prune"], check=False, capture_output=True)

    rows = build_rows(base, head)
    threshold = args.fail_threshold
    title = f"Benchmark medians, HEAD/BASE (fail above {1 + threshold:.2f})"
    regressed = [r for r in rows if verdict(r, threshold) == "REGRESSED"]
    print()
    if not rows:
        print("no benchmarks in either revision")
    else:
        cells = table(rows, threshold, base_label, head_label)
        print(title)
        print(render_text(cells))
        if args.markdown:
            with args.markdown.open("a", encoding="utf-8") as fh:
                fh.write(render_markdown(cells, title))
    if args.json:
        args.json.write_text(json.dumps({
            "base": base_sha, "head": head_sha, "threshold": threshold, "repeat": args.repeat,
            "suite": args.suite,
            "benchmarks": [{"name": r.name, "base_median": r.base, "head_median": r.head,
                            "ratio": r.ratio, "verdict": verdict(r, threshold)} for r in rows],
        }, indent=2) + "\n", encoding="utf-8")

    compared = sum(1 for r in rows if r.ratio is not None)
    print(f"\n{compared} compared, {len(regressed)} regressed by more than {threshold:.0%}, "
          f"{sum(1 for r in rows if r.base is None)} new, {sum(1 for r in rows if r.head is None)} removed")
    for r in regressed:
        print(f"REGRESSED: {r.name}: {fmt_time(r.base)} -> {fmt_time(r.head)} (x{r.ratio:.3f})", file=sys.stderr)
    return EXIT_REGRESSION if regressed else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
