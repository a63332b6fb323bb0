"""The docstring examples of the modules behind docs/hotkeys.md, scatter.md, lookups.md and metrics.md pass."""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest

import shardhash.analysis
import shardhash.hotkeys
import shardhash.lookups
import shardhash.metrics
import shardhash.scatter


@pytest.mark.parametrize("mod", [shardhash.hotkeys, shardhash.scatter, shardhash.lookups, shardhash.metrics,
                                 shardhash.analysis])
def test_docstring_examples(mod: ModuleType) -> None:
    res = doctest.testmod(mod)
    assert res.attempted > 0 and res.failed == 0
