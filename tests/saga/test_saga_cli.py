"""``shardhash saga list|show|resume|abort --config C [--json]``."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from shardhash import saga
from shardhash.cli import main

from ._bank import START, balances, make_bank, make_transfer

MOD = "tests.saga._cli_sagas"


class Crash(BaseException):
    pass


def _crash_after_commit() -> Callable[[str], None]:
    def hook(p: str) -> None:
        if p == "after-step-commit":
            raise Crash(p)

    return hook


def test_saga_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cl = make_bank(tmp_path, "sqlite", ["a", "b"], accounts=10)
    cfg = str(tmp_path / "cluster.json")
    t = make_transfer("transfer")
    done = t.start(cl, {"from": 1, "to": 2, "amount": 5})
    saga.set_fault_hook(_crash_after_commit())
    ids = []
    for a in ({"from": 3, "to": 4, "amount": 6}, {"from": 5, "to": 6, "amount": 7}):
        with pytest.raises(Crash):
            t.start(cl, a)
        ids.append(next(r["id"] for r in saga.list_sagas(cl, state="running") if r["id"] not in ids))
    saga.set_fault_hook(None)
    saga.registry.clear()
    sys.modules.pop(MOD, None)
    capsys.readouterr()

    assert main(["saga", "list", "--config", cfg, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["state"] for r in doc["sagas"]] == ["completed", "running", "running"]
    assert doc["counts"]["running"] == 2 and doc["counts"]["completed"] == 1
    assert main(["saga", "list", "--config", cfg, "--state", "running"]) == 0
    out = capsys.readouterr().out
    assert ids[0] in out and done not in out and "running: 2" in out
    assert main(["saga", "show", done, "--config", cfg, "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert (st["state"], st["results"], st["args"]["amount"]) == ("completed", [START - 5, START + 5], 5)
    assert main(["saga", "show", ids[0], "--config", cfg]) == 0
    assert "state:     running" in capsys.readouterr().out

    # resume needs the definitions; abort without them only marks the saga
    assert main(["saga", "resume", ids[0], "--config", cfg, "--force"]) == 2
    assert "no definition of 'transfer'" in capsys.readouterr().err
    assert main(["saga", "abort", ids[1], "--config", cfg]) == 0
    out = capsys.readouterr().out
    assert f"{ids[1]}: compensating" in out and "next: run `shardhash saga resume`" in out
    assert main(["saga", "resume", ids[0], "--config", cfg, "--force", "--import", MOD, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"resumed": {ids[0]: "completed"}}
    assert main(["saga", "resume", "--config", cfg, "--import", MOD]) == 0  # every saga whose driver is gone
    assert capsys.readouterr().out.strip() == f"{ids[1]}: compensated"
    b = balances(cl)
    assert (b[3], b[4], b[5], b[6]) == (START - 6, START + 6, START, START)
    assert main(["saga", "abort", done, "--config", cfg, "--import", MOD, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"id": done, "state": "completed"}

    # refusals: exit 2 and one line
    assert main(["saga", "show", "nope", "--config", cfg]) == 2
    assert "no saga 'nope'" in capsys.readouterr().err
    assert main(["saga", "show", "--config", cfg]) == 2
    assert "needs a saga id" in capsys.readouterr().err
    assert main(["saga", "list", "--config", cfg, "--state", "done"]) == 2
    assert "state must be one of" in capsys.readouterr().err
    assert main(["saga", "resume", "--config", cfg, "--import", "no_such_module_xyz"]) == 2
    assert "no_such_module_xyz" in capsys.readouterr().err
    assert main(["saga", "list", "--config", str(tmp_path / "missing.json")]) == 2
    assert main(["demo", "--saga", "--migrate"]) == 2
    assert "pick one" in capsys.readouterr().err
    cl.close()
