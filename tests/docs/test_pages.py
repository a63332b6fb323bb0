"""Every code block of README.md and docs/*.md runs as written (issue: "every code block in docs/*.md
must run as written"), in a fresh folder per page, one interpreter per block; see ``_markdown.py``
for what each kind of block does and ``ALLOWED`` for the blocks that do not run, with the reason."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._support import child_env, oracle_missing
from tests.docs._markdown import PAGES, ROOT, Block, blocks, output_matches, transcript

RUNNER = Path(__file__).resolve().parent / "_run_block.py"

# (page, first line of the block) -> why the block does not run here.
_INSTALL = "installs the package (a new virtual environment, a build and about 1 GB of downloads)"
_CLUSTER = ("needs a cluster file and its databases (docs/migrate.md); tests/migrate/test_migrate.py runs "
            "these commands on such a cluster")
_PSEUDO = "pseudocode of the algorithm (the C kernels and the pure-Python oracles implement it)"
_JSON = "a fragment of the document format, shown for reading (tests/hashing and tests/routing check documents)"
ALLOWED: dict[tuple[str, str], str] = {
    ("README.md", "python3 -m venv .venv && .venv/bin/pip install '.[test]' && .venv/bin/shardhash demo"): _INSTALL,
    ("README.md", ".venv/bin/python -m pytest"): "runs the whole test suite, this test included",
    ("README.md", "shardhash migrate start --config cluster.toml --add s4      # move the data itself, live"):
        _CLUSTER + "; `demo --migrate` moves 1M rows under 8 writers (tests/migrate/test_migrate.py runs "
        "the demo on 5,000)",
    ("README.md", "src/shardhash/_core/       plain C (no Python.h): common/ (CPU dispatch), hash/ (hash "
                  "functions),"): "the source tree's layout, not code",
    ("docs/examples.md", "$ shardhash demo"): "10M ids per strategy (about 12 s on 2 cores), and its Mkeys/s "
        "column and total time depend on the machine; tests/cli/test_cli.py runs the demo",
    ("docs/examples.md", "shardhash migrate init  --config cluster.toml"): _CLUSTER,
    ("docs/distributed.md", "pip install 'shardhash[dask]'    # dask[dataframe], distributed, pyarrow"): _INSTALL,
    ("docs/distributed.md", "shardhash route new.json ids/ -o routed/ --engine dask --scheduler tcp://host:8786"):
        "names remote clusters (tcp://host:8786, spark://host:7077, ray://host:10001); "
        "tests/engines/test_engines_cli.py runs these commands on local clusters",
    ("docs/architecture.md", "Python API        shardhash.hashing, shardhash.routing (one module per strategy), "
                             "plan, cli,"): "a diagram of the layers",
    ("docs/compat.md", "SELECT shardid, shardminvalue::int, shardmaxvalue::int"):
        "SQL for a Citus coordinator, which is not packaged for Debian or PyPI",
    ("docs/routers.md", "mix64(z):"): _PSEUDO,
    ("docs/routers.md", "b = -1; j = 0                                  # signed 64-bit integers"): _PSEUDO,
    ("docs/routers.md", "offset[i] = mix64(k ^ 0x6f66667365743a31) mod M"): _PSEUDO,
    ("docs/routers.md", "GOLDEN = 0x9e3779b97f4a7c15            # 2^64 / golden ratio, odd"): _PSEUDO,
    ("docs/routers.md", 'rehash(h, b) = mix64((h ^ 0x6d656d656e746f31) + b * GOLDEN)     # "memento1"'): _PSEUDO,
    ("docs/routers.md", '{"format": "shardhash.router/1",'):
        "a router document shown for reading (its fingerprint elided); tests/routing checks documents",
    ("docs/protocol.md", '{"format": "shardhash.codec/1", "int_encoding": "le64", "normalization": null,'): _JSON,
    ("docs/protocol.md", '{"format": "shardhash.hasher/1", "algorithm": "xxh3_64", "seed": 7,'): _JSON,
    ("docs/protocol.md", '"key_type": {"format": "shardhash.keytype/1", "type": "int"}'): _JSON,
    ("docs/migrate.md", "shardhash migrate init    --config cluster.toml"):
        "a synopsis (`verify | cutover | ...`, `[MIGRATION]`), not commands to paste",
    ("docs/migrate.md", 'metadata = "sqlite:meta.db"                 # the metadata store: SQLite, or'):
        "a cluster file (TOML) with `...` in an inline router, shown for reading",
    ("docs/migrate.md", "preparing -> copying -> catching-up -> freezing -> cutover -> retained -> cleaning "
                        "-> cleaned"): "a state diagram",
    ("docs/lookups.md", 'LookupIndex(name, *, lookup, owner, owner_table, owner_key="id", owner_value=name,'):
        "the API's signatures, not code",
    ("docs/lookups.md", 'cluster.add_lookup("email", group="email_lookup", owner_group="users", '
                        'owner_table="users")'): "a fragment: it needs a migrate Cluster with these groups",
    ("docs/scatter.md", "scatter_gather(query, shards, *, params=(), order_by, unique, limit=None, cursor=None,"):
        "the API's signatures, not code",
}

# Blocks known to fail as written, on pages this test does not edit: each must still fail
# (so that a fixed block is noticed and moved out of here), and is reported.
KNOWN_BROKEN: dict[tuple[str, str], str] = {}

# Pages whose blocks start engines (a JVM, Ray, Dask workers): about 45 s on 2 idle cores, Spark's
# block alone more than 20 s.
SLOW_PAGES = {"docs/distributed.md"}
# Pages that start engines carry the `engines` marker: left out of the default run, they run with
# the engine tests (-m engines, .ci/post.d/45-engines.sh).
ENGINE_PAGES = {"docs/distributed.md"}
REQUIRES = {"docs/distributed.md": ("dask", "distributed", "pyspark", "ray", "pyarrow")}
NEEDS_JAVA = {"docs/distributed.md"}


def _env() -> dict[str, str]:
    """This run's environment, importing the same shardhash, with this interpreter's bin folder (the
    ``shardhash`` command, ``python3`` for Spark's workers) first on PATH."""
    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("PYTHONSTARTUP", None)
    return env


def _require(page: str) -> None:
    """The systems a page's blocks run: missing, they fail in CI and skip elsewhere."""
    for mod in REQUIRES.get(page, ()):
        if importlib.util.find_spec(mod) is None:
            oracle_missing(f"{page}: {mod}", "pip install '.[test]'")
    if page in NEEDS_JAVA and shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        oracle_missing(f"{page}: Java", "Spark needs Java 17 (Debian: openjdk-17-jdk-headless)")


def _run(args: list[str], cwd: Path, *, merge: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``args`` in ``cwd``; with ``merge``, stderr goes into stdout as on a terminal."""
    return subprocess.run(args, cwd=cwd, env=_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT if merge else subprocess.PIPE, text=True, timeout=600)


def _show(p: subprocess.CompletedProcess[str]) -> str:
    return f"exit {p.returncode}\n--- stdout ---\n{p.stdout[-4000:]}\n--- stderr ---\n{(p.stderr or '')[-4000:]}"


def run_block(b: Block, folder: Path, prev_stdout: str | None) -> tuple[str | None, str]:
    """Run one block in ``folder``; return (its stdout when it is a script, "" or why it failed)."""
    kind = b.kind
    if kind in ("script", "doctest"):
        f = folder / f"block_{Path(b.page).stem}_{b.line}.py"
        f.write_text(b.text, encoding="utf-8")
        args = [sys.executable, str(RUNNER)] + (["--doctest"] if kind == "doctest" else []) + [
            str(f), b.page, str(b.line)]
        p = _run(args, folder)
        f.unlink()
        if p.returncode == 0:
            return (p.stdout if kind == "script" else None), ""
        # name the page's lines in the traceback: line n of the block is line b.line + n of the page
        p.stderr = re.sub(rf'File "{re.escape(str(f))}", line (\d+)',
                          lambda m: f'File "{b.page}", line {b.line + int(m.group(1))}', p.stderr)
        return None, _show(p)
    if kind == "shell":
        p = _run(["bash", "-e", "-o", "pipefail", "-c", b.text], folder)
        return None, "" if p.returncode == 0 else _show(p)
    if kind == "transcript":
        for cmd, expected in transcript(b.text):
            p = _run(["bash", "-e", "-o", "pipefail", "-c", cmd], folder, merge=True)
            if p.returncode != 0:
                return None, f"$ {cmd}\n{_show(p)}"
            if any(ln.strip() for ln in expected) and not output_matches(p.stdout, expected):
                return None, f"$ {cmd}\nprinted:\n{p.stdout}\nthe text shows:\n" + "\n".join(expected)
        return None, ""
    if kind == "output":
        if prev_stdout is None:
            return None, "an output block after a python block that did not run"
        if not output_matches(prev_stdout, b.text.splitlines()):
            return None, f"the block above printed:\n{prev_stdout}\nthe text shows:\n{b.text}"
        return None, ""
    return None, f"a {b.lang or 'plain'} block that nothing runs: give it a runnable kind or a reason in ALLOWED"


def _key(b: Block) -> tuple[str, str]:
    return (b.page, b.first)


def run_page(page: str, folder: Path) -> list[str]:
    failures: list[str] = []
    stdout: str | None = None
    for b in blocks(page):
        if _key(b) in ALLOWED:
            stdout = None
            continue
        t0 = time.perf_counter()
        stdout, err = run_block(b, folder, stdout)
        took = time.perf_counter() - t0
        print(f"{b.where} {b.kind}: {took:.1f} s{' FAILED' if err else ''}")
        if _key(b) in KNOWN_BROKEN:
            if not err:
                failures.append(f"{b.where} ({b.kind}) runs now: remove it from KNOWN_BROKEN")
            continue
        if err:
            failures.append(f"{b.where} ({b.kind} block starting {b.first!r}) fails:\n{err}")
    return failures


@pytest.mark.parametrize("page", [pytest.param(p, marks=[pytest.mark.slow, pytest.mark.engines] if p in ENGINE_PAGES
                                                 else [pytest.mark.slow] if p in SLOW_PAGES else [])
                                  for p in PAGES])
def test_page_runs(page: str, tmp_path: Path) -> None:
    if not (ROOT / "docs").is_dir():  # wheels are tested with a copy of tests/ and bench/ only
        pytest.skip("docs/ is not beside tests/")
    _require(page)
    failures = run_page(page, tmp_path)
    assert not failures, "\n\n".join(failures)


def test_every_block_runs_or_has_a_reason() -> None:
    if not (ROOT / "docs").is_dir():
        pytest.skip("docs/ is not beside tests/")
    every = [b for p in PAGES for b in blocks(p)]
    keys = {_key(b): b for b in every}
    stale = [k for k in [*ALLOWED, *KNOWN_BROKEN] if k not in keys]
    assert not stale, f"entries that match no block: {stale}"
    ambiguous = [k for k in [*ALLOWED, *KNOWN_BROKEN] if sum(_key(b) == k for b in every) > 1]
    assert not ambiguous, f"entries that match more than one block: {ambiguous}"
    assert not set(ALLOWED) & set(KNOWN_BROKEN)
    silent = [b.where for b in keys.values() if b.kind == "other" and _key(b) not in ALLOWED]
    assert not silent, f"blocks that neither run nor have a reason: {silent}"
    assert all(r.strip() for r in [*ALLOWED.values(), *KNOWN_BROKEN.values()])
