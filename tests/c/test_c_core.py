"""Build and run the plain-C core tests (tests/c/test_*.c) against the
installed package's C sources, with no Python in the loop.

The C sources are the ones shipped inside the package (``shardhash/_core``),
so this also proves that the sdist/wheel carries a complete, compilable core.
Cross builds run the same script by hand, e.g.::

    CC=aarch64-linux-gnu-gcc RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu" \\
        tests/c/run_c_tests.sh
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import shardhash

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "run_c_tests.sh"
VECTORS = HERE.parent / "vectors"
CORE = Path(shardhash.__file__).resolve().parent / "_core"
STRICT_CFLAGS = "-std=c99 -O2 -Wall -Wextra -pedantic -Werror"


def oracle_required() -> bool:
    """In CI (SHARDHASH_CI set, as in tests/conftest.py) a missing toolchain fails."""
    return os.environ.get("SHARDHASH_CI", "") not in ("", "0")


def _toolchain() -> tuple[str, str]:
    """(bash, C compiler), or skip -- or fail in CI, where both must exist."""
    if sys.platform == "win32" and not os.environ.get("CC"):
        # "bash" on Windows may be the WSL launcher, which cannot build
        # against Windows paths; run the script from MSYS2/mingw with CC set.
        msg = "on Windows the plain-C core tests run only with CC set (MSYS2/mingw shell)"
        if oracle_required():
            pytest.fail(msg + " -- required when SHARDHASH_CI=1")
        pytest.skip(msg)
    bash = shutil.which("bash")
    cc = os.environ.get("CC") or next(
        (c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
    missing = [what for what, found in (("bash", bash), ("a C compiler", cc)) if not found]
    if missing:
        msg = f"plain-C core tests need {' and '.join(missing)} (not found on PATH)"
        if oracle_required():
            pytest.fail(msg + " -- required when SHARDHASH_CI=1")
        pytest.skip(msg)
    assert bash is not None and cc is not None
    return bash, cc


def _run(vectors: Path, *tests: str, cflags: str | None = None) -> subprocess.CompletedProcess[str]:
    bash, cc = _toolchain()
    env = dict(os.environ)
    env["CC"] = cc
    if cflags is not None:
        env["CFLAGS"] = cflags
    else:
        env.setdefault("CFLAGS", STRICT_CFLAGS)
    env["SH_CORE_DIR"] = str(CORE)
    env["SH_VECTORS_DIR"] = str(vectors)
    env.pop("RUNNER", None)
    return subprocess.run([bash, str(SCRIPT), *tests], env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def test_core_sources_are_installed() -> None:
    names = {p.relative_to(CORE).as_posix() for p in CORE.rglob("*")}
    for needed in ("common/sh_common.h", "hash/sh_hash.h", "hash/sh_xxhash.c",
                   "hash/sh_murmur3.c", "hash/sh_murmur3.h", "hash/sh_fnv.c", "hash/sh_fnv.h",
                   "place/sh_jump.c", "compat/sh_cassandra.c"):
        assert needed in names, f"{needed} missing from the installed package's _core/"


@pytest.mark.slow  # (the slowest tests: 7-40 s each on 2 cores; `-m "not slow"` leaves them out)
def test_c_programs_pass() -> None:
    """Every tests/c/test_*.c builds warning-free and passes, and every vector
    kernel this CPU has ran (in CI; elsewhere a missing one is reported)."""
    res = _run(VECTORS)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "passed, 0 failed" in res.stdout, out
    assert "BUILD FAILED" not in out
    check_vector_kernels_ran(res.stdout, cpu_flags(), platform.machine(), os.environ.get("CC", ""))
    keep_output(res.stdout)


def keep_output(stdout: str) -> None:
    """With SHARDHASH_C_TESTS_LOG set (.ci/run sets it), a passing run's output is left in that file:
    the portability step (.ci/post.d/60-portability.sh, after the main suite) compares its emulated
    runs with this native one instead of building and running the programs natively again."""
    path = os.environ.get("SHARDHASH_C_TESTS_LOG", "")
    if path:
        Path(path).write_text(stdout, encoding="utf-8")


# The vector kernels the C programs print as run ("core: vector kernels run:
# ..."), with the /proc/cpuinfo flags each needs.  The kernels are built by gcc
# outside Windows and by clang (tests/c/run_c_tests.sh on Linux here).
_KERNEL_FLAGS = {
    "cassandra-avx512": ("avx512f", "avx512dq"),
    "xxh64-avx512": ("avx512f", "avx512dq"),
    "cassandra-avx2": ("avx2",),
    "lookup3-avx2": ("avx2",),
    "jump-avx2": ("avx2",),
}


def cpu_flags() -> set[str] | None:
    """The CPU's flags from /proc/cpuinfo (Linux), or None where there is none."""
    info = Path("/proc/cpuinfo")
    if not sys.platform.startswith("linux") or not info.exists():
        return None
    for line in info.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def kernels_run(stdout: str) -> set[str]:
    """The vector kernels the programs report as run."""
    lines = [ln for ln in stdout.splitlines() if ln.startswith("core: vector kernels run:")]
    assert len(lines) >= 2, f"no 'core: vector kernels run:' lines from test_compat_kernels and test_place:\n{stdout}"
    return {k for ln in lines for k in ln.split(":", 2)[2].split() if k != "none"}


def check_vector_kernels_ran(stdout: str, flags: set[str] | None, machine: str, cc: str) -> None:
    """Compare the kernels run with the CPU's flags: every kernel reported run
    needs its flags; in CI (SHARDHASH_CI) every kernel the CPU supports must
    have run, elsewhere a missing one is reported (printed and warned)."""
    ran = kernels_run(stdout)
    print(f"vector kernels run: {' '.join(sorted(ran)) or 'none'}")
    if flags is None:
        return  # no /proc/cpuinfo: nothing to compare with
    if machine.lower() in ("x86_64", "amd64"):
        unknown = ran - set(_KERNEL_FLAGS)
        assert not unknown, f"kernels {sorted(unknown)} have no known CPU flags (add them to _KERNEL_FLAGS)"
        lacking = sorted(k for k in ran if not set(_KERNEL_FLAGS[k]) <= flags)
        assert not lacking, f"kernels {lacking} ran on a CPU without their flags"
        built = "mingw" not in cc  # gcc for Windows builds no AVX kernel (src/shardhash/_core/common/sh_cpu.h)
        expected = {k for k, need in _KERNEL_FLAGS.items() if built and set(need) <= flags}
    elif machine.lower() in ("aarch64", "arm64"):
        expected = {"jump-neon"}
    else:
        expected = set()
    missing = sorted(expected - ran)
    if missing:
        msg = (f"vector kernels this CPU supports did not run: {missing} "
               f"(ran: {sorted(ran)}; CPU flags include {sorted(f for f in flags if f.startswith(('avx', 'sse4')))})")
        if oracle_required():
            pytest.fail(msg + " -- required when SHARDHASH_CI=1")
        print(msg)
        warnings.warn(msg, stacklevel=2)


_AVX512_CPU = {"avx2", "avx512f", "avx512dq", "sse4_1"}
_ALL_RUN = ("core: vector kernels run: cassandra-avx512 cassandra-avx2 xxh64-avx512 lookup3-avx2\n"
            "core: vector kernels run: jump-avx2\n")


def test_kernel_check_requires_every_supported_kernel_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison itself: a kernel the CPU has that did not run fails in CI
    and is warned about elsewhere; a kernel the CPU lacks never passes."""
    scalar_only = _ALL_RUN.replace(" xxh64-avx512", "")
    monkeypatch.setenv("SHARDHASH_CI", "1")
    check_vector_kernels_ran(_ALL_RUN, _AVX512_CPU, "x86_64", "gcc")
    check_vector_kernels_ran(_ALL_RUN.replace("cassandra-avx512 ", "").replace("xxh64-avx512 ", ""),
                             {"avx2"}, "x86_64", "gcc")
    with pytest.raises(pytest.fail.Exception, match="xxh64-avx512"):
        check_vector_kernels_ran(scalar_only, _AVX512_CPU, "x86_64", "gcc")
    with pytest.raises(AssertionError, match="without their flags"):
        check_vector_kernels_ran(_ALL_RUN, {"avx2"}, "x86_64", "gcc")
    with pytest.raises(pytest.fail.Exception, match="jump-neon"):
        check_vector_kernels_ran("core: vector kernels run: none\n" * 2, set(), "aarch64", "gcc")
    monkeypatch.setenv("SHARDHASH_CI", "0")
    with pytest.warns(UserWarning, match="xxh64-avx512"):
        check_vector_kernels_ran(scalar_only, _AVX512_CPU, "x86_64", "gcc")


def test_c_vector_program_detects_a_wrong_vector(tmp_path: Path) -> None:
    """The C checker is not vacuous: one flipped digit makes it fail."""
    lines = (VECTORS / "hashes.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
    i = next(k for k, line in enumerate(lines) if line.startswith("murmur3_128\t1\t100\t"))
    algo, seed, length, expected = lines[i].rstrip("\n").split("\t")
    flipped = expected[:-1] + ("0" if expected[-1] != "0" else "1")
    lines[i] = f"{algo}\t{seed}\t{length}\t{flipped}\n"
    (tmp_path / "hashes.tsv").write_text("".join(lines), encoding="utf-8", newline="\n")
    res = _run(tmp_path, "test_hash_vectors", cflags="-std=c99 -O0")
    assert res.returncode != 0, res.stdout + res.stderr
    assert ", 2 failed" in res.stdout, res.stdout + res.stderr


def test_keep_output_writes_the_run_only_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "c-tests.log"
    monkeypatch.delenv("SHARDHASH_C_TESTS_LOG", raising=False)
    keep_output("== test_pipe\n65 passed, 0 failed\n")
    assert not log.exists()
    monkeypatch.setenv("SHARDHASH_C_TESTS_LOG", str(log))
    keep_output("== test_pipe\n65 passed, 0 failed\n")
    assert log.read_text(encoding="utf-8") == "== test_pipe\n65 passed, 0 failed\n"
