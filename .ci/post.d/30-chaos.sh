#!/usr/bin/env bash
# Crash injection for shardhash.migrate (pytest marker `chaos`, left out of
# the default test run): at least 100 migrations on SQLite, each executor
# SIGKILLed at random points and resumed, under writer processes that log
# every acknowledged write; then the invariants are checked (see
# tests/migrate/test_chaos.py).  The PostgreSQL and MariaDB sets (20 migrations
# each) run too, on the servers from .ci/pre.d/10-postgres.sh and 30-mariadb.sh
# (in CI a missing server fails).
#
# The sagas' crash injection follows (see the end of this file).
#
# Uses the main .venv built by .ci/run; bounded to 8 + 4 minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export SHARDHASH_CHAOS_MIGRATIONS="${SHARDHASH_CHAOS_MIGRATIONS:-100}"
t0=$SECONDS
timeout 480 .venv/bin/python -m pytest -m chaos -q -p no:cacheprovider tests/migrate
echo "chaos (migrations): passed in $((SECONDS - t0)) s"
# Then the sagas' crash injection (tests/saga/test_saga_chaos.py): 400 sagas on
# SQLite and 250 on PostgreSQL, driver, recovery and relay processes SIGKILLed
# at named points and at random while a migration adds a shard; about 30 s.
t1=$SECONDS
timeout 240 .venv/bin/python -m pytest -m chaos -q -p no:cacheprovider tests/saga
echo "chaos (sagas): passed in $((SECONDS - t1)) s"
