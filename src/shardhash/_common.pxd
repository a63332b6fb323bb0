# The plumbing every compiled module shares (cimport it; the functions live
# in _common.pyx):
#
# * the C helpers that read Python objects (exact ints, compact ASCII str)
#   without building temporaries (numpy arrays: _npy.pxd);
# * the key-router signature a compat module hands to RouterCore;
# * one validator for Arrow-style (data, offsets) keys and one for ``out=``
#   arrays, with one position convention (the key's index);
# * one runner that releases the GIL and splits a kernel over threads.
#
# A batch binding validates everything with the GIL held, fills an sh_job
# with raw pointers and calls ``run(kernel, &job, n, threads)``; ``kernel``
# is a ``sh_chunk_fn`` that calls the C core on keys [start, stop).

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from cpython.ref cimport PyObject


cdef extern from *:
    """
    #ifndef SH_COMMON_HELPERS
    #define SH_COMMON_HELPERS
    /* A Python int of one internal digit (|value| < 2**30): its value without
     * a call into the runtime.  Anything else returns 0 and takes the
     * general path, which gives the same answer. */
    static inline int sh_py_small_int(PyObject *o, long long *v)
    {
    #if defined(PYPY_VERSION) || defined(Py_LIMITED_API)
        (void)o; (void)v;
        return 0;
    #elif PY_VERSION_HEX >= 0x030C0000
        if (!PyUnstable_Long_IsCompact((PyLongObject *)o)) return 0;
        *v = (long long)PyUnstable_Long_CompactValue((PyLongObject *)o);
        return 1;
    #else
        Py_ssize_t s = Py_SIZE(o);
        if (s == 0) { *v = 0; return 1; }
        if (s == 1) { *v = (long long)((PyLongObject *)o)->ob_digit[0]; return 1; }
        if (s == -1) { *v = -(long long)((PyLongObject *)o)->ob_digit[0]; return 1; }
        return 0;
    #endif
    }

    /* A str stored as compact ASCII: its characters are its UTF-8 bytes. */
    static inline const char *sh_py_ascii(PyObject *o, Py_ssize_t *n)
    {
    #if defined(PYPY_VERSION) || defined(Py_LIMITED_API)
        (void)o; (void)n;
        return NULL;
    #else
        if (!PyUnicode_IS_COMPACT_ASCII(o)) return NULL;
        *n = PyUnicode_GET_LENGTH(o);
        return (const char *)PyUnicode_DATA(o);
    #endif
    }

    /* The bytes of an exact bytes object (bytes_ok), or of an exact str
     * stored as compact ASCII (str_ok); NULL for anything else (no
     * exception set). */
    static inline const char *sh_exact_raw(PyObject *o, Py_ssize_t *n, int bytes_ok, int str_ok)
    {
        if (bytes_ok && PyBytes_CheckExact(o)) {
            *n = PyBytes_GET_SIZE(o);
            return PyBytes_AS_STRING(o);
        }
        if (str_ok && PyUnicode_CheckExact(o)) return sh_py_ascii(o, n);
        return NULL;
    }

    /* The decimal text of v (as str(int)) into buf[0..21); returns its length. */
    static inline Py_ssize_t sh_decimal(long long v, char *buf)
    {
        char tmp[24];
        unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
        Py_ssize_t k = 0, n = 0;
        do { tmp[k++] = (char)('0' + (int)(u % 10u)); u /= 10u; } while (u);
        if (v < 0) buf[n++] = '-';
        while (k) buf[n++] = tmp[--k];
        return n;
    }
    #endif
    """
    bint sh_py_small_int(object o, long long *v)
    const char *sh_py_ascii(object o, Py_ssize_t *n)
    const char *sh_exact_raw(PyObject *o, Py_ssize_t *n, bint bytes_ok, bint str_ok)
    Py_ssize_t sh_decimal(long long v, char *buf) nogil


# -- key routers ---------------------------------------------------------------

# A compat module's C key router (RouterCore._use_native_keys): the shard
# index, -1 with a Python exception set, or KEY_NOT_MINE for a key it leaves
# to the router's Python path (_route_index_slow).
ctypedef int32_t (*key_index_fn)(void *ctx, PyObject *key) except -1

cdef enum:
    KEY_NOT_MINE = -2


# -- the runner ----------------------------------------------------------------

# What a kernel reads and writes: raw pointers set up (and kept alive) by the
# binding, plus the few scalars the C kernels take.  Fields a kernel does not
# use stay zero.
ctypedef struct sh_job:
    const void *data       # the keys: values, hashes, or the bytes of (data, offsets)
    const void *offsets    # Arrow-style offsets (key i is data[offsets[i]:offsets[i+1]])
    void *out              # the output, one item per key
    void *scratch          # per-chunk storage, see run_chunks
    const void *ctx        # tables (a ring, a continuum, a router)
    Py_ssize_t stride      # byte stride between keys, where the kernel takes one
    size_t width           # fixed key width (bytes or characters)
    uint64_t seed          # a seed, a modulus or a bucket count
    int algo               # a hash algorithm (sh_algo)
    int flag               # a kernel option (unsigned keys, upper bound...)
    int variant            # which C function of a family (key hash, integer width...)

# A kernel over keys [start, stop) of job (chunk: the chunk's number, for
# kernels that keep per-chunk state).  Returns SH_OK, the position of the
# first bad key (>= start; the binding raises naming it), or SH_NOMEM.
ctypedef ptrdiff_t (*sh_chunk_fn)(const sh_job *job, Py_ssize_t chunk, Py_ssize_t start,
                                  Py_ssize_t stop) noexcept nogil

cdef enum:
    SH_OK = -1
    SH_NOMEM = -2

# Run fn over n keys (threads: None, or an int >= 1 as every public batch
# function takes it) without the GIL.  Returns SH_OK or the smallest bad
# position any chunk reported; raises MemoryError for SH_NOMEM.  Small inputs
# (threads=None and fewer than 2 * MIN_PARALLEL keys) run on the calling
# thread with no Python call at all.
cdef ptrdiff_t run(sh_chunk_fn fn, const sh_job *job, Py_ssize_t n, object threads) except -3

# The chunks run() would use, as a list of (start, stop); run_chunks runs fn
# on exactly these (chunk k is bounds[k]).  For kernels with per-chunk state.
cdef list chunk_bounds(Py_ssize_t n, object threads)
cdef ptrdiff_t run_chunks(sh_chunk_fn fn, const sh_job *job, list bounds) except -3

# -- validators (with the GIL, before any kernel runs) ---------------------------

# Arrow-style offsets of keys over ndata bytes: at least one offset, the
# first >= 0, non-decreasing, the last <= ndata; with n >= 0, exactly n + 1
# offsets.  Returns the number of keys.  Errors name the key position i
# (key i is data[offsets[i]:offsets[i+1]]).
cdef Py_ssize_t check_offsets(const int64_t *offsets, Py_ssize_t noffsets, Py_ssize_t ndata,
                              Py_ssize_t n=*) except -1

# ``out=`` of a batch function: None -> a new array (or TypeError when
# required), else a writeable, C-contiguous, 1-D numpy array of dtype and
# length n (TypeError / ValueError naming what is wrong).
cdef object check_out(object out, Py_ssize_t n, object dtype, bint required=*)
# The layout part of check_out (C-contiguous, aligned, writeable; ValueError,
# ``unwritable`` the message for a read-only array), for arrays of other shapes.
cdef int check_out_layout(object out, str unwritable=*) except -1

# The address of a C-contiguous numpy array's first item (the caller keeps
# the array alive); NULL for an empty one.
cdef void *address(object a) except? NULL
