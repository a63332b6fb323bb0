"""Type stubs for shardhash._cyutility (Cython's shared utility code: the memoryview
machinery every compiled module imports; nothing public)."""

from typing import Any

__pyx_capi__: dict[str, Any]
