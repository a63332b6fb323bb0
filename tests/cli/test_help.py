"""Every argument of every ``shardhash`` command (and of the ``--engine`` parser)
has help text, and the help says what the command really takes."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from shardhash.cli import build_parser, main
from shardhash.cli.engines import build_parser as build_engines_parser
from shardhash.cli.migrate import ACTIONS


def _walk(p: argparse.ArgumentParser, path: str) -> list[str]:
    """The arguments (and subcommands) under ``p`` without help text."""
    missing: list[str] = []
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            described = {c.dest for c in a._choices_actions if c.help and c.help.strip()}
            missing += [f"{path} {name} (the command itself)" for name in a.choices if name not in described]
            for name, sub in a.choices.items():
                missing += _walk(sub, f"{path} {name}")
        elif not isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
            if a.help is None or a.help == argparse.SUPPRESS or not a.help.strip():
                missing.append(f"{path} {'/'.join(a.option_strings) or a.dest}")
    return missing


@pytest.mark.parametrize("build", [build_parser, build_engines_parser], ids=["shardhash", "engines"])
def test_every_argument_has_help(build: object) -> None:
    assert callable(build)
    missing = _walk(build(), "shardhash")
    assert not missing, "arguments without help: " + ", ".join(missing)


def test_the_walk_finds_an_argument_without_help() -> None:
    p = argparse.ArgumentParser(prog="x")
    sub = p.add_subparsers()
    q = sub.add_parser("cmd", help="a command")
    q.add_argument("file")
    sub.add_parser("bare")
    assert _walk(p, "x") == ["x bare (the command itself)", "x cmd file"]


def _help(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--help"]) == 0
    return out.getvalue()


def test_migrate_help_describes_every_action() -> None:
    text = _help("migrate")
    for a in ACTIONS:
        lines = [ln for ln in text.splitlines() if ln.startswith(f"  {a} ")]
        assert len(lines) == 1 and len(lines[0].split()) > 3, (a, text)


def test_route_help_speaks_of_no_weights_column_and_plan_help_does() -> None:
    assert "weights" not in _help("route")
    assert "--weights column" in _help("plan") and "--weights" in _help("analyze")
