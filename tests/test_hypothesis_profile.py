"""The Hypothesis profile reaches every property test: an explicit
``@settings(max_examples=N)`` overrides the profile, so each goes through
``tests._support.examples`` (N in the default profile, scaled in thorough)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from hypothesis import settings

from tests._support import examples

TESTS = Path(__file__).resolve().parent

# Files whose explicit max_examples are scaled another way, or not yet.
_EXEMPT = {
    "conftest.py": "registers the profiles themselves",
    "_support.py": "defines examples()",
    "test_fuzz.py": "scales by its own fuzz(n) helper (x20 in thorough)",
    "lookups/test_state_machine.py": "a share of the loaded profile's max_examples",
    "scatter/test_oracle.py": "a share of the loaded profile's max_examples",
}


def test_examples_scales_with_the_loaded_profile() -> None:
    loaded = os.environ.get("SHARDHASH_HYPOTHESIS", "default")
    default = settings.get_profile("default").max_examples
    thorough = settings.get_profile("thorough").max_examples
    assert thorough > default
    try:
        settings.load_profile("default")
        assert [examples(n) for n in (1, 4, 10, 150)] == [1, 4, 10, 150]
        settings.load_profile("thorough")
        assert [examples(n) for n in (1, 4, 10, 150)] == [n * thorough // default for n in (1, 4, 10, 150)]
    finally:
        settings.load_profile(loaded)


def test_every_explicit_max_examples_follows_the_profile() -> None:
    literal = re.compile(r"max_examples\s*=\s*(?!examples\()\S")
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        rel = path.relative_to(TESTS).as_posix()
        if rel in _EXEMPT or rel == "test_hypothesis_profile.py":
            continue
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if literal.search(line):
                offenders.append(f"tests/{rel}:{no}: {line.strip()}")
    assert not offenders, "max_examples not scaled by the profile (use tests._support.examples):\n" + \
        "\n".join(offenders)
