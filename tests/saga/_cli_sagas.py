"""The sagas a `shardhash saga resume|abort --import tests.saga._cli_sagas` run finds."""

from __future__ import annotations

from ._bank import make_transfer

transfer = make_transfer("transfer")
