"""Type stubs for shardhash._common: the compiled modules' shared plumbing
(cimported by them; nothing here is for Python callers)."""

__all__: list[str] = []
