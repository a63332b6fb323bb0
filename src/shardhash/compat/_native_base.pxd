# What the compat binding modules (_native_*.pyx) share (cimport it; the
# functions live in _native_base.pyx): the key-table base classes whose
# capsule a compat router hands to RouterCore._use_native_keys, the batch
# plumbing (validate, then run a kernel over every key without the GIL) and
# small inline helpers.

from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t

from shardhash._common cimport sh_job, sh_chunk_fn, key_index_fn
from shardhash._intake cimport sh_pipe_kernel


cdef class _Keys:
    """Tables of one router and the C function that routes a key with them."""
    cdef list _keep
    cdef _own(self, arr, dtype)
    cdef key_index_fn _fn(self)
    cdef _fresh(self)


cdef class _RangeKeys(_Keys):
    cdef const void *bounds
    cdef const int32_t *owners
    cdef Py_ssize_t m
    cdef _ranges(self, bounds, owners, dtype, str mismatch)


cdef enum:
    SMALL = 64   # the *_small functions take at most this many keys


ctypedef fused bound_t:
    int64_t
    uint64_t


cdef inline const uint8_t *bytes_of(const uint8_t[::1] data) noexcept:
    # An empty buffer has no element pointer; no key reads from it.
    return &data[0] if data.shape[0] else <const uint8_t *>b""


cdef inline const int64_t *offs(const sh_job *j, Py_ssize_t s) noexcept nogil:
    """The offsets of keys [s, ...) of an Arrow-style job."""
    return <const int64_t *>j.offsets + s


cdef inline Py_ssize_t count_le(const bound_t *a, Py_ssize_t n, bound_t v) noexcept:
    """The number of sorted bounds a[0..n) that are <= v (the first bound > v)."""
    cdef Py_ssize_t lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] <= v:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline Py_ssize_t small_len(object keys) noexcept:
    """len(keys) for a list or tuple of at most SMALL keys, else -1."""
    cdef Py_ssize_t n
    if type(keys) is list or type(keys) is tuple:
        n = len(keys)
        return n if n <= SMALL else -1
    return -1


# out[i] = f(values[i]) by the kernel fn over n values at `values`: ``out``
# checked (or made when not required), then fn run over every key without the GIL.
# job.seed, job.ctx and job.variant as given (variant: which C function of a
# family the kernel calls).
cdef object map_values(sh_chunk_fn fn, const void *values, Py_ssize_t n, object out, object dtype,
                       bint required, object threads, uint64_t seed=*, const void *ctx=*, int variant=*)

ctypedef fused num_t:
    int16_t
    int32_t
    int64_t
    uint32_t
    uint64_t
    double


cdef inline object map_array(sh_chunk_fn fn, const num_t[::1] values, object out, object dtype, bint required,
                             object threads, uint64_t seed=0, const void *ctx=NULL, int variant=0):
    """map_values over a typed array."""
    return map_values(fn, &values[0] if values.shape[0] else NULL, values.shape[0], out, dtype, required,
                      threads, seed, ctx, variant)


# out[i] = f(key i) for Arrow-style (data, offsets) keys: offsets checked
# against the data (and, with a required ``out``, its length).
cdef object map_offsets(sh_chunk_fn fn, const uint8_t[::1] data, const int64_t[::1] offsets,
                        object out, object dtype, bint required, object threads, uint64_t seed=*,
                        const void *ctx=*)

# out[i] = f(data[i * width:(i + 1) * width]) (keys packed back to back).
cdef object map_fixed(sh_chunk_fn fn, const uint8_t[::1] data, Py_ssize_t width, object out, object dtype,
                      object threads, uint64_t seed=*)

# The *_small functions: fn (a pointer kernel, see _intake.pxd) over a list or
# tuple of at most SMALL keys that are all exact bytes or compact ASCII str,
# into a new array of builtin dtype typenum (items of itemsize <= 8 bytes);
# None for anything else.
cdef object small_kernel(object keys, sh_pipe_kernel fn, int typenum, size_t itemsize)

# A new numpy array of n items of a builtin dtype (NP_UINT16...), copied from src.
cdef object array_of(const void *src, Py_ssize_t n, int typenum, size_t itemsize)
