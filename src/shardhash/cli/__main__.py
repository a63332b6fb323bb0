"""``python -m shardhash.cli``: the same as ``python -m shardhash``."""

import runpy

runpy.run_module("shardhash", run_name="__main__", alter_sys=True)
