"""Generate the frozen router vectors in tests/vectors/routers/.

Each file holds a router document and the expected shard index for a list
of 64-bit hashes (and, for routers on raw keys, for a list of keys).  The
expected values come from independent sources, never from the compiled
routers:

* jump_hash.json: the ``jump-consistent-hash`` package (``jump.hash(key, n)``)
  and Guava's published ``consistentHash(i, 100)`` values for i = 0..19;
* every other file: the pure-Python references in ``shardhash._reference``,
  which work from the document alone (memento.json, memento_none.json:
  ``_reference.memento``; multiprobe*.json: ``_reference.multiprobe``;
  bounded*.json: the ring's reference, since ``route`` of a bounded-loads
  router is the plain ring's answer).

Run once when a router type is added; existing files are frozen (the tool
refuses to overwrite a file whose content would change unless --force).
``--check`` regenerates every file in memory and compares it, byte for byte,
with the frozen one (exit 1 on any difference, a missing file or a frozen
file the tool does not make).

    python tools/make_router_vectors.py [--force] [--out DIR]
    python tools/make_router_vectors.py --check [--out DIR]
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the router cases shared with the tests

from shardhash._reference.routing import ReferenceRouter  # noqa: E402
from shardhash.routing import MaglevRouter, Router  # noqa: E402
from tests._router_cases import HASH_ROUTERS, KEY_ROUTERS, SHARDS  # noqa: E402

OUT = ROOT / "tests" / "vectors" / "routers"

# maglev.json was frozen when MaglevRouter's default table size was 401; the
# file is regenerated from that router, not from today's default (65537).
FROZEN_WITH: dict[str, Callable[[], Router]] = {"maglev": lambda: MaglevRouter(SHARDS[:4], table_size=401)}

# Guava 31.1 Hashing.consistentHash(i, 100), i = 0..19 (quoted in the routing issue).
GUAVA_100 = [0, 55, 62, 8, 45, 59, 86, 97, 82, 59, 73, 37, 17, 56, 86, 21, 90, 37, 38, 83]


def sample_hashes(n: int = 200) -> list[int]:
    """Edge values plus a fixed 64-bit LCG sequence (Knuth's MMIX constants)."""
    out = [0, 1, 2, 41, 2**32 - 1, 2**32, 2**62, 2**63 - 1, 2**63, 2**64 - 2, 2**64 - 1]
    x = 0x9E3779B97F4A7C15
    while len(out) < n:
        x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
        out.append(x)
    return out


SAMPLE_KEYS = [0, 1, -1, 7, 999, 1000, 1_000_000, 2**40, 2**63 - 1, "", "a", "user:42", "tenant-huge",
               "tenant-7", "日本", 42]


def jump_vectors() -> dict[str, Any]:
    import jump  # the jump-consistent-hash package

    keys = sample_hashes(100)
    cases = []
    for n in (1, 2, 3, 7, 100, 1000, 65536, 2**31 - 1):
        cases.append({"num_buckets": n, "keys": keys, "buckets": [jump.hash(k, n) for k in keys]})
    cases.append({"num_buckets": 100, "keys": list(range(20)), "buckets": GUAVA_100,
                  "source": "Guava consistentHash(i, 100)"})
    return {"algorithm": "jump", "source": "jump-consistent-hash (PyPI) jump.hash, and Guava", "cases": cases}


def router_vectors(name: str, factory: Callable[[], Router], keyed: bool) -> dict[str, Any]:
    router = factory()
    doc = router.to_dict()
    ref = ReferenceRouter(doc)
    vec: dict[str, Any] = {"name": name, "document": doc}
    if not keyed:
        hashes = sample_hashes()
        if doc["type"] in ("ring", "bounded"):
            for t in ref.tokens[:20]:
                hashes += [t, (t + 1) % 2**64, (t - 1) % 2**64]
        if doc["type"] == "hash_range":
            for s in ref.splits:
                hashes += [s - 1, s]
        vec["hashes"] = hashes
        vec["routes"] = [ref.route_hash(h) for h in hashes]
        keys: list[Any] = [k for k in SAMPLE_KEYS if not isinstance(k, int) or k >= -(2**63)]
        if doc.get("key_prefix"):
            keys = [(k, 1) for k in keys]
    elif doc["type"] == "range" and isinstance(doc["params"]["splits"][0], str):
        keys = ["", "a", "g", "gz", "h", "p", "pa", "x", "xx", "zz", "Ω"]
    else:
        keys = [k for k in SAMPLE_KEYS if isinstance(k, int)] + [-(2**63), 2**64 - 1, 2_000_000, 1_999_999, -6]
    vec["keys"] = [list(k) if isinstance(k, tuple) else k for k in keys]
    vec["key_is_tuple"] = [isinstance(k, tuple) for k in keys]
    vec["key_routes"] = [ref.route_key(k) for k in keys]
    return vec


def render(data: Any) -> str:
    """A vector file's text: indented JSON with sorted keys."""
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def check_frozen(out_dir: Path, files: dict[str, Any], *, ignore: tuple[str, ...] = ("README.md",)) -> int:
    """Compare each regenerated ``{file name: data}`` with the file in ``out_dir``;
    print what differs; return the number of files that differ, are missing,
    or are in ``out_dir`` without being regenerated (``ignore`` aside)."""
    bad = 0
    for fname, data in sorted(files.items()):
        path = out_dir / fname
        text = render(data)
        if not path.exists():
            print(f"{path}: missing")
            bad += 1
            continue
        frozen = path.read_text(encoding="utf-8")
        if frozen != text:
            bad += 1
            diff = list(difflib.unified_diff(frozen.splitlines(True), text.splitlines(True), str(path), "regenerated"))
            sys.stdout.writelines(diff[:40])
            print(f"{path}: DIFFERS ({len(diff)} diff lines)")
    for path in sorted(out_dir.iterdir()):
        if path.name not in files and path.name not in ignore:
            print(f"{path}: not made by this tool, so not checked")
            bad += 1
    print(f"{out_dir}: {len(files)} files regenerated, {bad} problem(s)")
    return bad


def write_frozen(out_dir: Path, files: dict[str, Any], *, force: bool) -> None:
    """Write each ``{file name: data}`` as indented JSON; a file that exists
    with other content is frozen: left alone (and said) unless ``force``."""
    for fname, data in files.items():
        path = out_dir / fname
        text = render(data)
        if path.exists() and path.read_text(encoding="utf-8") != text and not force:
            print(f"{fname}: differs from the frozen file; not overwritten (use --force)")
            continue
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")


def all_files() -> dict[str, Any]:
    files = {"jump_hash.json": jump_vectors()}
    for name, f in HASH_ROUTERS.items():
        files[f"{name}.json"] = router_vectors(name, FROZEN_WITH.get(name, f), False)
    for name, f in KEY_ROUTERS.items():
        files[f"{name}.json"] = router_vectors(name, f, True)
    return files


def frozen_main(argv: list[str] | None, default_out: Path, make: Callable[[], dict[str, Any]]) -> int:
    """The command line of a tool that makes a folder of frozen JSON vector
    files: write them (``--force`` to overwrite a differing one) or, with
    ``--check``, regenerate them in memory and compare."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--check", action="store_true", help="regenerate in memory and compare with the files in --out")
    ap.add_argument("--out", type=Path, default=default_out, help="directory to write to (default: %(default)s)")
    args = ap.parse_args(argv)
    out_dir: Path = args.out
    if args.check:
        return 1 if check_frozen(out_dir, make()) else 0
    out_dir.mkdir(parents=True, exist_ok=True)
    write_frozen(out_dir, make(), force=args.force)
    return 0


def main(argv: list[str] | None = None) -> int:
    return frozen_main(argv, OUT, all_files)


if __name__ == "__main__":
    sys.exit(main())
