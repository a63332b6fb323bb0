"""Helpers shared by the test modules (import them from here, not from a conftest)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest

T = TypeVar("T")

# The frozen golden vectors (tests/vectors/README.md).
VECTORS = Path(__file__).resolve().parent / "vectors"


def child_env(**extra: str) -> dict[str, str]:
    """os.environ for a child Python that imports the same shardhash as this
    run (its parent directory first on PYTHONPATH), plus ``extra``."""
    import shardhash

    src = str(Path(shardhash.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([src] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.update(extra)
    return env


def oracle_required() -> bool:
    """In CI a missing oracle is a failure; on a developer machine a skip."""
    return os.environ.get("SHARDHASH_CI", "") not in ("", "0")


def oracle_missing(what: str, why: str) -> NoReturn:
    """A live oracle (server, JVM, driver) is not available: fail in CI, skip elsewhere."""
    if oracle_required():
        pytest.fail(f"{what} missing in CI: {why}")
    pytest.skip(f"{what} not available: {why}")


def ill_typed(value: object) -> Any:
    """``value``, hidden from the type checker: for tests that pass a wrong type
    on purpose, to check the runtime's TypeError (or its acceptance)."""
    return value


def present(value: T | None) -> T:
    """``value``, which the case at hand guarantees is not None (an optional
    field that this kind of object always sets)."""
    assert value is not None
    return value


def examples(n: int) -> int:
    """``max_examples`` for a property test that runs ``n`` examples in the
    default Hypothesis profile: ``n`` there, scaled by the loaded profile's
    ``max_examples`` over the default profile's (x20 under
    SHARDHASH_HYPOTHESIS=thorough; tests/conftest.py registers both).  An
    explicit ``@settings(max_examples=N)`` overrides the profile, so every
    one goes through this."""
    from hypothesis import settings

    try:
        base = settings.get_profile("default").max_examples
    except Exception:  # profiles not registered (tests/conftest.py not loaded)
        return n
    current = settings.default
    if current is None:
        return n
    return max(1, round(n * current.max_examples / base))


def fork_child(fn: Any, env: dict[str, str] | None = None) -> int:
    """Run ``fn()`` in a forked child (with ``env`` added to its environment);
    its pid.  The child exits 0 when ``fn`` returns, 1 when it raises (the
    traceback written to the file descriptor 2: ``sys.stderr`` may be a
    pytest buffer, lost with the child), and never returns into the caller."""
    import traceback

    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            if env:
                os.environ.update(env)
            fn()
        except BaseException:  # noqa: BLE001
            os.write(2, traceback.format_exc().encode())
            code = 1
        finally:
            os._exit(code)
    return pid
