from collections.abc import Callable, Iterable
from typing import Any

from typing_extensions import disjoint_base

__all__ = ["HotPaths"]

@disjoint_base
class HotPaths:
    def __init__(self, router: Any, base: Any, hot_keys: Iterable[int | str],
                 py_write: Callable[..., tuple[str, int]], py_read: Callable[[Any], list[tuple[str, int]]]) -> None: ...
    def route_write(self, key: Any, *, sub_key: int | None = None) -> tuple[str, int]: ...
    def route_read(self, key: Any, /) -> list[tuple[str, int]]: ...
