# NumPy's C API for the small-batch paths: make a result array and read an
# integer input array without a Python-level call (``np.empty``) or a buffer
# export (``PyObject_GetBuffer``), which cost a batch of a few keys more than
# its keys.  Declarations and inline functions only (no module of its own).
#
# Every module that cimports this must initialise NumPy's C API once, at
# import, before any of these run:
#
#     from shardhash._npy cimport import_numpy
#     import_numpy()
#
# The build (setup.py) puts NumPy's headers on the include path and pins the
# oldest NumPy the compiled modules run against (NPY_TARGET_VERSION).

cimport numpy as cnp
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

cdef enum:
    NP_INT32 = cnp.NPY_INT32
    NP_INT64 = cnp.NPY_INT64
    NP_UINT16 = cnp.NPY_UINT16
    NP_UINT64 = cnp.NPY_UINT64
    NP_UNSIGNED = 16     # int_array(): added to the item size for an unsigned dtype


cdef inline int import_numpy() except -1:
    cnp.import_array()
    return 0


cdef inline bint is_ndarray_exact(object a) noexcept:
    """``type(a) is numpy.ndarray``, without looking ``np.ndarray`` up."""
    return cnp.PyArray_CheckExact(a)


cdef inline object new_array(Py_ssize_t n, int typenum):
    """A new 1-D, C-contiguous array of ``n`` (uninitialised) items of a
    builtin dtype (``NP_INT32``...) in native byte order."""
    cdef cnp.npy_intp d = n
    return cnp.PyArray_SimpleNew(1, &d, typenum)


cdef inline void *array_data(object a) noexcept:
    """The data pointer of a numpy array (any subclass; the caller has checked)."""
    return cnp.PyArray_DATA(<cnp.ndarray>a)


cdef inline int int_array(object a, const char **data, Py_ssize_t *n, Py_ssize_t *stride) noexcept:
    """For an exact ``numpy.ndarray``, one-dimensional, of a builtin integer
    dtype (bool excluded) in native byte order: its item size (1, 2, 4 or 8)
    plus ``NP_UNSIGNED`` for an unsigned dtype, with ``*data`` (the first
    item), ``*n`` and ``*stride`` (bytes, any sign) set; 0 for anything
    else (subclasses, other dtypes, byte-swapped or n-dimensional arrays),
    with nothing set and no exception."""
    cdef int t
    if not cnp.PyArray_CheckExact(a):
        return 0
    if cnp.PyArray_NDIM(<cnp.ndarray>a) != 1 or not cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>a):
        return 0
    t = cnp.PyArray_TYPE(<cnp.ndarray>a)
    if t < cnp.NPY_BYTE or t > cnp.NPY_ULONGLONG:   # the builtin integer type numbers, after NPY_BOOL
        return 0
    data[0] = cnp.PyArray_BYTES(<cnp.ndarray>a)
    n[0] = cnp.PyArray_DIM(<cnp.ndarray>a, 0)
    stride[0] = cnp.PyArray_STRIDE(<cnp.ndarray>a, 0)
    return <int>cnp.PyArray_ITEMSIZE(<cnp.ndarray>a) + (NP_UNSIGNED if cnp.PyTypeNum_ISUNSIGNED(t) else 0)


cdef inline uint64_t int_word(const char *p, int code) noexcept nogil:
    """The integer at ``p`` (of ``int_array``'s ``code``) as the 64-bit word
    ``hash_array`` hashes for it: sign-extended for a signed dtype,
    zero-extended for an unsigned one (unaligned loads are fine)."""
    cdef uint16_t u16
    cdef uint32_t u32
    cdef uint64_t w, sign
    cdef int size = code & ~NP_UNSIGNED
    # the item in its own width (host order), zero-extended
    if size == 8: memcpy(&w, p, 8); return w
    elif size == 4: memcpy(&u32, p, 4); w = u32
    elif size == 2: memcpy(&u16, p, 2); w = u16
    else: w = (<const uint8_t *>p)[0]
    if code & NP_UNSIGNED:
        return w
    # sign extension from the item's top bit: (w ^ sign) - sign
    sign = (<uint64_t>1) << (8 * size - 1)
    return (w ^ sign) - sign
