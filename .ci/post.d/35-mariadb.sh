#!/usr/bin/env bash
# The MariaDB cases left out of the default run (pytest marker `mariadb_full`):
# the migrate suite's beyond the main suite's share (tests/migrate/conftest.py
# picks that share) and bench_migrate.py's, run as tests; on the server
# .ci/pre.d/30-mariadb.sh started (in CI a missing server fails).  The crash
# injection's MariaDB set runs in the chaos step.
#
# Uses the main .venv built by .ci/run; bounded to 8 minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
t0=$SECONDS
timeout 480 .venv/bin/python -m pytest -m 'mariadb_full and not chaos' -q -p no:cacheprovider tests/migrate bench/bench_migrate.py
echo "mariadb: passed in $((SECONDS - t0)) s"
