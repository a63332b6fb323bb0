#!/usr/bin/env bash
# Crash injection for shardhash.saga (pytest marker `chaos`, left out of the
# default run): 400 sagas on SQLite and 250 on PostgreSQL, driver, recovery
# and relay processes SIGKILLed at named points
# and at random moments while a migration adds a shard; then the invariants
# are checked (see tests/saga/test_saga_chaos.py).  The PostgreSQL set needs
# the server from .ci/pre.d/10-postgres.sh (in CI a missing server fails).
#
# Uses the main .venv built by .ci/run; about 30 s on 2 cores, bounded to 3 minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
t0=$SECONDS
timeout 180 .venv/bin/python -m pytest -m chaos -q -p no:cacheprovider tests/saga
echo "saga chaos: passed in $((SECONDS - t0)) s"
