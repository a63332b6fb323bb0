#!/usr/bin/env bash
# Portability of the plain-C core (src/shardhash/_core), no Python involved.
#
# The plain-C test programs (tests/c/run_c_tests.sh: every tests/c/test_*.c
# linked with every core file) are built and run:
#   - natively (x86-64 here; under .ci/run, the main suite's run of them is
#     taken as this one: see SHARDHASH_C_TESTS_LOG below),
#   - cross-compiled for aarch64 and run under qemu-user,
#   - cross-compiled for s390x (big-endian) and run under qemu-user,
#   - cross-compiled for Windows x86-64 with mingw-w64 and, when wine is
#     installed, run under wine (LLP64: `long` is 32 bits there; in CI,
#     SHARDHASH_CI set, a missing wine is a failure),
# every build warning-free (-Werror), and every run must print exactly what
# the native run printed.  With clang installed, the core and the tests are
# also compiled warning-free with clang (in CI a missing clang is a failure).
#
# Run from the repository root (as .ci/run does); the compilers and emulators
# come from .ci/apt.d/portability.txt.  Exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
ROOT=$(pwd)

STRICT="-std=c99 -O2 -Wall -Wextra -pedantic -Werror"
CORE="$ROOT/src/shardhash/_core"
RUN_C_TESTS="$ROOT/tests/c/run_c_tests.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/shardhash-portability.XXXXXX")
trap 'rm -rf "$work"' EXIT

passed=0
failed=0
failures=()
ok()   { echo "PASS: $1"; passed=$((passed + 1)); }
bad()  { echo "FAIL: $1" >&2; failed=$((failed + 1)); failures+=("$1"); }
skip() { echo "SKIP: $1"; }
# In CI (SHARDHASH_CI set and not 0) a missing optional tool (wine, clang) is a
# failure, as a missing oracle is in the Python tests; elsewhere a skip.
in_ci() { [ -n "${SHARDHASH_CI:-}" ] && [ "${SHARDHASH_CI}" != 0 ]; }
optional_missing() {  # optional_missing WHAT
  if in_ci; then bad "$1 (required in CI: SHARDHASH_CI is set)"; else skip "$1"; fi
}
section() { printf '\n--- %s\n' "$*"; }

need() {  # need TOOL DEBIAN-PACKAGE
  command -v "$1" >/dev/null 2>&1 && return 0
  bad "$1 not found (Debian package $2, listed in .ci/apt.d/portability.txt)"
  return 1
}

# The header lines name the compiler, runner and directories; everything after
# them (per-program results and the "N passed, M failed" lines) must match.
results_of() { grep -Ev '^(compiler|runner|core|vectors): ' "$1"; }

# run_suite LABEL OUTFILE [VAR=VALUE...]: run tests/c/run_c_tests.sh with the
# given environment; passes when it exits 0 and every program reports
# "N passed, 0 failed" with N > 0 (as many such lines as programs).
run_suite() {
  local label=$1 out=$2
  shift 2
  local t0=$SECONDS
  if env "$@" timeout 600 bash "$RUN_C_TESTS" >"$out.raw" 2>&1; then
    suite_passed "$label" "$out" "$t0"
    return
  fi
  sed 's/^/    /' "$out.raw"
  bad "$label: run_c_tests.sh failed"
  return 1
}

# suite_passed LABEL OUTFILE T0: OUTFILE.raw (the output of a run of
# run_c_tests.sh that exited 0) reports "N passed, 0 failed" with N > 0 for
# every program; OUTFILE gets it without carriage returns.
suite_passed() {
  local label=$1 out=$2 t0=$3
  tr -d '\r' <"$out.raw" >"$out"  # Windows programs end their lines with CRLF
  local programs totals
  programs=$(grep -c '^== ' "$out" || true)
  # (a program may put its name before the count: "test_x: 12 passed, 0 failed")
  totals=$(grep -Ec '^([A-Za-z0-9_.-]+: )?[1-9][0-9]* passed, 0 failed$' "$out" || true)
  if [ "$programs" -gt 0 ] && [ "$totals" -eq "$programs" ]; then
    ok "$label: $programs program(s), $(grep -E ' passed, 0 failed$' "$out" | paste -sd';' - | sed 's/;/; /g') ($((SECONDS - t0)) s)"
    return 0
  fi
  sed 's/^/    /' "$out"
  bad "$label: a program did not print 'N passed, 0 failed' with N > 0"
  return 1
}

same_as_native() {  # same_as_native LABEL OUTFILE
  if diff -u <(results_of "$work/native.out") <(results_of "$2") >"$work/diff.txt"; then
    ok "$1: output identical to the native run"
  else
    sed 's/^/    /' "$work/diff.txt"
    bad "$1: output differs from the native run"
  fi
}

echo "portability checks of the plain-C core in $CORE"
if [ ! -f "$RUN_C_TESTS" ]; then
  bad "tests/c/run_c_tests.sh is missing"
  echo "portability: $passed passed, $failed failed"
  exit 1
fi
shopt -s nullglob
core_srcs=("$CORE"/*/*.c)
core_incs=()
for d in "$CORE"/*/; do core_incs+=("-I${d%/}"); done
c_tests=("$ROOT"/tests/c/test_*.c)
echo "core files: ${#core_srcs[@]}, C test programs: ${#c_tests[@]}"
if [ ${#core_srcs[@]} -eq 0 ] || [ ${#c_tests[@]} -eq 0 ]; then
  bad "no core C files or no tests/c/test_*.c programs"
fi

section "native ($(uname -m))"
native_ok=0
# .ci/run runs this step after the main suite, whose
# tests/c/test_c_core.py::test_c_programs_pass built and ran the same programs
# natively with the same flags (against the installed package's copy of the
# core) and left their output in SHARDHASH_C_TESTS_LOG: that run is the native
# one here, not built and run a second time.  Without it (a run by hand), the
# programs are built and run natively here.
main_log=${SHARDHASH_C_TESTS_LOG:-}
if [ -n "$main_log" ] && [ -s "$main_log" ] && grep -Eq "^compiler: [^ ]+ $STRICT\$" "$main_log" \
    && [ "$(grep -c '^== ' "$main_log")" -eq ${#c_tests[@]} ]; then
  cp "$main_log" "$work/native.out.raw"
  suite_passed "native $(sed -n 's/^compiler: \([^ ]*\) .*/\1/p' "$main_log" | head -n 1) (the main suite's run)" \
    "$work/native.out" "$SECONDS" && native_ok=1
elif need gcc gcc; then
  if [ -n "$main_log" ]; then
    echo "(SHARDHASH_C_TESTS_LOG=$main_log holds no run of all ${#c_tests[@]} programs with $STRICT: building natively)"
  fi
  run_suite "native gcc" "$work/native.out" CC=gcc CFLAGS="$STRICT" && native_ok=1
fi

section "aarch64 (cross-compiled, run under qemu-user)"
if need aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu && need qemu-aarch64 qemu-user; then
  if run_suite "aarch64 under qemu" "$work/aarch64.out" \
      CC=aarch64-linux-gnu-gcc CFLAGS="$STRICT" \
      RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu" && [ $native_ok = 1 ]; then
    same_as_native "aarch64" "$work/aarch64.out"
  fi
fi

section "s390x, big-endian (cross-compiled, run under qemu-user)"
if need s390x-linux-gnu-gcc gcc-s390x-linux-gnu && need qemu-s390x qemu-user; then
  if run_suite "s390x under qemu" "$work/s390x.out" \
      CC=s390x-linux-gnu-gcc CFLAGS="$STRICT" \
      RUNNER="qemu-s390x -L /usr/s390x-linux-gnu" && [ $native_ok = 1 ]; then
    same_as_native "s390x (big-endian)" "$work/s390x.out"
  fi
fi

section "Windows x86-64 (mingw-w64)"
MINGW=x86_64-w64-mingw32-gcc
if need $MINGW gcc-mingw-w64-x86-64; then
  # Compile and link every test program with the whole core, warning-free.
  mingw_ok=1
  objs=()
  for src in "${core_srcs[@]}"; do
    obj="$work/mingw_$(basename "${src%.c}").o"
    # shellcheck disable=SC2086
    if ! $MINGW $STRICT "${core_incs[@]}" -c "$src" -o "$obj" 2>"$work/mingw.err"; then
      sed 's/^/    /' "$work/mingw.err"; mingw_ok=0
    fi
    objs+=("$obj")
  done
  if [ $mingw_ok = 1 ]; then
    for t in "${c_tests[@]}"; do
      # shellcheck disable=SC2086
      if ! $MINGW $STRICT "${core_incs[@]}" "$t" "${objs[@]}" -o "$work/$(basename "${t%.c}").exe" -lm 2>"$work/mingw.err"; then
        sed 's/^/    /' "$work/mingw.err"; mingw_ok=0
      fi
    done
  fi
  if [ $mingw_ok = 1 ]; then
    ok "mingw-w64: ${#core_srcs[@]} core files and ${#c_tests[@]} test program(s) build with $STRICT"
  else
    bad "mingw-w64: the core or a test does not build warning-free"
  fi

  wine=""
  for w in wine64 /usr/lib/wine/wine64 wine; do
    if command -v "$w" >/dev/null 2>&1; then wine=$(command -v "$w"); break; fi
  done
  if [ -z "$wine" ]; then
    optional_missing "Windows programs not run: wine is not installed (Debian package wine64)"
  elif [ $mingw_ok = 1 ]; then
    # A throwaway prefix; no display, and no Mono/Gecko installation prompts.
    export WINEPREFIX="$work/wineprefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
    unset DISPLAY
    # Create the prefix first, so that its start-up messages stay out of the
    # test output.
    timeout 300 "$wine" wineboot --init >"$work/wineboot.log" 2>&1 || true
    if run_suite "Windows x86-64 under wine" "$work/wine.out" \
        CC=$MINGW CFLAGS="$STRICT" RUNNER="$wine" && [ $native_ok = 1 ]; then
      same_as_native "Windows x86-64" "$work/wine.out"
    fi
  fi
fi

section "clang"
if command -v clang >/dev/null 2>&1; then
  clang_ok=1
  for src in "${core_srcs[@]}" "${c_tests[@]}"; do
    # shellcheck disable=SC2086
    if ! clang $STRICT "${core_incs[@]}" -c "$src" -o "$work/clang.o" 2>"$work/clang.err"; then
      sed 's/^/    /' "$work/clang.err"; clang_ok=0
    fi
  done
  if [ $clang_ok = 1 ]; then
    ok "clang: core and C tests compile with $STRICT"
  else
    bad "clang: the core or a test does not compile warning-free"
  fi
else
  optional_missing "clang is not installed (Debian package clang)"
fi

echo
if [ $failed -gt 0 ]; then
  printf 'failed: %s\n' "${failures[@]}" >&2
fi
echo "portability: $passed passed, $failed failed"
[ $failed -eq 0 ]
