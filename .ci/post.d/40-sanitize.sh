#!/usr/bin/env bash
# The test suite and the fuzz suite under AddressSanitizer and
# UndefinedBehaviorSanitizer.
#
# The package is built with SHARDHASH_SANITIZE=1 (setup.py: -O1 -g
# -fsanitize=address,undefined, Cython bounds/wraparound/initialisation checks
# on) from a copy of the sources, into its own venv (build/sanitize-venv), so
# nothing of the release build is reused.  Python then runs with the ASan
# runtime preloaded and PYTHONMALLOC=malloc (so that ASan also sees the
# buffers of Python objects: a read past a list's items is caught).
#
# Any sanitizer report fails the step: halt_on_error makes the reporting
# process stop, and ASan's reports are also written to a log file (child
# processes included), which must stay empty.  UBSan's reports are not:
# GCC's libubsan, loaded beside the preloaded libasan, ignores log_path and
# writes to the process's stderr.  So pytest runs with --capture=sys (it
# captures what Python code prints, not file descriptor 2): with pytest's
# default fd capture a report went into pytest's capture file, which the
# stopped process never printed, and the step said only that the suite
# failed.  Leak detection is off: CPython keeps objects alive until exit by
# design.
#
# Deselected: bench/ (timings mean nothing under ASan; the main run already
# runs the benchmarks once), tests marked `slow` (to stay under 10 minutes on
# 2 cores), and tests marked `oracle`: they drive external programs (a JVM,
# redis-server, nutcracker, psql, a compiled libmemcached client) that would
# inherit the preloaded ASan runtime -- the JVM's own use of SIGSEGV cannot
# run under it -- and the kernels they check are checked here by the
# differential tests against the pure-Python references and the fuzz suite.
# For the same reason the engine tests (tests/engines: Spark's JVM, Ray's and
# Dask's worker processes) are left out, except the Arrow kernel tests, and
# the `chaos` crash-injection runs (.ci/post.d/30-chaos.sh runs those).  Only
# the test directories that exercise compiled code run here (the list below);
# the main suite runs the rest once.
# Override the pytest arguments with SANITIZE_PYTEST_ARGS (--capture=sys is
# added unless they choose a capture mode themselves).
#
# Run from the repository root (as .ci/run does); needs gcc (for libasan) and
# the network access `pip install` needs.  Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
ROOT=$(pwd)
PY=${PYTHON:-python3}
VENV="$ROOT/build/sanitize-venv"
t0=$SECONDS

if ! command -v gcc >/dev/null 2>&1; then
  echo "FAIL: gcc not found: the sanitizer build needs it" >&2
  exit 1
fi
libasan=$(gcc -print-file-name=libasan.so)
if [ ! -f "$libasan" ]; then
  echo "FAIL: libasan.so not found (gcc -print-file-name=libasan.so gave '$libasan')" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/shardhash-sanitize.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "-- copying the sources"
mkdir -p "$work/src"
# (generated C left in src/ is ignored: the checked build regenerates it
# under build/sanitize; see setup.py)
# The copy runs beside the static gates and the crash-injection runs, which
# write caches into the checkout (.mypy_cache, .ruff_cache, .pytest_cache,
# __pycache__): a tar of the whole tree could read a file while it is being
# replaced and stop with "file changed as we read it".  So in a git checkout
# the files to copy are git's: the tracked ones and the untracked ones not
# ignored (caches, build output and compiled modules are ignored).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard \
    | (while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done) \
    | tar --null -T - -cf - | tar -C "$work/src" -xf -
else
  tar --exclude=./.git --exclude=./.venv --exclude=./.venv-sdist --exclude=./build \
      --exclude=./dist --exclude='*.so' --exclude=__pycache__ --exclude=.hypothesis \
      --exclude=.mypy_cache --exclude=.ruff_cache --exclude=.pytest_cache \
      -cf - . | tar -C "$work/src" -xf -
fi
if [ ! -f "$work/src/src/shardhash/_core/place/sh_jump.c" ]; then
  echo "FAIL: the copy of the sources lacks the C core" >&2
  exit 1
fi

echo "-- building with SHARDHASH_SANITIZE=1 into $VENV"
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
SHARDHASH_SANITIZE=1 "$VENV/bin/python" -m pip install -q "$work/src[test]"
echo "   built in $((SECONDS - t0)) s"

# The extension modules must really be instrumented: they need the ASan
# runtime, so importing them without it fails.
if "$VENV/bin/python" -c "import shardhash.routing._kernels" >/dev/null 2>&1; then
  echo "FAIL: the SHARDHASH_SANITIZE=1 build is not instrumented (it imports without libasan)" >&2
  exit 1
fi

logs="$work/logs"
mkdir -p "$logs"
# libstdc++ is preloaded too: ASan must see the real __cxa_throw at start-up,
# or the first C++ exception thrown by a dependency (pyarrow, matplotlib)
# stops the process with an interceptor CHECK failure.
libstdcxx=$(gcc -print-file-name=libstdc++.so.6)
export LD_PRELOAD="$libasan${libstdcxx:+ $libstdcxx}"
export PYTHONMALLOC=malloc
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$logs/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan"
export SHARDHASH_SANITIZED=1  # tests that cannot run under ASan (address-space limits) skip

# Tests from a copy of the tree that cannot see the checkout's sources, as
# the sdist run does.
# (from the copy made at the start: the main suite, running beside this step,
# writes into the checkout's tests/, e.g. tests/c/build)
cp -r "$work/src/tests" "$work/src/pyproject.toml" "$work/"
if [ -n "${SANITIZE_PYTEST_ARGS:-}" ]; then
  read -r -a args <<<"$SANITIZE_PYTEST_ARGS"
else
  # The tests that run the compiled modules' code: hashing, routing, the
  # compatibility kernels, planning, hot keys, Arrow/IO intake and the fuzz
  # suites.  The migration, scatter-gather, lookups, metrics, CLI and docs
  # tests run no C of their own (they route through the same kernels these
  # tests cover) and run once, in the main suite.
  args=(-q -p no:cacheprovider -m "not slow and not oracle and not chaos"
        tests/c tests/hashing tests/routing tests/compat tests/strategies tests/plan
        tests/hotkeys tests/io tests/analysis tests/engines/test_arrow_kernels.py
        tests/test_fuzz.py tests/test_adversarial.py tests/test_array_layouts.py)
fi
# A sanitizer writes its report to file descriptor 2 (UBSan always, see
# above): leave that descriptor to this step's output.
capture=(--capture=sys)
for a in "${args[@]}"; do
  case "$a" in -s | --capture | --capture=*) capture=() ;; esac
done
status=0
(cd "$work" && "$VENV/bin/python" -m pytest "${capture[@]}" "${args[@]}") || status=$?

reports=$(find "$logs" -type f -size +0c | sort)
if [ -n "$reports" ]; then
  for f in $reports; do
    echo "==== sanitizer report $f" >&2
    head -c 20000 "$f" >&2
  done
  echo "FAIL: sanitizer reports (above)" >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "FAIL: the test suite failed under the sanitizers (exit $status; a UBSan report," \
       "which stops the run, is printed above: 'runtime error: ...')" >&2
  exit "$status"
fi
echo "sanitize: tests and fuzz suite clean under ASan+UBSan ($((SECONDS - t0)) s)"
