#!/usr/bin/env bash
# Build and run the plain-C core tests (no Python needed).
#
# Every tests/c/test_*.c is built as its own program, linked with every
# C file of the core (src/shardhash/_core/*/*.c), and run with the vectors
# directory as its only argument.  A program reports by exit status (and
# prints a "N passed, M failed" line).
#
# Usage: tests/c/run_c_tests.sh [test_name ...]     (default: all test_*.c)
#
# Environment (all optional):
#   CC        C compiler                                  (default: cc)
#   CFLAGS    compile flags          (default: -std=c99 -O2 -Wall -Wextra -pedantic)
#   CPPFLAGS  extra preprocessor flags
#   LDFLAGS   extra link flags;  LDLIBS  libraries        (default: -lm)
#   RUNNER    command prefix to run the programs, e.g. for an arm64 cross build:
#             CC=aarch64-linux-gnu-gcc RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
#   EXEEXT    executable suffix (default: .exe when CC names mingw, else empty)
#   JOBS      parallel compiles of the core       (default: number of CPUs)
#   SH_CORE_DIR     the core sources     (default: <repo>/src/shardhash/_core)
#   SH_VECTORS_DIR  the golden vectors   (default: <repo>/tests/vectors)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
core=${SH_CORE_DIR:-$here/../../src/shardhash/_core}
vectors=${SH_VECTORS_DIR:-$here/../vectors}
cc=${CC:-cc}
cflags=${CFLAGS:--std=c99 -O2 -Wall -Wextra -pedantic}
cppflags=${CPPFLAGS:-}
ldflags=${LDFLAGS:-}
ldlibs=${LDLIBS:--lm}
runner=${RUNNER:-}
case "$cc" in
  *mingw*) exeext=${EXEEXT-.exe} ;;
  *) exeext=${EXEEXT-} ;;
esac

[ -d "$core" ] || { echo "core directory not found: $core" >&2; exit 2; }
[ -d "$vectors" ] || { echo "vectors directory not found: $vectors" >&2; exit 2; }
core=$(cd "$core" && pwd)
vectors=$(cd "$vectors" && pwd)

shopt -s nullglob
core_srcs=("$core"/*/*.c)
# every directory of the core is on the include path (as in setup.py)
core_incs=()
for d in "$core"/*/; do core_incs+=("-I${d%/}"); done
if [ $# -gt 0 ]; then
  tests=()
  for name in "$@"; do
    name=${name%.c}
    name=${name##*/}
    tests+=("$here/$name.c")
  done
else
  tests=("$here"/test_*.c)
fi
[ ${#core_srcs[@]} -gt 0 ] || { echo "no C sources in $core" >&2; exit 2; }
[ ${#tests[@]} -gt 0 ] || { echo "no tests/c/test_*.c programs found in $here" >&2; exit 2; }

build=$(mktemp -d "${TMPDIR:-/tmp}/shardhash-ctests.XXXXXX")
trap 'rm -rf "$build"' EXIT

echo "compiler: $cc $cflags"
[ -z "$runner" ] || echo "runner:   $runner"
echo "core:     $core (${#core_srcs[@]} files)"
echo "vectors:  $vectors"

# The core is compiled once (JOBS files at a time); each test program links
# against its objects.
jobs_max=${JOBS:-$( (getconf _NPROCESSORS_ONLN || nproc) 2>/dev/null || echo 2)}
objs=()
pids=()
for src in "${core_srcs[@]}"; do
  obj="$build/core_$(basename "${src%.c}").o"
  # shellcheck disable=SC2086
  $cc $cppflags $cflags "${core_incs[@]}" -c "$src" -o "$obj" &
  pids+=($!)
  objs+=("$obj")
  if [ ${#pids[@]} -ge "$jobs_max" ]; then
    wait "${pids[0]}" || { echo "core build failed" >&2; exit 1; }
    pids=("${pids[@]:1}")
  fi
done
for pid in ${pids[@]+"${pids[@]}"}; do
  wait "$pid" || { echo "core build failed" >&2; exit 1; }
done

failed=()
for t in "${tests[@]}"; do
  name=$(basename "${t%.c}")
  exe="$build/$name$exeext"
  echo
  echo "== $name"
  # shellcheck disable=SC2086
  if ! $cc $cppflags $cflags "${core_incs[@]}" "$t" "${objs[@]}" $ldflags -o "$exe" $ldlibs; then
    echo "$name: BUILD FAILED" >&2
    failed+=("$name (build)")
    continue
  fi
  # shellcheck disable=SC2086
  if $runner "$exe" "$vectors"; then
    echo "$name: ok"
  else
    rc=$?
    echo "$name: FAILED (exit status $rc)" >&2
    failed+=("$name")
  fi
done

echo
if [ ${#failed[@]} -gt 0 ]; then
  echo "C tests failed: ${failed[*]}" >&2
  exit 1
fi
echo "all ${#tests[@]} C test program(s) passed"
