"""Generate the frozen replica-list vectors in tests/vectors/replicas/.

Each file holds a router document (one of the shared router cases of the
tests, or one with a ``zones`` field) and, for a list of 64-bit hashes, the
expected replica lists (shard indices) for several list lengths, with and
without a failure-domain map.  The expected lists come from the pure-Python
reference ``shardhash._reference.replicas`` (docs/routers.md, section 2.17),
which works from the document alone, never from the compiled routers.

Run once when a router type gains replica lists; existing files are frozen
(the tool refuses to overwrite a file whose content would change unless
--force).  ``--check`` regenerates every file in memory and compares it, byte
for byte, with the frozen one (exit 1 on any difference).

    python tools/make_replica_vectors.py [--force] [--out DIR]
    python tools/make_replica_vectors.py --check [--out DIR]
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the router cases shared with the tests

from shardhash._reference.replicas import replica_lists  # noqa: E402
from shardhash._reference.routing import ReferenceRouter  # noqa: E402
from shardhash.routing import RingRouter, Router  # noqa: E402
from tests._router_cases import HASH_ROUTERS  # noqa: E402
from tools.make_router_vectors import frozen_main, sample_hashes  # noqa: E402

OUT = ROOT / "tests" / "vectors" / "replicas"
NO_LISTS = ("directory",)
ZONE_NAMES = ("east", "west", "north")


def _zones(shards: list[str]) -> dict[str, str]:
    """Zones east, west, north, east, ... in shard order (one zone for a single shard)."""
    return {s: ZONE_NAMES[i % len(ZONE_NAMES)] for i, s in enumerate(shards)}


def replica_vectors(name: str, factory: Callable[[], Router]) -> dict[str, Any]:
    doc = factory().to_dict()
    ref = ReferenceRouter(doc)
    hashes = sample_hashes(60)
    if doc["type"] == "ring":
        for t in ref.tokens[:8]:
            hashes += [t, (t + 1) % 2**64]
    if doc["type"] == "hash_range":
        for s in ref.splits:
            hashes += [s - 1, s]
    shards = list(doc["shards"])
    ns = sorted({1, 2, min(3, len(shards)), len(shards)} & set(range(1, len(shards) + 1)))
    cases: list[dict[str, Any]] = []
    for n in ns:
        cases.append({"n": n, "zones": None, "lists": replica_lists(doc, hashes, n)})
    zones = _zones(shards)
    for n in sorted({min(3, len(shards)), len(shards)}):
        cases.append({"n": n, "zones": zones, "lists": replica_lists(doc, hashes, n, zones)})
    return {"name": name, "document": doc, "hashes": hashes, "cases": cases,
            "source": "shardhash._reference.replicas (docs/routers.md 2.17)"}


def zoned_document_vectors() -> dict[str, Any]:
    """A document carrying ``zones`` (routers.md's ring A=20, D=40, B=50, C=80)."""
    ring = RingRouter(["A", "B", "C", "D"], tokens={"A": [20], "B": [50], "C": [80], "D": [40]})
    zoned = ring.with_zones({"A": "east", "B": "west", "C": "west", "D": "west"})
    vec = replica_vectors("ring_zoned_document", lambda: zoned)
    # the document's own zones apply when a case gives none
    hashes = vec["hashes"] + [35]
    vec["hashes"] = hashes
    vec["cases"] = [{"n": n, "zones": None, "lists": replica_lists(vec["document"], hashes, n)}
                    for n in (1, 2, 3, 4)]
    return vec


def all_files() -> dict[str, Any]:
    files = {f"{name}.json": replica_vectors(name, f) for name, f in HASH_ROUTERS.items() if name not in NO_LISTS}
    files["ring_zoned_document.json"] = zoned_document_vectors()
    return files


def main(argv: list[str] | None = None) -> int:
    return frozen_main(argv, OUT, all_files)


if __name__ == "__main__":
    sys.exit(main())
