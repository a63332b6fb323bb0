"""Shared plumbing of the compiled modules (private; see ``_common.pxd``).

One runner releases the GIL and splits a kernel over threads, one validator
checks Arrow-style offsets and one checks ``out=`` arrays, so every batch
binding in ``_hashing``, ``routing._kernels``, ``_plan`` and ``compat._native``
validates the same way, reports positions the same way and runs the same
way.  Nothing here is public; the module has no Python-level API.
"""

cimport cython
from cpython.buffer cimport PyBuffer_Release, PyBUF_RECORDS_RO
from cpython.exc cimport PyErr_Clear
from libc.stdint cimport int64_t

from shardhash._npy cimport import_numpy, new_array, array_data
cimport numpy as cnp

import numpy as np

import_numpy()

cdef extern from "Python.h":
    # PyObject_GetBuffer without Cython's exception check (address() falls back)
    int _get_buffer "PyObject_GetBuffer"(object obj, Py_buffer *view, int flags)

from shardhash import _parallel

__all__ = []

cdef object _ndarray = np.ndarray
# Below this many keys threads=None means the calling thread alone
# (_parallel.resolve_threads says the same; repeated here so the common case
# makes no Python call).
cdef Py_ssize_t _SMALL_WORK = 2 * _parallel.MIN_PARALLEL


@cython.final
@cython.auto_pickle(False)
cdef class _Chunks:
    """The callable a pool thread runs: one chunk of a job without the GIL."""
    cdef sh_chunk_fn fn
    cdef const sh_job *job
    cdef Py_ssize_t step
    cdef ptrdiff_t bad
    cdef bint nomem

    def __call__(self, Py_ssize_t start, Py_ssize_t stop):
        cdef ptrdiff_t r
        with nogil:
            r = self.fn(self.job, start // self.step, start, stop)
        # Back under the GIL: keep the smallest bad position of any chunk.
        if r == SH_NOMEM:
            self.nomem = True
        elif r >= 0 and (self.bad < 0 or r < self.bad):
            self.bad = r


cdef inline ptrdiff_t _result(ptrdiff_t r) except -3:
    if r == SH_NOMEM:
        raise MemoryError()
    return r


cdef ptrdiff_t run(sh_chunk_fn fn, const sh_job *job, Py_ssize_t n, object threads) except -3:
    cdef ptrdiff_t r = SH_OK
    if threads is None and n < _SMALL_WORK:
        if n > 0:
            with nogil:
                r = fn(job, 0, 0, n)
        return _result(r)
    return run_chunks(fn, job, chunk_bounds(n, threads))


cdef list chunk_bounds(Py_ssize_t n, object threads):
    if threads is None and n < _SMALL_WORK:
        return [(0, n)]
    return _parallel.chunk_bounds(n, threads)  # validates threads


cdef ptrdiff_t run_chunks(sh_chunk_fn fn, const sh_job *job, list bounds) except -3:
    cdef ptrdiff_t r = SH_OK
    cdef Py_ssize_t start, stop
    cdef _Chunks task
    if len(bounds) == 1:
        start, stop = bounds[0]
        if stop > start:
            with nogil:
                r = fn(job, 0, start, stop)
        return _result(r)
    task = _Chunks.__new__(_Chunks)
    task.fn = fn
    task.job = job
    task.step = bounds[0][1] - bounds[0][0]
    task.bad = SH_OK
    task.nomem = False
    _parallel.run_chunks(bounds, task)
    if task.nomem:
        raise MemoryError()
    return task.bad


cdef Py_ssize_t check_offsets(const int64_t *offsets, Py_ssize_t noffsets, Py_ssize_t ndata,
                              Py_ssize_t n=-1) except -1:
    cdef Py_ssize_t i, bad = -1
    if n >= 0 and noffsets != n + 1:
        raise ValueError(f"offsets has {noffsets} elements, expected {n + 1}")
    if noffsets < 1:
        raise ValueError("offsets must have at least one element")
    n = noffsets - 1
    if offsets[0] < 0:
        raise ValueError(f"offsets[0] = {offsets[0]} is negative")
    if offsets[n] > ndata:
        raise ValueError(f"offsets [{offsets[0]}, {offsets[n]}] fall outside the {ndata}-byte data "
                         f"(they end at {offsets[n]}, beyond the data)")
    with nogil:
        for i in range(n):
            if offsets[i + 1] < offsets[i]:
                bad = i
                break
    if bad >= 0:
        raise ValueError(f"offsets decrease at position {bad}: key {bad} would end "
                         f"(offsets[{bad + 1}] = {offsets[bad + 1]}) before it starts "
                         f"(offsets[{bad}] = {offsets[bad]})")
    return n


cdef inline object _new_out(Py_ssize_t n, object dtype):
    """np.empty(n, dtype); through NumPy's C API for a native-order builtin
    number dtype (every caller's): no Python call."""
    cdef int t
    if isinstance(dtype, cnp.dtype):
        t = (<cnp.dtype>dtype).type_num
        if t <= cnp.NPY_CLONGDOUBLE and (<cnp.dtype>dtype).byteorder in (c'=', c'|'):
            return new_array(n, t)
    return np.empty(n, dtype)


cdef object check_out(object out, Py_ssize_t n, object dtype, bint required=False):
    if out is None:
        if required:
            raise TypeError(f"out must be a numpy.ndarray of {np.dtype(dtype)}, not None")
        return _new_out(n, dtype)
    if not isinstance(out, _ndarray):
        raise TypeError(f"out must be a numpy.ndarray of {np.dtype(dtype)}, not {type(out).__name__}")
    if out.dtype != dtype or not out.dtype.isnative:
        raise TypeError(f"out must have dtype {np.dtype(dtype)} (native byte order), not {out.dtype}")
    if out.ndim != 1:
        raise ValueError(f"out must be 1-dimensional, got {out.ndim} dimensions")
    if out.shape[0] != n:
        raise ValueError(f"out has length {out.shape[0]} but there are {n} keys "
                         f"(out must have shape ({n},))")
    check_out_layout(out)
    return out


cdef int check_out_layout(object out, str unwritable="out must be writeable (it is read-only)") except -1:
    if not out.flags.c_contiguous:
        raise ValueError("out must be C-contiguous")
    if not out.flags.aligned:  # the kernels' typed stores into it would be undefined behaviour
        raise ValueError("out must be aligned (its items start off their alignment)")
    if not out.flags.writeable:
        raise ValueError(unwritable)
    return 0


cdef void *address(object a) except? NULL:
    # A numpy array's data pointer is a field (NumPy's C API); for other
    # objects the buffer protocol gives the first item's address cheaply (no
    # __array_interface__ dict).
    cdef Py_buffer view
    cdef void *p
    if cnp.PyArray_Check(a) and cnp.PyArray_NDIM(<cnp.ndarray>a) >= 1:
        return NULL if cnp.PyArray_DIM(<cnp.ndarray>a, 0) == 0 else array_data(a)
    if a.shape[0] == 0:
        return NULL
    if _get_buffer(a, &view, PyBUF_RECORDS_RO) == 0:
        p = view.buf
        PyBuffer_Release(&view)
        return p
    PyErr_Clear()
    return <void *><size_t>a.__array_interface__["data"][0]
