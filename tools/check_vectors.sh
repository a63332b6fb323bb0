#!/usr/bin/env bash
# Regenerate every golden vector file in memory and compare it with the frozen
# one under tests/vectors/: runs each tools/make_*.py with --check and fails
# if any of them finds a difference (or cannot run).
#
#   PYTHON=.venv/bin/python bash tools/check_vectors.sh     # from the repository root
#
# PYTHON defaults to .venv/bin/python.  make_compat_vectors.py checks what it
# can make without a network or a database server (PostgreSQL's files only
# when SHARDHASH_PG_DSN is set) and names each file it leaves out.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
status=0
for tool in tools/make_*.py; do
  echo "-- $tool --check"
  t0=$SECONDS
  if "$PY" "$tool" --check; then
    echo "   ok ($((SECONDS - t0)) s)"
  else
    echo "FAILED: $tool --check"
    status=1
  fi
done
if [ "$status" -ne 0 ]; then
  echo "golden vectors: a regenerated file differs from the frozen one (see above)"
fi
exit "$status"
