from collections.abc import Callable
from typing import Any

from typing_extensions import disjoint_base

__all__ = ["HotPaths"]

@disjoint_base
class HotPaths:
    def __init__(self, route: Callable[[Any], str], fan: dict[Any, tuple[str, ...]],
                 py_write: Callable[..., tuple[str, int]], py_read: Callable[[Any], list[tuple[str, int]]]) -> None: ...
    def route_write(self, key: Any, *, sub_key: int | None = None) -> tuple[str, int]: ...
    def route_read(self, key: Any, /) -> list[tuple[str, int]]: ...
