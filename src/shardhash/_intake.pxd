# The shared key-intake layer (cimport it; the functions live in _intake.pyx):
# keys in bulk as Arrow-style (data, offsets), keys read in place from a
# Python list, tuple or numpy array, and the plain-C pipeline that hashes a
# list on helper threads while the calling thread reads it.
#
# The C that reads Python objects is in _core/pyapi/sh_pykeys.h; the
# pipeline is plain C (_core/common/sh_pipe.c).

from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, uint8_t


cdef extern from "sh_pykeys.h":
    Py_ssize_t sh_pack_total(PyObject *const *items, Py_ssize_t n, Py_ssize_t *total)
    int sh_pack_copy(PyObject *const *items, Py_ssize_t n, uint8_t *data, Py_ssize_t total, int64_t *offsets)
    Py_ssize_t sh_seq_walk(PyObject *const *items, Py_ssize_t i, Py_ssize_t end, Py_ssize_t n,
                           const uint8_t **ptrs, int64_t *lens)
    Py_ssize_t sh_first_failing(PyObject *const *items, Py_ssize_t n, int test, PyObject *tp)
    PyObject **PySequence_Fast_ITEMS(object o)
    # 1 when a bytes or compact-ASCII str object has 32 bytes of header before
    # its data (64-bit builds): kernels that read 32 bytes before a key's end
    # may run on keys read in place.
    const bint SH_SEQ_HEADER32


cdef extern from "sh_pipe.h" nogil:
    # Hash n keys (ptrs[i], lens[i]) into the output items at out.
    ctypedef void (*sh_pipe_kernel)(const void *ctx, const uint8_t *const *ptrs, const int64_t *lens,
                                    size_t n, void *out) noexcept nogil


# key (not bytes-like or str) i through convert(key) -> bytes; TypeError /
# ValueError / OverflowError naming position i.
cdef bytes as_bytes(object k, Py_ssize_t i, object convert, bint raw_bytes=*)

# Run a pointer kernel over a list, tuple or 1-d numpy array of keys as they
# are read (see _intake.pyx); None for any other input.  dtype: the output
# array's; threads as every batch function takes it, None meaning one thread
# when pipe_auto is false.
cdef object seq_kernel(object keys, sh_pipe_kernel fn, const void *ctx, object dtype, object convert,
                       bint raw_bytes, object threads, bint pipe_auto)


# -- Arrow arrays and streams through the C data interface (_core/common/sh_arrow.h)

cdef extern from "sh_arrow.h":
    struct ArrowSchema:
        const char* format
        const char* metadata
        int64_t n_children
        ArrowSchema* dictionary
        void (*release)(ArrowSchema*)
    struct ArrowArray:
        int64_t length
        int64_t null_count
        int64_t offset
        int64_t n_buffers
        const void** buffers
        ArrowArray* dictionary
        void (*release)(ArrowArray*)
    struct ArrowArrayStream:
        void (*release)(ArrowArrayStream*)
    void sh_release_schema(ArrowSchema *s)
    void sh_release_array(ArrowArray *a)
    int sh_stream_get_schema(ArrowArrayStream *st, ArrowSchema *out)
    int sh_stream_get_next(ArrowArrayStream *st, ArrowArray *out)
    const char *sh_stream_error(ArrowArrayStream *st)


cdef class ArrowChunk:
    """Owns one imported ArrowArray (released on deallocation) or borrows
    one while its capsule lives."""
    cdef ArrowArray arr
    cdef bint owned


cdef class ArrowBuffer:
    """Buffer-protocol wrapper over an Arrow buffer (keeps the chunk alive)."""
    cdef object chunk
    cdef const void *ptr
    cdef Py_ssize_t size
    cdef Py_ssize_t shape[1]


# (format, chunks, keepalive) of an object exporting __arrow_c_array__ or
# __arrow_c_stream__: the format string of its one column, its ArrowChunks
# (borrowed from the array's capsule, or owned, taken from the stream), and
# what must stay alive while they are read.  TypeError for a dictionary-
# encoded or extension array and for a nested type read from a stream.
cdef tuple arrow_import(object keys)

# The position of the first null of an array (-1 when there is none).
cdef int64_t arrow_first_null(ArrowArray *arr) noexcept nogil
