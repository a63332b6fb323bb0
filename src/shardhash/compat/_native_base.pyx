"""What the compat binding modules share (private): the key-table base
classes and the batch plumbing (see ``_native_base.pxd``).

Every batch kernel validates its inputs with the GIL held (offsets and
``out=`` through ``shardhash._common``), then runs the C core without the
GIL, split over threads by ``shardhash._common.run``.  A key router is a C
function ``int32_t f(void *ctx, PyObject *key)`` returning the shard index,
-1 with a Python exception set, or ``KEY_NOT_MINE`` (the router then calls
its ``_route_index_slow``).
"""

from cpython.pycapsule cimport PyCapsule_New, PyCapsule_SetContext
from libc.string cimport memcpy, memset

from cpython.ref cimport PyObject
from cpython.sequence cimport PySequence_Fast_GET_ITEM

from shardhash._common cimport (sh_job, sh_chunk_fn, key_index_fn, run, check_offsets, check_out, address,
                                sh_exact_raw)
from shardhash._npy cimport import_numpy, new_array, array_data

import numpy as np

import_numpy()

__all__: list = []


cdef class _Keys:
    """Tables of one router and the C function that routes a key with them."""

    def __cinit__(self):
        self._keep = []

    cdef _own(self, arr, dtype):
        a = np.array(arr, dtype=dtype, copy=True, order="C")
        if a.ndim != 1 or a.shape[0] == 0:
            raise ValueError("a non-empty 1-D table is needed")
        a.setflags(write=False)
        self._keep.append(a)
        return a

    cdef key_index_fn _fn(self):
        return NULL

    cdef _fresh(self):
        """Refuse a second __init__: the tables of a built object are read by
        the routers that hold it (replacing them would change their answers,
        and a replacement that failed half-way would leave tables that do not
        fit together)."""
        if self._keep:
            raise AttributeError(f"{type(self).__name__} is immutable: build a new one")

    def capsule(self):
        """PyCapsule("shardhash.key_index") of the C function; its context is this object."""
        cdef key_index_fn f = self._fn()
        cap = PyCapsule_New(<void *>f, b"shardhash.key_index", NULL)
        PyCapsule_SetContext(cap, <void *>self)  # the router keeps self alive
        return cap


cdef class _RangeKeys(_Keys):
    """Sorted range bounds (int64 or uint64: ring tokens, range starts, chunk
    minima) and the shard index of each."""

    cdef _ranges(self, bounds, owners, dtype, str mismatch):
        """Own the tables; ValueError(mismatch) unless one owner per bound."""
        b = self._own(bounds, dtype)
        o = self._own(owners, np.int32)
        if o.shape[0] != b.shape[0]:
            raise ValueError(mismatch)
        self.bounds = address(b)
        self.owners = <const int32_t *>address(o)
        self.m = b.shape[0]
        return b


cdef object map_values(sh_chunk_fn fn, const void *values, Py_ssize_t n, object out, object dtype,
                       bint required, object threads, uint64_t seed=0, const void *ctx=NULL, int variant=0):
    cdef sh_job job
    out = check_out(out, n, dtype, required)
    memset(&job, 0, sizeof(sh_job))
    job.data = values if n else NULL
    job.out = address(out)
    job.seed = seed
    job.ctx = ctx
    job.variant = variant
    run(fn, &job, n, threads)
    return out


cdef Py_ssize_t _out_len(object out, object dtype) except -1:
    """The length of a required ``out=``, the number of keys (check_out then
    checks the rest)."""
    if not isinstance(out, np.ndarray) or out.ndim != 1:
        check_out(out, 0, dtype, True)  # raises, naming what is wrong
    return out.shape[0]


cdef object map_offsets(sh_chunk_fn fn, const uint8_t[::1] data, const int64_t[::1] offsets,
                        object out, object dtype, bint required, object threads, uint64_t seed=0,
                        const void *ctx=NULL):
    cdef Py_ssize_t n = _out_len(out, dtype) if required else -1
    cdef sh_job job
    n = check_offsets(&offsets[0] if offsets.shape[0] else NULL, offsets.shape[0], data.shape[0], n)
    out = check_out(out, n, dtype, required)
    memset(&job, 0, sizeof(sh_job))
    job.data = bytes_of(data)
    job.offsets = &offsets[0]
    job.out = address(out)
    job.seed = seed
    job.ctx = ctx
    run(fn, &job, n, threads)
    return out


cdef object map_fixed(sh_chunk_fn fn, const uint8_t[::1] data, Py_ssize_t width, object out, object dtype,
                      object threads, uint64_t seed=0):
    cdef Py_ssize_t n = _out_len(out, dtype)
    cdef sh_job job
    if width < 1 or data.shape[0] != n * width:
        raise ValueError(f"data has {data.shape[0]} bytes, expected {n} keys of {width} bytes")
    out = check_out(out, n, dtype, True)
    memset(&job, 0, sizeof(sh_job))
    job.data = bytes_of(data)
    job.width = <size_t>width
    job.out = address(out)
    job.seed = seed
    run(fn, &job, n, threads)
    return out


cdef object array_of(const void *src, Py_ssize_t n, int typenum, size_t itemsize):
    """(made through NumPy's C API: no Python call, no buffer export)"""
    res = new_array(n, typenum)
    if n:
        memcpy(array_data(res), src, <size_t>n * itemsize)
    return res


cdef object small_kernel(object keys, sh_pipe_kernel fn, int typenum, size_t itemsize):
    cdef const uint8_t *ptrs[SMALL]
    cdef int64_t lens[SMALL]
    cdef uint64_t out[SMALL]
    cdef Py_ssize_t i, m, n = small_len(keys)
    if n < 0:
        return None
    for i in range(n):
        ptrs[i] = <const uint8_t *>sh_exact_raw(PySequence_Fast_GET_ITEM(keys, i), &m, True, True)
        if ptrs[i] == NULL:
            return None
        lens[i] = m
    fn(NULL, ptrs, lens, <size_t>n, out)
    return array_of(out, n, typenum, itemsize)
