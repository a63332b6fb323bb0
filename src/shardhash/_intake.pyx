# distutils: sources = [src/shardhash/_core/common/sh_pipe.c]
"""The shared key-intake layer (private): keys in bulk.

* :func:`pack_keys` lays keys out as Arrow-style ``(data, offsets)`` (key i
  is ``data[offsets[i]:offsets[i+1]]``) from a list, tuple, numpy array,
  Arrow array (zero-copy for binary/string data) or any iterable.
* ``seq_kernel`` (cimport it from ``_intake.pxd``) runs a C kernel over a
  list, tuple or 1-d numpy array of keys as it reads them, on the calling
  thread or, with helper threads, through the plain-C pipeline
  (``_core/common/sh_pipe.c``).
* ``arrow_import`` (cimport it) reads an object exporting the Arrow C data
  or stream interface (``__arrow_c_array__``, ``__arrow_c_stream__``) as
  its format and chunks, zero-copy over the producer's buffers (the hashing
  core's Arrow path); ``ArrowBuffer`` exposes one of their buffers to NumPy.
* The position finders (``first_not_*``, :func:`find_byte`) and the list
  walk floors of the benchmarks.

The C that reads Python objects in place is ``_core/pyapi/sh_pykeys.h``.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_Check
from cpython.pycapsule cimport PyCapsule_GetPointer
from cpython.ref cimport PyObject
from cpython.unicode cimport PyUnicode_Check
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memchr, memcpy, memset

from shardhash._common cimport address

import numpy as np

from shardhash import _parallel

__all__ = ["pack_keys", "list_walk_floor", "list_walk_floor_refcounted", "first_not_bytes_like",
           "first_not_type", "first_of_type", "first_not_ascii_str", "find_byte"]

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object, Py_ssize_t *) except NULL
    bytes PyUnicode_AsUTF8String(object)

cdef extern from "sh_pipe.h" nogil:
    ctypedef struct sh_pipe:
        pass
    enum:
        SH_PIPE_CHUNK
        SH_PIPE_SLOTS
    sh_pipe *sh_pipe_new(size_t n, void *out, size_t out_size, sh_pipe_kernel fn, const void *ctx, int helpers)
    const uint8_t **sh_pipe_ptrs(sh_pipe *q, size_t slot)
    int64_t *sh_pipe_lens(sh_pipe *q, size_t slot)
    void sh_pipe_slot(sh_pipe *q, size_t c)
    void sh_pipe_publish(sh_pipe *q, size_t c)
    void sh_pipe_finish(sh_pipe *q, int hash_rest)


cdef bytes as_bytes(object k, Py_ssize_t i, object convert, bint raw_bytes=True):
    cdef Py_ssize_t n
    cdef const char *p
    if not raw_bytes and not isinstance(k, str):
        pass
    elif PyBytes_Check(k):
        return <bytes>k
    if isinstance(k, str):
        p = PyUnicode_AsUTF8AndSize(k, &n)
        return p[:n]
    elif raw_bytes and isinstance(k, (bytearray, memoryview)):
        return bytes(k)
    if convert is not None:
        try:
            b = convert(k)
        except (TypeError, ValueError, OverflowError) as e:
            raise type(e)(f"key at position {i}: {e}") from None
        if not PyBytes_Check(b):
            raise TypeError(f"key at position {i}: converter returned {type(b).__name__}, not bytes")
        return <bytes>b
    raise TypeError(f"key at position {i} must be bytes or str, not {type(k).__name__} ({k!r:.60})")


# ============================================================================
# Keys in bulk: Arrow-style (data, offsets)
# ============================================================================

def _arrow_pack(obj, bint as_text=False):
    """(data uint8, offsets int64) of an Arrow binary/string array; None if
    ``obj`` is not Arrow data; a list of Python values when the keys need a
    per-key conversion (non-string types, or binary keys when ``as_text``)."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    if isinstance(obj, pa.ChunkedArray):
        obj = obj.combine_chunks()
    elif not isinstance(obj, pa.Array):
        if hasattr(obj, "__arrow_c_array__"):
            obj = pa.array(obj)
        elif hasattr(obj, "__arrow_c_stream__"):
            obj = pa.chunked_array(obj).combine_chunks()
        else:
            return None
    t = obj.type
    is_view = bool((getattr(pa.types, "is_binary_view", None) and pa.types.is_binary_view(t)) or
                   (getattr(pa.types, "is_string_view", None) and pa.types.is_string_view(t)))
    is_text = pa.types.is_string(t) or pa.types.is_large_string(t) or \
        bool(getattr(pa.types, "is_string_view", None) and pa.types.is_string_view(t))
    is_bin = pa.types.is_binary(t) or pa.types.is_large_binary(t) or is_view
    if obj.null_count:
        first = obj.is_null().index(True).as_py()
        raise ValueError(f"key at position {first} is null")
    if not (is_text or is_bin) or (as_text and not is_text):
        return obj.to_pylist()
    if is_view:
        obj = obj.cast(pa.large_binary())
        t = obj.type
    if obj.null_count:
        first = obj.is_null().index(True).as_py()
        raise ValueError(f"key at position {first} is null")
    n = len(obj)
    bufs = obj.buffers()
    odt = np.int64 if (pa.types.is_large_binary(t) or pa.types.is_large_string(t)) else np.int32
    if n == 0:
        return np.zeros(1, np.uint8), np.zeros(1, np.int64)
    offsets = np.frombuffer(bufs[1], dtype=odt)[obj.offset: obj.offset + n + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None and bufs[2].size else np.zeros(1, np.uint8)
    return data, offsets


def pack_keys(keys, convert=None, bint raw_bytes=True):
    """Lay out keys as Arrow-style ``(data, offsets)``: key i is
    ``data[offsets[i]:offsets[i+1]]``.

    bytes-like keys are taken as they are (with ``raw_bytes=False`` they go
    through ``convert`` too), ``str`` as UTF-8; any other key goes through
    ``convert(key) -> bytes`` or raises TypeError naming its position.  Arrow binary/string arrays (and objects exporting the Arrow
    C interface) are used without copying the data.
    """
    cdef Py_ssize_t i, n, total = 0, pos = 0, m
    cdef int64_t[::1] off
    cdef uint8_t[::1] dat
    cdef list seq
    cdef object k
    cdef const char *p
    cdef dict other = {}
    if isinstance(keys, (bytes, str, bytearray, memoryview)):
        raise TypeError("keys must be a sequence of keys, not a single "
                        f"{type(keys).__name__}")
    if isinstance(keys, np.ndarray):
        if keys.ndim != 1:
            raise ValueError(f"keys must be one-dimensional, got shape {keys.shape}")
        seq = keys.tolist()
    elif isinstance(keys, (list, tuple)):
        # exact bytes (taken as they are) and ASCII str keys: both passes in
        # C, no copy of the list (no key's code runs)
        n = len(keys)
        if raw_bytes and sh_pack_total(PySequence_Fast_ITEMS(keys), n, &total) == n:
            offsets = np.empty(n + 1, dtype=np.int64)
            data = np.empty(max(total, 1), dtype=np.uint8)
            off = offsets
            dat = data
            if n == len(keys) and sh_pack_copy(PySequence_Fast_ITEMS(keys), n, &dat[0], total, &off[0]) == 0:
                return data, offsets
            raise RuntimeError("keys changed while being packed")
        total = 0
        # a private copy: a key's own code (__str__, __bytes__, convert) may
        # change the caller's list while it is being packed
        seq = list(keys)
    else:
        packed = _arrow_pack(keys, not raw_bytes)
        if isinstance(packed, tuple):
            return packed
        seq = packed if packed is not None else list(keys)
    n = len(seq)
    # pass 1: sizes (str keys: their cached UTF-8 form; others converted once)
    for i in range(n):
        k = seq[i]
        if raw_bytes and PyBytes_Check(k):
            total += PyBytes_GET_SIZE(k)
        elif isinstance(k, str):
            PyUnicode_AsUTF8AndSize(k, &m)
            total += m
        else:
            b = as_bytes(k, i, convert, raw_bytes)
            other[i] = b
            total += PyBytes_GET_SIZE(b)
    offsets = np.empty(n + 1, dtype=np.int64)
    data = np.empty(max(total, 1), dtype=np.uint8)
    off = offsets
    dat = data
    off[0] = 0
    # pass 2: copy
    for i in range(n):
        k = seq[i]
        if raw_bytes and PyBytes_Check(k):
            m = PyBytes_GET_SIZE(k)
            p = PyBytes_AS_STRING(k)
        elif isinstance(k, str):
            p = PyUnicode_AsUTF8AndSize(k, &m)
        else:
            k = other[i]
            m = PyBytes_GET_SIZE(k)
            p = PyBytes_AS_STRING(k)
        if pos + m > total:
            raise RuntimeError("keys changed while being packed")
        if m:
            memcpy(&dat[pos], p, m)
        pos += m
        off[i + 1] = pos
    if pos != total:
        raise RuntimeError("keys changed while being packed")
    return data, offsets


# ============================================================================
# Keys read in place from a sequence, on the calling thread or piped
# ============================================================================

cdef enum:
    _SEQ_CHUNK = 256


cdef class _SeqWalk:
    """The walk over a list or tuple that every sequence kernel shares: each
    key's pointer and length, read in place.

    Exact bytes and compact ASCII str keys are read by a C walk
    (``sh_seq_walk``) that runs no Python code.  The walk holds the GIL
    throughout, so nothing but a key's own code (a converter,
    ``bytes(memoryview)``) can change the caller's list or free a key whose
    pointer is pending: before the first such call the walk switches to a
    private copy of the sequence (taken before that code ran, and holding
    every key), and converted keys are kept (in the ``held`` list the caller
    passes) until the kernel has read them.  The kernels may read the 16
    bytes before a key (the header of its bytes or str object): a str whose
    UTF-8 is kept outside it is encoded to a bytes object."""
    cdef object src
    cdef tuple snapshot
    cdef PyObject **items
    cdef Py_ssize_t n
    cdef object convert
    cdef bint raw_bytes

    def __cinit__(self, src, convert, bint raw_bytes):
        self.src = src
        self.n = len(src)
        self.items = PySequence_Fast_ITEMS(src)
        self.convert = convert
        self.raw_bytes = raw_bytes

    cdef int fill(self, Py_ssize_t i, Py_ssize_t stop, const uint8_t **ptrs, int64_t *lens,
                  list held) except -1:
        """Keys [i, stop) into ptrs/lens (stop - i entries)."""
        cdef Py_ssize_t j = 0, m
        cdef object k
        cdef const char *p
        while i < stop:
            # exact bytes / ASCII str keys (no Python code runs: the list is
            # as it was, or its snapshot's)
            m = sh_seq_walk(self.items, i, stop, self.n, &ptrs[j], &lens[j])
            j += m - i
            i = m
            if i == stop:
                break
            # any other key, by the general rules
            k = <object>self.items[i]
            if self.raw_bytes and PyBytes_Check(k):
                p = PyBytes_AS_STRING(k)
                m = PyBytes_GET_SIZE(k)
            else:
                if PyUnicode_Check(k):
                    # a str's cached UTF-8 lies outside it: its UTF-8 as a bytes object
                    k = PyUnicode_AsUTF8String(k)
                else:
                    if self.snapshot is None and isinstance(self.src, list):
                        # the key's own code may run: walk a private copy from here on
                        self.snapshot = tuple(self.src)
                        self.items = PySequence_Fast_ITEMS(self.snapshot)
                    k = as_bytes(k, i, self.convert, self.raw_bytes)
                held.append(k)
                p = PyBytes_AS_STRING(k)
                m = PyBytes_GET_SIZE(k)
            ptrs[j] = <const uint8_t *>p
            lens[j] = m
            j += 1
            i += 1
        return 0


cdef object seq_kernel(object keys, sh_pipe_kernel fn, const void *ctx, object dtype, object convert,
                       bint raw_bytes, object threads, bint pipe_auto):
    """Run ``fn`` over a list, tuple or 1-d numpy array of keys as they are
    read; None for any other input (Arrow data and iterables go through
    :func:`pack_keys`).

    On one thread, every _SEQ_CHUNK keys the kernel runs on them while they
    are still in cache, with the GIL held; no key's bytes are copied.  With
    helper threads (``threads`` > 1; with ``pipe_auto``, ``threads=None``
    picks the number for the input's size), the calling thread walks the
    list and hands each chunk to the pipeline's helpers (sh_pipe.c), holding
    the GIL from the first key read to the last key hashed."""
    cdef Py_ssize_t n, i, base, stop
    cdef int helpers
    if isinstance(keys, np.ndarray):
        if keys.ndim != 1:
            raise ValueError(f"keys must be one-dimensional, got shape {keys.shape}")
        src = keys.tolist()
    elif isinstance(keys, (list, tuple)):
        src = keys
    else:
        return None
    n = len(src)
    helpers = 0
    if threads is not None or pipe_auto:
        helpers = _parallel.resolve_threads(threads, n) - 1  # validates threads
    out = np.empty(n, dtype=dtype)
    cdef _SeqWalk walk = _SeqWalk(src, convert, raw_bytes)
    if helpers > 0:
        return _seq_piped(walk, n, fn, ctx, out, helpers)
    cdef const uint8_t *ptrs[_SEQ_CHUNK]
    cdef int64_t lens[_SEQ_CHUNK]
    cdef list held = []
    cdef char *o = <char *>address(out)
    cdef size_t size = out.itemsize
    base = 0
    while base < n:
        stop = min(n, base + _SEQ_CHUNK)
        walk.fill(base, stop, ptrs, lens, held)
        fn(ctx, ptrs, lens, <size_t>(stop - base), o + <size_t>base * size)
        if held:
            held = []
        base = stop
    return out


cdef object _seq_piped(_SeqWalk walk, Py_ssize_t n, sh_pipe_kernel fn, const void *ctx, object out,
                       int helpers):
    """The piped path of seq_kernel: the walk, one chunk after another into
    the pipe's slots.  Keys converted on the way are kept until their slot
    is reused, the walk's snapshot until every helper is gone."""
    cdef sh_pipe *q
    cdef list conv = [[] for _ in range(SH_PIPE_SLOTS)]
    cdef list held
    cdef size_t c = 0
    cdef Py_ssize_t start
    cdef bint ok = False
    q = sh_pipe_new(<size_t>n, address(out), <size_t>out.itemsize, fn, ctx, helpers)
    if q == NULL:
        raise MemoryError()
    try:
        while <Py_ssize_t>c * SH_PIPE_CHUNK < n:
            sh_pipe_slot(q, c)  # the slot's previous chunk is hashed
            held = <list>conv[c % SH_PIPE_SLOTS]
            if held:
                del held[:]
            start = <Py_ssize_t>c * SH_PIPE_CHUNK
            walk.fill(start, min(n, start + SH_PIPE_CHUNK), sh_pipe_ptrs(q, c), sh_pipe_lens(q, c), held)
            sh_pipe_publish(q, c)
            c += 1
        ok = True
    finally:
        sh_pipe_finish(q, ok)  # every helper gone
    return out


def list_walk_floor(list keys):
    """The floor of any kernel over a Python list of bytes/str keys: the walk
    the list kernels use (``sh_seq_walk``), reading each key's pointer and
    length and nothing else (for the benchmarks).  Returns the total length
    in bytes."""
    cdef Py_ssize_t i = 0, n = len(keys), m, q, total = 0
    cdef PyObject **items = PySequence_Fast_ITEMS(keys)
    cdef const uint8_t *ptrs[_SEQ_CHUNK]
    cdef int64_t lens[_SEQ_CHUNK]
    while i < n:
        m = sh_seq_walk(items, i, min(n, i + _SEQ_CHUNK), n, ptrs, lens)
        if m == i:
            raise TypeError(f"key at position {i} is not bytes or an ASCII str")
        for q in range(m - i):
            total += lens[q]
        i = m
    return total


def list_walk_floor_refcounted(list keys):
    """The plain walk of earlier versions, for comparison: each key taken as
    a Python object (its reference count raised and dropped), its pointer
    and length read."""
    cdef Py_ssize_t i, m, total = 0
    cdef object k
    for i in range(len(keys)):
        k = keys[i]
        if PyBytes_Check(k):
            total += PyBytes_GET_SIZE(k)
        else:
            PyUnicode_AsUTF8AndSize(k, &m)
            total += m
    return total


# ============================================================================
# Arrow arrays and streams (PyCapsule interface): zero-copy over the producer's buffers
# ============================================================================

cdef class ArrowChunk:
    """Owns one imported ArrowArray (released on deallocation)."""

    def __dealloc__(self):
        if self.owned:
            sh_release_array(&self.arr)


cdef inline bint _valid_bit(const uint8_t *bitmap, int64_t i) noexcept nogil:
    return (bitmap[i >> 3] >> (i & 7)) & 1


cdef int64_t arrow_first_null(ArrowArray *arr) noexcept nogil:
    cdef const uint8_t *bitmap
    cdef int64_t i
    if arr.null_count == 0 or arr.n_buffers < 1 or arr.buffers[0] == NULL:
        return -1
    bitmap = <const uint8_t *>arr.buffers[0]
    for i in range(arr.length):
        if not _valid_bit(bitmap, arr.offset + i):
            return i
    return -1


cdef object _arrow_format(ArrowSchema *schema):
    if schema.dictionary != NULL:
        raise TypeError("cannot hash a dictionary-encoded (categorical) Arrow array: decode it first")
    ext = _arrow_extension_name(schema.metadata)
    if ext is not None:
        # An extension type (pandas period/interval, arrow.uuid...) stores its
        # values in a plain array whose numbers are not the value: the scalar
        # path refuses such keys, so the batch path must too.
        raise TypeError(f"cannot hash an Arrow extension array ({ext}): its storage is not the key's "
                        "value; convert the keys to int or str first")
    return (<bytes>schema.format).decode("ascii", "replace")


cdef inline int32_t _meta_i32(const char *p) noexcept:
    cdef int32_t v
    memcpy(&v, p, 4)  # the C data interface writes native-endian int32
    return v


cdef object _arrow_extension_name(const char *meta):
    """The ``ARROW:extension:name`` in a schema's metadata, or None."""
    if meta == NULL:
        return None
    cdef int32_t npairs = _meta_i32(meta), i, klen, vlen
    cdef const char *p = meta + 4
    for i in range(npairs):
        klen = _meta_i32(p)
        p += 4
        key = p[:klen]
        p += klen
        vlen = _meta_i32(p)
        p += 4
        if key == b"ARROW:extension:name":
            return p[:vlen].decode("utf-8", "replace")
        p += vlen
    return None


cdef tuple arrow_import(object keys):
    cdef ArrowSchema *schema
    cdef ArrowArray *carr
    cdef ArrowArrayStream *stream
    cdef ArrowSchema stream_schema
    cdef ArrowChunk chunk
    chunks = []
    if hasattr(keys, "__arrow_c_array__"):
        caps = keys.__arrow_c_array__()
        schema_cap, array_cap = caps
        schema = <ArrowSchema *>PyCapsule_GetPointer(schema_cap, "arrow_schema")
        carr = <ArrowArray *>PyCapsule_GetPointer(array_cap, "arrow_array")
        fmt = _arrow_format(schema)
        # The capsule keeps ownership; we borrow the array while the capsule lives.
        chunk = ArrowChunk()
        chunk.arr = carr[0]
        chunk.owned = False
        chunks.append(chunk)
        keepalive = (schema_cap, array_cap)
    else:
        stream_cap = keys.__arrow_c_stream__()
        stream = <ArrowArrayStream *>PyCapsule_GetPointer(stream_cap, "arrow_array_stream")
        memset(&stream_schema, 0, sizeof(ArrowSchema))
        if sh_stream_get_schema(stream, &stream_schema) != 0:
            raise ValueError(f"Arrow stream error: {(<bytes>sh_stream_error(stream)).decode('utf-8', 'replace')}")
        try:
            fmt = _arrow_format(&stream_schema)
            if fmt == "+s" or fmt.startswith("+"):
                raise TypeError(f"cannot hash a nested Arrow type (format {fmt!r}); pass one column")
            while True:
                chunk = ArrowChunk()
                memset(&chunk.arr, 0, sizeof(ArrowArray))
                if sh_stream_get_next(stream, &chunk.arr) != 0:
                    raise ValueError(f"Arrow stream error: "
                                     f"{(<bytes>sh_stream_error(stream)).decode('utf-8', 'replace')}")
                if chunk.arr.release == NULL:
                    break
                chunk.owned = True
                chunks.append(chunk)
        finally:
            sh_release_schema(&stream_schema)
        keepalive = stream_cap
    return fmt, chunks, keepalive


cdef class ArrowBuffer:
    """Buffer-protocol wrapper over an Arrow buffer (keeps the chunk alive)."""

    def __cinit__(self, ArrowChunk chunk, size_t ptr, Py_ssize_t size):
        self.chunk = chunk
        self.ptr = <const void *>ptr
        self.size = size

    def __getbuffer__(self, Py_buffer *buf, int flags):
        self.shape[0] = self.size
        buf.buf = <void *>self.ptr
        buf.obj = self
        buf.len = self.size
        buf.readonly = 1
        buf.itemsize = 1
        buf.format = NULL
        buf.ndim = 1
        buf.shape = self.shape
        buf.strides = NULL
        buf.suboffsets = NULL
        buf.internal = NULL

    def __releasebuffer__(self, Py_buffer *buf):
        pass


# ============================================================================
# Positions in a list of keys, a byte in a buffer
# ============================================================================

cdef Py_ssize_t _first_failing(object keys, int test, object tp) except -2:
    """The position of the first key of a list or tuple that fails the test
    of sh_first_failing; -1 when every key passes."""
    if not isinstance(keys, (list, tuple)):
        raise TypeError(f"keys must be a list or tuple, not {type(keys).__name__}")
    cdef Py_ssize_t n = len(keys)
    cdef Py_ssize_t i = sh_first_failing(PySequence_Fast_ITEMS(keys), n, test, <PyObject *>tp)
    return -1 if i == n else i


def first_not_bytes_like(keys):
    """The position of the first key of a list or tuple that is not bytes,
    bytearray or memoryview (subclasses included); -1 when every key is.
    A C loop that runs no Python code (for the routers that take only
    serialized keys)."""
    return _first_failing(keys, 0, None)


def first_not_type(keys, type tp):
    """The position of the first key of a list or tuple whose type is not
    exactly ``tp``; -1 when every key's is.  A C loop that runs no Python
    code."""
    return _first_failing(keys, 1, tp)


def first_of_type(keys, type tp):
    """The position of the first key of a list or tuple whose type is
    exactly ``tp`` (``type(None)``: the first None); -1 when there is none."""
    return _first_failing(keys, 2, tp)


def first_not_ascii_str(keys):
    """The position of the first key of a list or tuple that is not an
    exact str of ASCII characters only; -1 when every key is one."""
    return _first_failing(keys, 3, None)


def find_byte(const uint8_t[::1] data not None, int byte=0):
    """The position of the first byte of ``data`` equal to ``byte`` (0 ..
    255); -1 when there is none (memchr)."""
    if not 0 <= byte <= 255:
        raise ValueError(f"byte must be 0 .. 255, got {byte}")
    if data.shape[0] == 0:
        return -1
    cdef const void *p = memchr(&data[0], byte, <size_t>data.shape[0])
    return -1 if p == NULL else <Py_ssize_t>(<const uint8_t *>p - &data[0])
