from collections.abc import Iterable
from typing import Any

from typing_extensions import Buffer, Self, disjoint_base

import numpy as np
import numpy.typing as npt

from shardhash._codec import KeyCodec

__all__ = ["ALGORITHMS", "HASHER_FORMAT", "Hasher", "check_algorithm", "check_seed", "check_code_points",
           "hash_bytes", "hash_key", "hash_array"]

ALGORITHMS: tuple[str, ...]
HASHER_FORMAT: str

def check_algorithm(algorithm: str) -> int: ...
def check_seed(algorithm: str, seed: int) -> int: ...
def check_code_points(s: str) -> None: ...
def hash_bytes(data: Buffer, algorithm: str = ..., seed: int = ...) -> int: ...
def hash_key(key: Any, algorithm: str = ..., seed: int = ..., codec: KeyCodec | None = ...) -> int: ...
def hash_array(
    keys: Iterable[Any] | npt.ArrayLike | Any,
    algorithm: str = ...,
    seed: int = ...,
    codec: KeyCodec | None = ...,
    out: npt.NDArray[np.uint64] | None = ...,
    threads: int | None = ...,
) -> npt.NDArray[np.uint64]: ...

@disjoint_base
class Hasher:
    algorithm: str
    seed: int
    codec: KeyCodec
    def __new__(cls, algorithm: str = ..., seed: int = ..., codec: KeyCodec | None = ...) -> Self: ...
    def __call__(self, key: Any) -> int: ...
    def encode(self, key: Any) -> bytes: ...
    def hash_array(
        self,
        keys: Iterable[Any] | npt.ArrayLike | Any,
        out: npt.NDArray[np.uint64] | None = ...,
        threads: int | None = ...,
    ) -> npt.NDArray[np.uint64]: ...
    def to_dict(self) -> dict[str, Any]: ...
    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Hasher: ...
    def to_json(self) -> str: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
