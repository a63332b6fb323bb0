"""Compiled fast paths of HotKeyRouter (private).

``HotPaths`` answers ``route_write``/``route_read`` for *cold* keys with one
dict probe and one call of the router's compiled ``route``; hot keys, pinned
sub-keys and keys that are neither ``int`` nor ``str`` go back to the
pure-Python methods of ``shardhash.hotkeys.HotKeyRouter`` (the reference),
so both always agree.  The router is immutable: ``fan`` is never modified
after construction, so reading it needs no lock.
"""

cimport cython

__all__ = ["HotPaths"]


cdef class HotPaths:
    cdef object route       # the router's bound route()
    cdef dict fan           # hot key -> tuple of sub-key shards
    cdef object py_write    # HotKeyRouter.route_write bound to the router (reference)
    cdef object py_read     # HotKeyRouter.route_read bound to the router (reference)

    def __init__(self, route, dict fan, py_write, py_read):
        self.route = route
        self.fan = fan
        self.py_write = py_write
        self.py_read = py_read

    @cython.binding(False)
    def route_write(self, key, *, sub_key=None):
        """``(shard, sub_key)`` to write a row of ``key`` to (see HotKeyRouter.route_write)."""
        t = type(key)
        if (t is str or t is int) and sub_key is None and key not in self.fan:
            return (self.route(key), 0)
        return self.py_write(key, sub_key=sub_key)

    @cython.binding(False)
    @cython.always_allow_keywords(False)
    @cython.embedsignature(False)
    def route_read(self, key):
        """route_read($self, key, /)
--

        Every ``(shard, sub_key)`` holding rows of ``key`` (see HotKeyRouter.route_read)."""
        t = type(key)
        if (t is str or t is int) and key not in self.fan:
            return [(self.route(key), 0)]
        return self.py_read(key)
