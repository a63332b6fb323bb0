"""Keyword options declared once, as a TypedDict, for the functions that take
them as ``**options: Unpack[...]`` and pass them on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def check_options(function: str, given: Mapping[str, Any], declared: Any) -> None:
    """Refuse a keyword that the TypedDict ``declared`` does not name, as
    Python refuses a keyword a function does not take (a TypeError naming
    ``function`` and the first such keyword in sorted order).

    >>> from typing import TypedDict
    >>> class Opts(TypedDict, total=False):
    ...     size: int
    >>> check_options("f", {"size": 1}, Opts)
    >>> check_options("f", {"sise": 1}, Opts)
    Traceback (most recent call last):
    ...
    TypeError: f() got an unexpected keyword argument 'sise'
    """
    unknown = sorted(set(given) - declared.__required_keys__ - declared.__optional_keys__)
    if unknown:
        raise TypeError(f"{function}() got an unexpected keyword argument {unknown[0]!r}")
