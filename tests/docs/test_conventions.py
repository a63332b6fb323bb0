"""The docs test's own rules can fail: a wrong stated value, a wrong printed output, a failing command
and an unguarded check each make ``run_block`` report the page and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs._markdown import Block, output_matches, transcript
from tests.docs.test_pages import run_block


def _script(text: str, lang: str = "python") -> Block:
    return Block("docs/x.md", 10, lang, text, after_python=False)


@pytest.mark.parametrize("text", [
    "x = [1, 2]\nlen(x)  # -> 2\n",
    "x = [1, 2]\nlen(x)  # -> 2  # a remark\n",
    "x = [1, 2]\nlen(x)\n# -> 2\n",
    "x = 0.2006\nx, 1  # -> (~0.2, 1)\n",
    "import numpy as np\nnp.arange(3)  # -> [0, 1, 2]\n",
    "if __name__ == '__main__':\n    'a' * 2  # -> 'aa'\n",
])
def test_a_right_stated_value_passes(text: str, tmp_path: Path) -> None:
    assert run_block(_script(text), tmp_path, None)[1] == ""


@pytest.mark.parametrize(("text", "says"), [
    ("x = [1, 2]\nlen(x)  # -> 3\n", "docs/x.md:12: len(x) is 2; the text states 3"),
    ("x = [1, 2]\nlen(x)\n# -> 3\n", "docs/x.md:12: len(x) is 2; the text states 3"),
    ("x = 0.2506\nx  # -> ~0.2\n", "docs/x.md:12: x is 0.2506; the text states ~0.2"),
    ("import numpy as np\nnp.arange(3)  # -> [0, 1, 3]\n", "the text states [0, 1, 3]"),
    ("if __name__ == '__main__':\n    'a' * 2  # -> 'ab'\n", "the text states 'ab'"),
    ("y = 1  # -> 1\n", "docs/x.md:11: '# -> 1' does not follow an expression statement"),
    ("import shardhash\nshardhash.no_such_name\n", 'File "docs/x.md", line 12'),
])
def test_a_wrong_stated_value_or_a_broken_block_fails(text: str, says: str, tmp_path: Path) -> None:
    err = run_block(_script(text), tmp_path, None)[1]
    assert says in err


def test_output_and_transcripts_are_compared(tmp_path: Path) -> None:
    out, err = run_block(_script("print('a'); print('b')\n"), tmp_path, None)
    assert err == "" and out == "a\nb\n"
    shown = Block("docs/x.md", 20, "text", "a\nb\n", after_python=True)
    assert shown.kind == "output" and run_block(shown, tmp_path, out)[1] == ""
    wrong = Block("docs/x.md", 20, "text", "a\nc\n", after_python=True)
    assert "the text shows" in run_block(wrong, tmp_path, out)[1]
    ok = Block("docs/x.md", 30, "console", "$ shardhash --version >/dev/null; echo one\none\n", False)
    assert ok.kind == "transcript" and run_block(ok, tmp_path, None)[1] == ""
    bad = Block("docs/x.md", 30, "console", "$ echo one\ntwo\n", False)
    assert "the text shows" in run_block(bad, tmp_path, None)[1]
    fails = Block("docs/x.md", 40, "sh", "shardhash route no-such.json --key 1\n", False)
    assert fails.kind == "shell" and "exit 2" in run_block(fails, tmp_path, None)[1]


def test_output_matching() -> None:
    assert output_matches("a\nb\nc\n", ["a", "...", "c"])
    assert output_matches("a\nc\n", ["a", "...", "c"])
    assert not output_matches("a\nb\n", ["a", "c"])
    assert not output_matches("a\nb\nc\n", ["a", "b"])
    assert transcript("$ a \\\n    b\nout\n$ c\n") == [("a  b", ["out"]), ("c", [])]
