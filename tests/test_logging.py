"""The package's loggers stay silent unless the application configures logging."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import logging, sys
    import shardhash
    from shardhash import _events
    if sys.argv[1] == "configured":
        logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")
    _events.emit("error", shard="s1", step="copy")          # a WARNING record
    logging.getLogger("shardhash.migrate").error("boom")    # an ERROR record
""")


def _stderr(mode: str) -> str:
    r = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stderr


def test_no_records_on_stderr_without_logging_configured() -> None:
    # Without the package's NullHandler, Python's last-resort handler printed
    # "error {'shard': 's1', 'step': 'copy'}" and "boom" here.
    assert _stderr("plain") == ""


def test_records_reach_an_application_that_configures_logging() -> None:
    err = _stderr("configured")
    assert "shardhash.events WARNING error {'shard': 's1', 'step': 'copy'}" in err
    assert "shardhash.migrate ERROR boom" in err
