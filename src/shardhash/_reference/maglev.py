"""Maglev's lookup table (Eisenbud et al. 2016) with credit-based weights, as
docs/routers.md describes it (test oracle).
"""

from __future__ import annotations

from shardhash._reference.splitmix64 import mix64


def maglev_table(ids: list[int], rel_weights: list[float] | None, m: int) -> list[int]:
    """Eisenbud et al. 2016, Pseudocode 1, with credit-based weights."""
    n = len(ids)
    offset = [mix64(x ^ 0x6F66667365743A31) % m for x in ids]
    skip = [mix64(x ^ 0x736B69703A312121) % (m - 1) + 1 for x in ids]
    nxt = [0] * n
    credit = [0.0] * n
    table = [-1] * m
    filled = 0
    while True:
        for i in range(n):
            if rel_weights is not None:
                credit[i] += rel_weights[i]
                if credit[i] < 1.0:
                    continue
                credit[i] -= 1.0
            c = (offset[i] + nxt[i] * skip[i]) % m
            while table[c] >= 0:
                nxt[i] += 1
                c = (offset[i] + nxt[i] * skip[i]) % m
            table[c] = i
            nxt[i] += 1
            filled += 1
            if filled == m:
                return table
