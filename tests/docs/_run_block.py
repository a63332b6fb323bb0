"""Run one docs block in this interpreter, as a reader would: ``python _run_block.py FILE PAGE LINE``
runs FILE (a ``python`` block, written unchanged) as ``__main__``; with ``--doctest`` runs it as an
interactive session. LINE is the page's line of the block's opening fence.

The docs state values this way, and the run checks each: an expression statement whose last line
ends in ``# -> VALUE`` (or that a line ``# -> VALUE`` follows) must have the value VALUE, evaluated in
the script's namespace; a remark may follow VALUE after a second ``  # ``. ``~0.2`` in VALUE means
"0.2 when rounded to the digits shown"; numpy arrays compare by ``tolist()``. A ``# -> `` that
follows no expression statement is an error. Apart from these checks the code runs as written:
``__main__``'s ``__file__`` and ``sys.argv[0]`` are FILE and ``sys.path[0]`` its folder, so
``multiprocessing``'s spawn (Dask's nanny) imports FILE itself in its children, as it would the
reader's script.
"""

from __future__ import annotations

import ast
import doctest
import io
import re
import sys
import tokenize
import types
from pathlib import Path
from typing import Any

_STATES = re.compile(r"#\s*->\s*(.*?)\s*(?:\s#\s.*)?$")
_APPROX = re.compile(r"~\s*(-?\d[\d_]*(?:\.\d+)?)")


class Approx:
    """A number as the docs write it with ``~``: equal to a value that rounds to it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.value = float(text)
        self.digits = len(text.split(".")[1]) if "." in text else 0

    def __eq__(self, other: object) -> bool:
        try:
            return round(float(other), self.digits) == self.value  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return False

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return "~" + self.text


def _plain(v: Any) -> Any:
    if hasattr(v, "tolist") and type(v).__module__ == "numpy":
        return v.tolist()
    if isinstance(v, tuple):
        return tuple(_plain(x) for x in v)
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def stated_values(src: str) -> dict[int, str]:
    """{line: VALUE source} of every ``# -> VALUE`` comment; a comment on a line of its own states the
    value of the statement that ends on the line above."""
    out: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            m = _STATES.match(tok.string)
            if m:
                if not m.group(1):
                    raise SyntaxError(f"line {tok.start[0]}: '# ->' states no value")
                line = tok.start[0]
                if not tok.line[:tok.start[1]].strip():  # a comment line of its own: the statement above
                    line -= 1
                out[line] = m.group(1)
    return out


class _Checks(ast.NodeTransformer):
    def __init__(self, stated: dict[int, str]) -> None:
        self.stated = stated
        self.used: set[int] = set()

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        end = node.end_lineno
        if end is None or end not in self.stated:
            return node
        self.used.add(end)
        call = ast.Call(func=ast.Name("__docs_check__", ast.Load()),
                        args=[node.value, ast.Constant(self.stated[end]), ast.Constant(end),
                              ast.Constant(ast.unparse(node.value))], keywords=[])
        return ast.copy_location(ast.Expr(call), node)


def run_script(path: str, page: str, first_line: int) -> None:
    src = Path(path).read_text(encoding="utf-8")
    tree = ast.parse(src, filename=path)
    stated = stated_values(src)
    checks = _Checks(stated)
    tree = ast.fix_missing_locations(checks.visit(tree))
    stray = sorted(set(stated) - checks.used)
    if stray:
        raise SystemExit(f"{page}:{first_line + stray[0]}: '# -> {stated[stray[0]]}' does not follow an "
                         "expression statement, so nothing would check it")
    code = compile(tree, path, "exec")
    main = types.ModuleType("__main__")
    main.__file__ = path
    ns = main.__dict__

    def check(value: Any, expected_src: str, line: int, expr: str) -> None:
        expected = eval(_APPROX.sub(lambda m: f"__docs_approx__({m.group(1)!r})", expected_src),  # noqa: S307
                        {**ns, "__docs_approx__": Approx})
        if not _plain(value) == _plain(expected):
            raise AssertionError(f"{page}:{first_line + line}: {expr} is {value!r}; the text states {expected_src}")

    ns["__docs_check__"] = check
    sys.modules["__main__"] = main
    sys.argv = [path]
    sys.path[0] = str(Path(path).resolve().parent)
    exec(code, ns)  # noqa: S102


def run_doctest(path: str, page: str, first_line: int) -> None:
    src = Path(path).read_text(encoding="utf-8")
    test = doctest.DocTestParser().get_doctest(src, {"__name__": "__main__"}, page, page, first_line)
    runner = doctest.DocTestRunner(verbose=False)
    runner.run(test)
    res = runner.summarize(verbose=False)
    if res.failed or not res.attempted:
        raise SystemExit(f"{page}:{first_line}: {res.failed} of {res.attempted} examples failed")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[0] == "--doctest":
        run_doctest(args[1], args[2], int(args[3]))
    else:
        run_script(args[0], args[1], int(args[2]))
