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


def child_env(**extra: str) -> dict[str, str]:
    """os.environ for a child Python that imports the same shardhash as this
    run (its parent directory first on PYTHONPATH), plus ``extra``."""
    from pathlib import Path

    import shardhash

    src = str(Path(shardhash.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([src] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.update(extra)
    return env


def oracle_required() -> bool:
    """In CI a missing oracle is a failure; on a developer machine a skip."""
    return os.environ.get("SHARDHASH_CI", "") not in ("", "0")
