#!/usr/bin/env bash
# The tests that start an engine (pytest marker `engines`, left out of the
# default run): shardhash.dask, shardhash.spark and shardhash.ray on a local
# Dask cluster, a local[2] Spark session (a JVM) and a local Ray, the
# `--engine` command lines, and docs/distributed.md's code blocks (each starts
# its engine again).  Their start-ups are most of the time: about 3 minutes on
# 2 cores.  In CI (SHARDHASH_CI set) a missing engine or Java fails.
#
# Run by .ci/run after the main suite (so the engines' processes do not take
# the main suite's cores); uses the main .venv built by .ci/run (the installed
# wheel); bounded to 8 minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
t0=$SECONDS
timeout 480 .venv/bin/python -m pytest -m engines -q -p no:cacheprovider tests/engines tests/docs/test_pages.py
echo "engines: passed in $((SECONDS - t0)) s"
