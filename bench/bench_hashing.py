"""Benchmarks of batch hashing, each shardhash case beside its peers in one group.

* ``int64-10M``: ``hash_array(keys, "xxh3_64")`` on 10M random int64 (one
  thread and the default thread count) vs polars ``Series.hash`` and
  ``pandas.util.hash_array``;
* ``str-arrow-1M``: 1M strings of 26 bytes from a pyarrow ``string`` array
  (and from the polars Series itself) vs polars ``Series.hash``;
* ``str-object-1M``: the same strings from a numpy object array vs a Python
  loop over ``xxhash.xxh3_64_intdigest(s.encode())``.

At the end of the module a summary prints, per group, each case's best and
median time and the ratio peer time / shardhash time (> 1: shardhash is
faster).  Run for real with ``--benchmark-enable``; under the default
``--benchmark-disable`` the sizes shrink to a few thousand keys and each case
runs once as a plain test (so the file never rots).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from shardhash import hash_array

INT_KEYS = 10_000_000
STR_KEYS = 1_000_000
SMALL = 5_000

# group -> case -> (best seconds, median seconds, keys)
RESULTS: dict[str, dict[str, tuple[float, float, int]]] = defaultdict(dict)
# the shardhash case each group's ratios are taken against
BASELINE = {"int64-10M": "shardhash threads=1", "str-arrow-1M": "shardhash arrow threads=1",
            "str-object-1M": "shardhash object array"}


def _enabled(request: pytest.FixtureRequest) -> bool:
    # --benchmark-enable on the command line overrides the --benchmark-disable of addopts
    opt = request.config.getoption
    return not opt("benchmark_disable") or bool(opt("benchmark_enable"))


class _Summary:
    """Prints the ratios at the end of the session, after pytest-benchmark's tables."""

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not RESULTS:
            return
        w = terminalreporter.write_line
        terminalreporter.section("shardhash hashing: ratios (case time / shardhash time; > 1: shardhash faster)")
        for group, cases in RESULTS.items():
            base = cases.get(BASELINE[group])
            w(f"{group} (against {BASELINE[group]!r}):")
            for case, (best, median, n) in cases.items():
                line = (f"  {case:32s} best {best * 1e3:8.2f} ms  median {median * 1e3:8.2f} ms  "
                        f"{best / n * 1e9:7.2f} ns/key")
                if base is not None and case != BASELINE[group]:
                    line += f"   x{best / base[0]:.2f} (best)  x{median / base[1]:.2f} (median)"
                w(line)


@pytest.fixture(scope="module", autouse=True)
def _summary(request: pytest.FixtureRequest) -> None:
    pm = request.config.pluginmanager
    if _enabled(request) and not pm.has_plugin("shardhash-bench-hashing-summary"):
        pm.register(_Summary(), "shardhash-bench-hashing-summary")


def _run(benchmark: Any, request: pytest.FixtureRequest, group: str, case: str, n: int,
         fn: Callable[[], Any], rounds: int) -> Any:
    result = benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=1 if _enabled(request) else 0)
    stats = getattr(benchmark, "stats", None)
    if _enabled(request) and stats is not None:
        RESULTS[group][case] = (float(stats.stats.min), float(stats.stats.median), n)
        benchmark.extra_info["ns_per_key"] = round(stats.stats.min / n * 1e9, 3)
    return result


# ---------------------------------------------------------------------------
# data (built once per module and size)

_CACHE: dict[tuple[str, int], Any] = {}


def int_keys(n: int) -> np.ndarray:
    key = ("int", n)
    if key not in _CACHE:
        _CACHE[key] = np.random.default_rng(1).integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    keys: np.ndarray = _CACHE[key]
    return keys


def str_keys(n: int) -> list[str]:
    key = ("str", n)
    if key not in _CACHE:
        rnd = np.random.default_rng(2).integers(0, 2**48, n, dtype=np.int64)
        # "user:00000042:3f2a9c01bd77" -- 26 bytes each
        _CACHE[key] = [f"user:{i:08d}:{int(x):012x}" for i, x in enumerate(rnd)]
    strs: list[str] = _CACHE[key]
    return strs


def _xxh3_loop(strs: list[str]) -> list[int]:
    import xxhash
    f = xxhash.xxh3_64_intdigest
    return [f(s.encode()) for s in strs]


# ---------------------------------------------------------------------------
# 10M random int64

INT_CASES = ["shardhash threads=1", "shardhash threads=auto", "polars Series.hash", "pandas hash_array"]


@pytest.mark.benchmark(group="int64-10M")
@pytest.mark.parametrize("case", INT_CASES)
def test_int64(benchmark: Any, request: pytest.FixtureRequest, case: str) -> None:
    n = INT_KEYS if _enabled(request) else SMALL
    keys = int_keys(n)
    out = np.empty(n, np.uint64)
    if case == "shardhash threads=1":
        fn: Callable[[], Any] = lambda: hash_array(keys, "xxh3_64", out=out, threads=1)  # noqa: E731
    elif case == "shardhash threads=auto":
        fn = lambda: hash_array(keys, "xxh3_64", out=out)  # noqa: E731
    elif case == "polars Series.hash":
        pl = pytest.importorskip("polars")
        s = pl.Series(keys)
        fn = lambda: s.hash(seed=0)  # noqa: E731
    else:
        pd = pytest.importorskip("pandas")
        fn = lambda: pd.util.hash_array(keys)  # noqa: E731
    result = _run(benchmark, request, "int64-10M", case, n, fn, rounds=15)
    assert len(result) == n
    if case.startswith("shardhash"):
        import xxhash
        assert [int(v) for v in out[:200]] == [
            xxhash.xxh3_64_intdigest(int(k).to_bytes(8, "little", signed=True)) for k in keys[:200]]


# ---------------------------------------------------------------------------
# 1M strings of 26 bytes, columnar

ARROW_CASES = ["shardhash arrow threads=1", "shardhash arrow threads=auto", "shardhash polars Series",
               "polars Series.hash"]


@pytest.mark.benchmark(group="str-arrow-1M")
@pytest.mark.parametrize("case", ARROW_CASES)
def test_strings_arrow(benchmark: Any, request: pytest.FixtureRequest, case: str) -> None:
    pa = pytest.importorskip("pyarrow")
    n = STR_KEYS if _enabled(request) else SMALL
    strs = str_keys(n)
    out = np.empty(n, np.uint64)
    if case.startswith("shardhash arrow"):
        arr = pa.array(strs, pa.string())
        threads = 1 if case.endswith("threads=1") else None
        fn: Callable[[], Any] = lambda: hash_array(arr, "xxh3_64", out=out, threads=threads)  # noqa: E731
    else:
        pl = pytest.importorskip("polars")
        s = pl.Series(strs)
        if case == "shardhash polars Series":
            fn = lambda: hash_array(s, "xxh3_64", out=out)  # noqa: E731
        else:
            fn = lambda: s.hash(seed=0)  # noqa: E731
    result = _run(benchmark, request, "str-arrow-1M", case, n, fn, rounds=15)
    assert len(result) == n
    if case.startswith("shardhash"):
        assert out[:200].tolist() == _xxh3_loop(strs[:200])


# ---------------------------------------------------------------------------
# 1M strings of 26 bytes, Python objects

OBJECT_CASES = ["shardhash object array", "shardhash list", "python xxh3_64_intdigest loop"]


@pytest.mark.benchmark(group="str-object-1M")
@pytest.mark.parametrize("case", OBJECT_CASES)
def test_strings_object(benchmark: Any, request: pytest.FixtureRequest, case: str) -> None:
    n = STR_KEYS if _enabled(request) else SMALL
    strs = str_keys(n)
    out = np.empty(n, np.uint64)
    if case == "shardhash object array":
        obj = np.array(strs, dtype=object)
        fn: Callable[[], Any] = lambda: hash_array(obj, "xxh3_64", out=out)  # noqa: E731
    elif case == "shardhash list":
        fn = lambda: hash_array(strs, "xxh3_64", out=out)  # noqa: E731
    else:
        pytest.importorskip("xxhash")
        fn = lambda: _xxh3_loop(strs)  # noqa: E731
    result = _run(benchmark, request, "str-object-1M", case, n, fn, rounds=7)
    assert len(result) == n
    if case.startswith("shardhash"):
        assert out[:200].tolist() == _xxh3_loop(strs[:200])
