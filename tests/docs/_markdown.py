"""The fenced code blocks of README.md and docs/*.md, and what the docs test does with each.

A block runs when its kind says so:

* ``python`` -- a script: written unchanged to a file in the page's folder and run as ``__main__``
  by ``_run_block.py`` in a fresh interpreter (so ``if __name__ == "__main__":`` matters as it does
  for a reader). A line ``expr  # -> VALUE`` states the value of ``expr``: the run checks it.
* ``python`` whose first line starts with ``>>>`` -- an interactive session, run by doctest.
* ``sh``/``console``/``shell`` -- shell commands, run by bash (``set -e``) with the interpreter's
  ``bin`` folder (where the ``shardhash`` command is) first on ``PATH``.
* ``text`` that starts with ``$ `` -- a transcript: each ``$`` command runs, and the lines under it
  are its expected output (a line ``...`` stands for any lines).
* ``text`` right after a ``python`` block -- that block's expected output.

Blocks of one page run in order in one fresh folder, so a later block sees the files an earlier one
wrote (the docs say so where a block needs them). Every other block -- and a runnable block that
cannot run here -- is listed in ``ALLOWED`` with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")))

SHELL = ("sh", "console", "shell", "bash")


@dataclass(frozen=True)
class Block:
    page: str          # "docs/compat.md"
    line: int          # line of the opening fence (1-based)
    lang: str          # "python", "sh", "text", "" ...
    text: str          # the block's contents, unchanged
    after_python: bool  # nothing but blank lines since the end of a python block

    @property
    def first(self) -> str:
        for ln in self.text.splitlines():
            if ln.strip():
                return ln.strip()
        return ""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def kind(self) -> str:
        """script, doctest, shell, transcript, output, or other."""
        if self.lang == "python":
            return "doctest" if self.first.startswith(">>>") else "script"
        if self.lang in SHELL:
            return "transcript" if self.first.startswith("$ ") else "shell"
        if self.lang == "text":
            if self.first.startswith("$ "):
                return "transcript"
            if self.after_python:
                return "output"
        return "other"


_FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)\s*$")


def blocks(page: str) -> list[Block]:
    out: list[Block] = []
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    i = 0
    last_python_end = -2
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        if j == len(lines):
            raise AssertionError(f"{page}:{start + 1}: unclosed code fence")
        between = lines[last_python_end + 1:start] if last_python_end >= 0 else ["x"]
        after_python = last_python_end >= 0 and all(not ln.strip() for ln in between)
        text = "\n".join(lines[start + 1:j]) + "\n"
        b = Block(page, start + 1, m.group(1).lower(), text, after_python)
        out.append(b)
        last_python_end = j if b.lang == "python" and b.kind == "script" else -2
        i = j + 1
    return out


def transcript(text: str) -> list[tuple[str, list[str]]]:
    """[(command, expected output lines)] of a ``$ ...`` transcript; continuation lines end in ``\\``."""
    steps: list[tuple[str, list[str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        ln = lines[i]
        if not ln.startswith("$ "):
            raise AssertionError(f"transcript line {i + 1} is neither a command nor its output: {ln!r}")
        cmd = ln[2:]
        while cmd.endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd = cmd[:-1] + " " + lines[i].strip()
        i += 1
        expected: list[str] = []
        while i < len(lines) and not lines[i].startswith("$ "):
            expected.append(lines[i])
            i += 1
        steps.append((cmd, expected))
    return steps


def output_matches(got: str, expected: list[str]) -> bool:
    """Whether ``got`` (stdout) matches the expected lines; a line ``...`` matches any lines.

    Trailing spaces and trailing blank lines are ignored on both sides."""
    g = [ln.rstrip() for ln in got.rstrip().splitlines()]
    e = [ln.rstrip() for ln in "\n".join(expected).rstrip().splitlines()]

    def match(gi: int, ei: int) -> bool:
        if ei == len(e):
            return gi == len(g)
        if e[ei] == "...":
            return any(match(k, ei + 1) for k in range(gi, len(g) + 1))
        return gi < len(g) and g[gi] == e[ei] and match(gi + 1, ei + 1)

    return match(0, 0)
