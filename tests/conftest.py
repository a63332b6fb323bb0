"""Shared test configuration."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# CI and local runs use a bounded number of examples so the suite stays fast
# on two cores; SHARDHASH_HYPOTHESIS=thorough raises it for a deeper soak.
settings.register_profile("default", max_examples=100, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=2000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("SHARDHASH_HYPOTHESIS", "default"))


def pytest_sessionfinish() -> None:
    """Stop the session's throwaway PostgreSQL and MariaDB servers, if a test started one
    (tests/_postgres.py, tests/_mariadb.py)."""
    import sys

    for name in ("tests._postgres", "tests._mariadb"):
        mod = sys.modules.get(name)
        if mod is not None:
            mod.stop_throwaway()
