"""The worked examples of docs/hotkeys.md, scatter.md, lookups.md and metrics.md run, and the
docstring examples of the modules behind them pass."""

from __future__ import annotations

import doctest
import re
from pathlib import Path
from types import ModuleType

import pytest

import shardhash.analysis
import shardhash.hotkeys
import shardhash.lookups
import shardhash.metrics
import shardhash.scatter

DOCS = Path(__file__).resolve().parent.parent / "docs"


@pytest.mark.parametrize("page", ["hotkeys.md", "scatter.md", "lookups.md", "metrics.md"])
def test_worked_examples_run(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not DOCS.is_dir():  # wheels are tested with a copy of tests/ and bench/ only
        pytest.skip("docs/ is not beside tests/")
    monkeypatch.chdir(tmp_path)
    text = (DOCS / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, f"{page} has no python example"
    for i, code in enumerate(blocks):
        exec(compile(code, f"{page}[{i}]", "exec"), {"__name__": f"docs_{i}"})


@pytest.mark.parametrize("mod", [shardhash.hotkeys, shardhash.scatter, shardhash.lookups, shardhash.metrics,
                                 shardhash.analysis])
def test_docstring_examples(mod: ModuleType) -> None:
    res = doctest.testmod(mod)
    assert res.attempted > 0 and res.failed == 0
