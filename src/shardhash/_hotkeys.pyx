"""Compiled fast paths of HotKeyRouter (private).

``HotPaths`` answers ``route_write``/``route_read`` for *cold* keys in one
call: the router core hashes the key and places it (through the capsule
``shardhash.routing._kernels._C_API``, the same code as ``route``), and the
same 64-bit hash is looked up in a small open-addressing table holding the
hashes of the hot keys.  A key whose hash is not in the table is cold (equal
int/str keys hash equally), so the answer is ``(shard, 0)``, returned from a
per-shard table of ready-made tuples.  A hash that is in the table (a hot key,
or a cold key sharing a hot key's 64-bit hash), a pinned ``sub_key``, a key
that is neither an exact ``int`` nor ``str``, and routers whose ``route``
does not hash the key itself all go to the pure-Python methods of
``shardhash.hotkeys.HotKeyRouter`` (the reference), so both always agree.

The router is immutable: the table is filled in ``__init__`` and never
changed, so reading it needs no lock.
"""

cimport cython
from libc.stdint cimport uint64_t, int32_t
from cpython.mem cimport PyMem_Malloc, PyMem_Free
from cpython.pycapsule cimport PyCapsule_GetPointer
from cpython.ref cimport Py_INCREF, PyObject
from cpython.list cimport PyList_New, PyList_SET_ITEM
from libc.string cimport memset
from cpython.tuple cimport PyTuple_GET_ITEM
from cpython.unicode cimport PyUnicode_CheckExact
from cpython.long cimport PyLong_CheckExact

from shardhash.routing._kernels import RouterCore, _C_API

__all__ = ["HotPaths"]

ctypedef int32_t (*_route_index_hash_fn)(object, object, uint64_t *) except -2

cdef struct _RouterCAPI:
    _route_index_hash_fn route_index_hash

cdef extern from *:
    """
    /* Refill route_read's last one-pair list l with item when l's only
     * reference is route_read's own (its last caller dropped it), so nobody
     * can see it change -- the way CPython's zip() and dict.items()
     * iterators reuse their result tuple.  Returns a new reference to l when
     * refilled, else a new reference to None (then route_read builds a new
     * list).  The list is shared before its old item is released: releasing
     * an item the caller stored there could run code that calls route_read
     * again, which then sees two references and builds its own list.  Never
     * on the free-threaded build, where another thread could take a
     * reference between the check and the refill. */
    static PyObject *sh_refill_one_list(PyObject *l, PyObject *item)
    {
    #ifndef Py_GIL_DISABLED
        PyObject *old;
        if (Py_REFCNT(l) == 1 && PyList_CheckExact(l) && PyList_GET_SIZE(l) == 1) {
            old = PyList_GET_ITEM(l, 0);
            Py_INCREF(item);
            PyList_SET_ITEM(l, 0, item);
            Py_INCREF(l);
            Py_DECREF(old);
            return l;
        }
    #else
        (void)l;
        (void)item;
    #endif
        Py_RETURN_NONE;
    }
    """
    object sh_refill_one_list(PyObject *l, PyObject *item)

cdef _route_index_hash_fn _route_index_hash = \
    (<_RouterCAPI *>PyCapsule_GetPointer(_C_API, b"shardhash.routing._kernels._C_API")).route_index_hash


cdef class HotPaths:
    cdef object router      # the HotKeyRouter
    cdef object core        # its base router (a RouterCore): places every key as the router does
    cdef tuple cold         # (shard, 0) per shard index
    cdef object py_write    # HotKeyRouter.route_write bound to the router (reference)
    cdef object py_read     # HotKeyRouter.route_read bound to the router (reference)
    cdef bint fast          # the router's route() hashes int/str keys itself
    cdef uint64_t *table    # hot keys' hashes, open addressing; 0 marks a free slot
    cdef uint64_t mask      # table size - 1 (size a power of two), or 0 without a table
    cdef bint zero_hot      # a hot key hashes to 0 (0 cannot be stored in the table)
    cdef uint64_t bits[64]  # 4096-bit filter on the hashes' top 12 bits: most cold keys stop here
    cdef list last_read     # route_read's last one-pair list, reused once its caller dropped it

    def __cinit__(self, *args, **kwargs):
        self.table = NULL
        self.mask = 0
        self.zero_hot = False
        self.fast = False
        memset(self.bits, 0, sizeof(self.bits))

    def __dealloc__(self):
        PyMem_Free(self.table)

    def __init__(self, router, base, hot_keys, py_write, py_read):
        """``base``: the router's base, which places every key as ``router``
        does (one C call less than the wrapper); ``hot_keys``: the router's
        hot keys (exact int/str)."""
        cdef uint64_t h, size, j
        cdef int32_t i
        if self.router is not None:
            raise AttributeError("HotPaths is immutable")
        if not isinstance(router, RouterCore) or not isinstance(base, RouterCore):
            raise TypeError("router and base must be routers")
        if tuple(router.shards) != tuple(base.shards):
            raise ValueError("router and base must have the same shards")
        self.router = router
        self.core = base
        self.cold = tuple([(s, 0) for s in router.shards])
        self.py_write = py_write
        self.py_read = py_read
        # The C path is route() itself only when route() is RouterCore's.
        self.fast = (getattr(type(router), "route", None) is RouterCore.route
                     and getattr(type(base), "route", None) is RouterCore.route)
        keys = list(hot_keys)
        size = 8
        while size < 2 * <uint64_t>len(keys):
            size <<= 1
        if self.fast and keys:
            self.table = <uint64_t *>PyMem_Malloc(size * sizeof(uint64_t))
            if self.table == NULL:
                raise MemoryError()
            for j in range(size):
                self.table[j] = 0
            self.mask = size - 1
        for k in keys:
            if not self.fast:
                break
            if type(k) is not str and type(k) is not int:
                raise TypeError(f"hot keys must be int or str, got {type(k).__name__}")
            i = _route_index_hash(base, k, &h)
            if i < 0:  # route() does not hash keys itself: no C path
                self.fast = False
                break
            self.bits[h >> 58] |= (<uint64_t>1) << ((h >> 52) & 63)
            if h == 0:
                self.zero_hot = True
                continue
            j = (h >> 32) & self.mask
            while self.table[j] != 0 and self.table[j] != h:
                j = (j + 1) & self.mask
            self.table[j] = h

    cdef inline bint _maybe_hot(self, uint64_t h) noexcept:
        cdef uint64_t j, v
        if not (self.bits[h >> 58] >> ((h >> 52) & 63)) & 1:
            return False
        if h == 0:
            return self.zero_hot
        if self.mask == 0:
            return False
        j = (h >> 32) & self.mask
        while True:
            v = self.table[j]
            if v == h:
                return True
            if v == 0:
                return False
            j = (j + 1) & self.mask

    @cython.binding(False)
    def route_write(self, key, *, sub_key=None):
        """``(shard, sub_key)`` to write a row of ``key`` to (see HotKeyRouter.route_write)."""
        cdef uint64_t h
        cdef int32_t i
        if self.fast and sub_key is None and (PyUnicode_CheckExact(key) or PyLong_CheckExact(key)):
            i = _route_index_hash(self.core, key, &h)
            if i >= 0 and not self._maybe_hot(h):
                return <object>PyTuple_GET_ITEM(self.cold, i)
        return self.py_write(key, sub_key=sub_key)

    @cython.binding(False)
    @cython.always_allow_keywords(False)
    @cython.embedsignature(False)
    def route_read(self, key):
        """route_read($self, key, /)
--

        Every ``(shard, sub_key)`` holding rows of ``key`` (see HotKeyRouter.route_read)."""
        cdef uint64_t h
        cdef int32_t i
        cdef object pair, again
        cdef list out
        if self.fast and (PyUnicode_CheckExact(key) or PyLong_CheckExact(key)):
            i = _route_index_hash(self.core, key, &h)
            if i >= 0 and not self._maybe_hot(h):
                pair = <object>PyTuple_GET_ITEM(self.cold, i)
                if self.last_read is not None:
                    again = sh_refill_one_list(<PyObject *>self.last_read, <PyObject *>pair)
                    if again is not None:
                        return again
                out = PyList_New(1)
                Py_INCREF(pair)
                PyList_SET_ITEM(out, 0, pair)
                self.last_read = out
                return out
        return self.py_read(key)
