"""Type stubs for shardhash.compat._native_base (what the compat bindings share)."""


from typing_extensions import CapsuleType, disjoint_base

__all__ = []

@disjoint_base
class _Keys:
    def capsule(self) -> CapsuleType: ...

@disjoint_base
class _RangeKeys(_Keys): ...
