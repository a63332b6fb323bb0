"""The consistent-hash ring of docs/routers.md: token placement from a router
document and the first-token-at-or-after lookup (test oracle).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from typing import Any


def ring_route(tokens: list[int], owners: list[int], h: int) -> int:
    """First token >= h, wrapping to the first token."""
    i = bisect.bisect_left(tokens, h)
    return owners[i if i < len(tokens) else 0]


def ring_tokens(doc: dict[str, Any], hasher: Callable[[Any], int]) -> tuple[list[int], list[int]]:
    """(sorted tokens, owner index of each): the explicit ``tokens``, or
    ``hasher(f"{shard}:{i}")`` for i below the shard's token count."""
    shards = doc["shards"]
    p = doc["params"]
    entries = []
    if p.get("tokens") is not None:
        for s, plist in p["tokens"].items():
            entries += [(pos, s, i) for i, pos in enumerate(plist)]
    else:
        weights = p.get("weights") or {}
        for s in shards:
            count = max(1, math.floor(p["vnodes"] * weights.get(s, 1.0) + 0.5))
            entries += [(hasher(f"{s}:{i}"), s, i) for i in range(count)]
    entries.sort()
    tokens: list[int] = []
    owners: list[int] = []
    for pos, s, _ in entries:
        if tokens and tokens[-1] == pos:
            if p.get("collisions", "error") == "error":
                raise ValueError("collision")
            continue
        tokens.append(pos)
        owners.append(shards.index(s))
    return tokens, owners
