#!/usr/bin/env bash
# Static gates: ruff, mypy --strict, stubtest on every compiled module,
# clang-format on the C core and actionlint on the workflows.
#
#   bash .ci/gates.sh            # uses .venv (built by .ci/run, or by hand)
#   PYTHON=python3 bash .ci/gates.sh
#
# The tools come from the `lint` dependency group in pyproject.toml.  stubtest
# imports the installed package, so build and install it first.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
PY=$("$PY" -c 'import sys; print(sys.executable)')   # absolute: some gates run from /
BIN=$(dirname "$PY")

"$PY" -m pip install -q --upgrade "pip>=25.1"   # --group needs pip 25.1
"$PY" -m pip install -q --group lint

fail=0
gate() {
  local name=$1; shift
  printf -- '-- %s\n' "$name"
  if ! "$@"; then
    echo "GATE FAILED: $name"
    fail=1
  fi
}

gate "ruff" "$PY" -m ruff check src tests tools bench
gate "mypy --strict" "$PY" -m mypy
# Every compiled extension module of the installed package, checked against its stub.
mapfile -t exts < <(cd / && "$PY" - <<'PYEOF'
import importlib.machinery, pathlib, shardhash
root = pathlib.Path(shardhash.__file__).parent
suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
for p in sorted(root.rglob("*")):
    if p.name.endswith(suffixes):
        rel = p.relative_to(root.parent)
        name = rel.name.split(".")[0]
        print(".".join(rel.parts[:-1] + (name,)))
PYEOF
)
if [ "${#exts[@]}" -eq 0 ]; then
  echo "GATE FAILED: no compiled modules found in the installed package"
  fail=1
else
  gate "stubtest (${#exts[@]} modules)" bash -c 'cd / && "$0" -m mypy.stubtest --mypy-config-file "$1" "${@:2}"' \
    "$PY" "$(pwd)/.ci/stubtest.ini" "${exts[@]}"
fi
mapfile -t cfiles < <(find src/shardhash/_core tests/c -name '*.[ch]' | sort)
gate "clang-format (${#cfiles[@]} files)" "$BIN/clang-format" --dry-run -Werror "${cfiles[@]}"
gate "actionlint" "$BIN/actionlint" .github/workflows/*.yml

exit $fail
