# distutils: sources = [src/shardhash/_core/hash/sh_batch.c, src/shardhash/_core/hash/sh_xxhash.c, src/shardhash/_core/hash/sh_murmur3.c, src/shardhash/_core/hash/sh_fnv.c]
"""Compiled hashing core: scalar and batch hashing, the Hasher spec object.

Private module; the public API is :mod:`shardhash.hashing`.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_Check
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM
from cpython.ref cimport PyObject
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, calloc
from libc.string cimport memcpy, memset

import json

import numpy as np

from shardhash._codec import KeyCodec, INT_MIN, INT_MAX
from shardhash._common cimport (sh_job, run, check_out, address, SH_OK, SH_NOMEM)
from shardhash._npy cimport (import_numpy, is_ndarray_exact, new_array, array_data, int_array, NP_UINT64,
                             NP_UNSIGNED)
from shardhash._parallel import resolve_threads

import_numpy()

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object, Py_ssize_t *) except NULL
    int PyUnicode_KIND(object)
    int PyUnicode_4BYTE_KIND
    void *PyUnicode_DATA(object)
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    long long PyLong_AsLongLongAndOverflow(object, int *) except? -1
    unsigned long long PyLong_AsUnsignedLongLong(object)
    PyObject *PyErr_Occurred()
    void PyErr_Clear()

cdef extern from "sh_hash.h" nogil:
    uint32_t sh_xxh32(const void *data, size_t len, uint32_t seed)
    uint64_t sh_xxh64(const void *data, size_t len, uint64_t seed)
    uint64_t sh_xxh3_64(const void *data, size_t len, uint64_t seed)
    uint32_t sh_murmur3_32(const void *data, size_t len, uint32_t seed)
    void sh_murmur3_128(const void *data, size_t len, uint32_t seed, uint64_t *out)
    uint32_t sh_fnv1a_32(const void *data, size_t len)
    uint64_t sh_fnv1a_64(const void *data, size_t len)
    uint64_t sh_hash64(int algo, const void *data, size_t len, uint64_t seed)

cdef extern from "sh_xxhash.h" nogil:
    uint64_t sh_xxh3_64_word(uint64_t v, uint64_t seed)
    uint64_t sh_xxh64_word(uint64_t v, uint64_t seed)
    uint32_t sh_xxh32_word(uint64_t v, uint32_t seed)

cdef extern from "sh_murmur3.h" nogil:
    uint32_t sh_murmur3_32_word(uint64_t v, uint32_t seed)
    uint64_t sh_murmur3_128_word_h1(uint64_t v, uint32_t seed)

cdef extern from "sh_fnv.h" nogil:
    uint32_t sh_fnv1a_32_word(uint64_t v)
    uint64_t sh_fnv1a_64_word(uint64_t v)

cdef extern from "sh_batch.h" nogil:
    void sh_hash_words(int algo, uint64_t seed, const uint64_t *words, size_t n, uint64_t *out)
    void sh_hash_words_strided(int algo, uint64_t seed, const char *base, ptrdiff_t stride,
                               size_t n, uint64_t *out)
    void sh_hash_decimal_strided(int algo, uint64_t seed, const char *base, ptrdiff_t stride,
                                 size_t n, int is_unsigned, uint64_t *out)
    size_t sh_format_decimal(uint64_t v, int is_unsigned, char *buf)
    void sh_hash_offsets32(int algo, uint64_t seed, const uint8_t *data, const int32_t *offsets,
                           size_t n, uint64_t *out)
    void sh_hash_offsets64(int algo, uint64_t seed, const uint8_t *data, const int64_t *offsets,
                           size_t n, uint64_t *out)
    ptrdiff_t sh_hash_views(int algo, uint64_t seed, const uint8_t *views, const uint8_t *const *buffers,
                            const int64_t *buffer_sizes, size_t n_buffers, size_t n, uint64_t *out)
    void sh_hash_fixed_bytes(int algo, uint64_t seed, const char *base, size_t itemsize,
                             ptrdiff_t stride, size_t n, uint64_t *out)
    ptrdiff_t sh_hash_ucs4(int algo, uint64_t seed, const char *base, size_t nchars, ptrdiff_t stride,
                           size_t n, uint8_t *scratch, uint64_t *out)

from shardhash._intake cimport ArrowArray, ArrowChunk, ArrowBuffer, arrow_import, arrow_first_null


__all__ = ["ALGORITHMS", "HASHER_FORMAT", "Hasher", "check_algorithm", "check_seed", "check_code_points",
           "hash_bytes", "hash_key", "hash_array"]

ALGORITHMS = ("xxh3_64", "xxh64", "xxh32", "murmur3_32", "murmur3_128", "fnv1a_32", "fnv1a_64")
# Width of each algorithm's natural output and of the seed it takes (0 = unseeded).
_OUT_BITS = {"xxh3_64": 64, "xxh64": 64, "xxh32": 32, "murmur3_32": 32, "murmur3_128": 128,
             "fnv1a_32": 32, "fnv1a_64": 64}
_SEED_BITS = {"xxh3_64": 64, "xxh64": 64, "xxh32": 32, "murmur3_32": 32, "murmur3_128": 32,
              "fnv1a_32": 0, "fnv1a_64": 0}
HASHER_FORMAT = "shardhash.hasher/1"
_HASHER_FIELDS = ("format", "algorithm", "seed", "codec")

cdef enum:
    A_XXH3_64 = 0
    A_XXH64 = 1
    A_XXH32 = 2
    A_MURMUR3_32 = 3
    A_MURMUR3_128 = 4
    A_FNV1A_32 = 5
    A_FNV1A_64 = 6

cdef uint64_t _I64_MIN_MAG = 1ULL << 63


def check_algorithm(algorithm):
    """Validate an algorithm name; return its index in ALGORITHMS."""
    if not isinstance(algorithm, str):
        raise TypeError(f"algorithm must be a str, one of {ALGORITHMS}, not {type(algorithm).__name__}")
    try:
        return ALGORITHMS.index(algorithm)
    except ValueError:
        raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {', '.join(ALGORITHMS)}") from None


def check_seed(algorithm, seed):
    """Validate a seed for an algorithm; return it as a Python int."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        if hasattr(seed, "__index__") and not isinstance(seed, (bool, float)) and type(seed).__name__ != "bool_":
            seed = seed.__index__()
        else:
            raise TypeError(f"seed must be an int, not {type(seed).__name__}")
    seed = int(seed)
    bits = _SEED_BITS[algorithm]
    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    if bits == 0:
        if seed != 0:
            raise ValueError(f"{algorithm} takes no seed; seed must be 0, got {seed}")
    elif seed >> bits:
        raise OverflowError(f"seed {seed} does not fit the {bits}-bit seed of {algorithm} "
                            f"(must be < 2**{bits})")
    return seed


cdef inline uint64_t _hash_word(int algo, uint64_t v, uint64_t seed) noexcept nogil:
    if algo == A_XXH3_64:
        return sh_xxh3_64_word(v, seed)
    elif algo == A_XXH64:
        return sh_xxh64_word(v, seed)
    elif algo == A_XXH32:
        return sh_xxh32_word(v, <uint32_t>seed)
    elif algo == A_MURMUR3_32:
        return sh_murmur3_32_word(v, <uint32_t>seed)
    elif algo == A_MURMUR3_128:
        return sh_murmur3_128_word_h1(v, <uint32_t>seed)
    elif algo == A_FNV1A_32:
        return sh_fnv1a_32_word(v)
    else:
        return sh_fnv1a_64_word(v)


cdef int _check_code_points(object s) except -1:
    """Reject str objects holding values beyond U+10FFFF (numpy can make them)."""
    cdef const uint32_t *d = <const uint32_t *>PyUnicode_DATA(s)
    cdef Py_ssize_t i, n = PyUnicode_GET_LENGTH(s)
    for i in range(n):
        if d[i] > 0x10FFFF:
            raise ValueError(f"string key holds code point {d[i]:#x} at index {i}, which is beyond "
                             "U+10FFFF and cannot be UTF-8 encoded")
    return 0


def check_code_points(s):
    """Raise ValueError if the str holds a value beyond U+10FFFF (numpy can build such)."""
    if PyUnicode_KIND(s) == PyUnicode_4BYTE_KIND:
        _check_code_points(s)


cdef inline int _int_to_word(object key, uint64_t *word) except -1:
    """Python int (exactly int) -> 64-bit pattern; OverflowError out of range."""
    cdef int overflow = 0
    cdef long long s = PyLong_AsLongLongAndOverflow(key, &overflow)
    cdef unsigned long long u
    if overflow == 0:
        word[0] = <uint64_t>s  # errors (-1 with an exception set) propagate via `except? -1`
        return 0
    if overflow > 0:
        u = PyLong_AsUnsignedLongLong(key)  # 2**63 .. 2**64-1, else OverflowError below
        if u == <unsigned long long>-1 and PyErr_Occurred() != NULL:
            PyErr_Clear()
        else:
            word[0] = <uint64_t>u
            return 0
    raise OverflowError(f"integer key {key} is out of range: keys must lie in [-2**63, 2**64-1]")


def hash_bytes(data, algorithm="xxh3_64", seed=0):
    """Hash a bytes-like object; return the algorithm's natural-width unsigned value.

    The buffer must be C-contiguous (pass ``bytes(view)`` for a strided one).

    >>> hash_bytes(b"abc", "xxh64")
    4952883123889572249
    """
    cdef int algo = check_algorithm(algorithm)
    seed = check_seed(algorithm, seed)
    if isinstance(data, str):
        raise TypeError("hash_bytes() needs bytes-like data, not str (encode it, or use hash_key)")
    cdef const uint8_t[::1] view
    if isinstance(data, bytes):
        view = data
    else:
        try:
            mv = memoryview(data)
        except TypeError:
            raise TypeError(f"hash_bytes() needs a bytes-like object, not {type(data).__name__}") from None
        if not mv.c_contiguous:
            raise TypeError(f"hash_bytes() needs a C-contiguous buffer; this {type(data).__name__} is "
                            "strided (pass bytes(memoryview(data)) to hash the bytes it presents)")
        try:
            view = mv.cast("B")
        except TypeError:
            raise TypeError(f"hash_bytes() needs a bytes-like object, not {type(data).__name__}") from None
    cdef uint64_t s = <uint64_t>seed
    cdef size_t n = view.shape[0]
    cdef const uint8_t *p = &view[0] if n > 0 else <const uint8_t *>b""
    cdef uint64_t h2[2]
    if algo == A_MURMUR3_128:
        sh_murmur3_128(p, n, <uint32_t>s, h2)
        return (<object>h2[1] << 64) | <object>h2[0]
    return sh_hash64(algo, p, n, s)


cdef class Hasher:
    """A frozen hashing spec: algorithm, seed and key codec.

    ``hasher(key)`` hashes one key, ``hasher.hash_array(keys)`` many; both
    give the algorithm's value widened to 64 bits (32-bit algorithms
    zero-extended, ``murmur3_128`` its first 64-bit word h1).

    >>> h = Hasher("xxh3_64", seed=7)
    >>> h(42) == int(h.hash_array([42])[0])
    True
    >>> Hasher.from_dict(h.to_dict()) == h
    True
    """

    def __cinit__(self, algorithm="xxh3_64", seed=0, codec=None):
        self._algo = check_algorithm(algorithm)
        self.algorithm = algorithm
        self.seed = check_seed(algorithm, seed)
        self._seed = <uint64_t>self.seed
        if codec is None:
            codec = KeyCodec()
        elif not isinstance(codec, KeyCodec):
            raise TypeError(f"codec must be a shardhash.KeyCodec or None, not {type(codec).__name__}")
        self.codec = codec
        self._fast_int = codec.int_encoding == "le64"
        self._fast_str = codec.plain_strings
        self._doc_cache = None

    # -- scalar ---------------------------------------------------------------
    cdef uint64_t hash_one(self, object key) except? 0:
        cdef uint64_t word
        cdef Py_ssize_t n
        cdef const char *p
        cdef type t = type(key)
        if t is int and self._fast_int:
            _int_to_word(key, &word)
            return _hash_word(self._algo, word, self._seed)
        if t is str and self._fast_str:
            if PyUnicode_KIND(key) == PyUnicode_4BYTE_KIND:
                _check_code_points(key)
            try:
                p = PyUnicode_AsUTF8AndSize(key, &n)
            except UnicodeEncodeError:
                self.codec.encode(key)  # raises the codec's ValueError
                raise
            return sh_hash64(self._algo, p, <size_t>n, self._seed)
        if t is bytes:
            return sh_hash64(self._algo, PyBytes_AS_STRING(key), <size_t>PyBytes_GET_SIZE(key), self._seed)
        data = self.codec.encode(key)
        return sh_hash64(self._algo, PyBytes_AS_STRING(data), <size_t>PyBytes_GET_SIZE(data), self._seed)

    def __call__(self, key):
        """Hash one key (int, str, bytes, uuid.UUID or a tuple of those)."""
        return self.hash_one(key)

    def encode(self, key):
        """The bytes this hasher hashes for ``key`` (the codec's encoding)."""
        return self.codec.encode(key)

    # -- batch ----------------------------------------------------------------
    def hash_array(self, keys, out=None, threads=None):
        """Hash many keys into a uint64 array (see :func:`shardhash.hash_array`)."""
        return _hash_array(self, keys, out, threads)

    # -- documents, equality ----------------------------------------------------
    def to_dict(self):
        """The canonical document of this hashing spec."""
        return {"format": HASHER_FORMAT, "algorithm": self.algorithm, "seed": self.seed,
                "codec": self.codec.to_dict()}

    @classmethod
    def from_dict(cls, doc):
        """Rebuild a Hasher from :meth:`to_dict` output (strict about fields)."""
        if not isinstance(doc, dict):
            raise TypeError(f"a hasher document must be a dict, got {type(doc).__name__}")
        unknown = sorted(set(doc) - set(_HASHER_FIELDS), key=str)
        if unknown:
            raise ValueError(f"unknown field(s) in hasher document: {', '.join(map(str, unknown))}")
        if doc.get("format") != HASHER_FORMAT:
            raise ValueError(f"hasher document format must be {HASHER_FORMAT!r}, got {doc.get('format')!r}")
        missing = [f for f in _HASHER_FIELDS if f not in doc]
        if missing:
            raise ValueError(f"hasher document is missing field(s): {', '.join(missing)}")
        if isinstance(doc["seed"], bool) or not isinstance(doc["seed"], int):
            raise TypeError(f"hasher document seed must be an int, got {doc['seed']!r}")
        return cls(doc["algorithm"], doc["seed"], KeyCodec.from_dict(doc["codec"]))

    def to_json(self):
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    def __eq__(self, other):
        if not isinstance(other, Hasher):
            return NotImplemented
        cdef Hasher o = <Hasher>other
        return self.algorithm == o.algorithm and self.seed == o.seed and self.codec == o.codec

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return hash((self.algorithm, self.seed, self.codec))

    def __repr__(self):
        parts = [repr(self.algorithm)]
        if self.seed:
            parts.append(f"seed={self.seed}")
        if self.codec != KeyCodec():
            parts.append(f"codec={self.codec!r}")
        return f"Hasher({', '.join(parts)})"

    def __reduce__(self):
        return (Hasher, (self.algorithm, self.seed, self.codec))

    def __setattr__(self, name, value):
        raise AttributeError("Hasher objects are immutable")


def hash_key(key, algorithm="xxh3_64", seed=0, codec=None):
    """Hash one key with a one-off hashing spec (see :class:`Hasher`).

    >>> hash_key(42) == hash_key(42, "xxh3_64", 0)
    True
    """
    return (<Hasher>Hasher(algorithm, seed, codec)).hash_one(key)


def hash_array(keys, algorithm="xxh3_64", seed=0, codec=None, out=None, threads=None):
    """Hash many keys into a ``uint64`` array (see :meth:`Hasher.hash_array`)."""
    return _hash_array(Hasher(algorithm, seed, codec), keys, out, threads)


# ---------------------------------------------------------------------------
# Batch dispatch

cdef object _DT_UINT64 = np.dtype(np.uint64)


cdef inline object _prepare_out(object out, Py_ssize_t n):
    return check_out(out, n, _DT_UINT64)


cdef enum:
    SMALL_ARRAY = 4096   # int64/uint64 arrays up to this size: one kernel call, no thread pool

cdef object _hash_small_words(Hasher h, object a):
    """hash_array of a native-order numpy int64/uint64 array of at most
    SMALL_ARRAY keys (no out=, no threads=): one call of the same kernel as
    the general path, on the calling thread, the input read and the result
    made through NumPy's C API; None for any other input."""
    cdef const char *p
    cdef Py_ssize_t n, stride
    cdef uint64_t *o
    cdef int code = int_array(a, &p, &n, &stride)
    if code & ~NP_UNSIGNED != 8 or n > SMALL_ARRAY:
        return None
    res = new_array(n, NP_UINT64)
    if n:
        o = <uint64_t *>array_data(res)
        if h._fast_int:
            sh_hash_words_strided(h._algo, h._seed, p, stride, n, o)
        else:
            sh_hash_decimal_strided(h._algo, h._seed, p, stride, n, (code & NP_UNSIGNED) != 0, o)
    return res


cdef object _hash_array(Hasher h, object keys, object out, object threads):
    cdef object res
    cdef type t = type(keys)
    if threads is None:
        if t is list or t is tuple:  # before the generic checks below: they cost a small batch more than its keys
            return _hash_objects(h, keys, out)
        if out is None and is_ndarray_exact(keys):
            res = _hash_small_words(h, keys)
            if res is not None:
                return res
    if threads is not None:
        resolve_threads(threads, 1)  # validate early
    if isinstance(keys, np.ma.MaskedArray):
        # A masked entry has no key (its data slot is arbitrary): refuse
        # rather than hash whatever the slot holds.
        m = np.ma.getmaskarray(keys)
        if m.any():
            raise ValueError(f"keys has masked (missing) entries, the first at position "
                             f"{int(np.flatnonzero(m.ravel())[0])}; fill or drop them first")
        keys = np.asarray(keys.data)
    if isinstance(keys, np.ndarray):
        return _hash_ndarray(h, keys, out, threads)
    if isinstance(keys, (str, bytes, bytearray)):
        raise TypeError(f"hash_array() needs a sequence of keys, not a single {type(keys).__name__} "
                        "(use hash_key for one key)")
    if isinstance(keys, (list, tuple)):
        return _hash_objects(h, keys, out)
    mod = type(keys).__module__ or ""
    if mod.startswith("pandas"):
        return _hash_pandas(h, keys, out, threads)
    if hasattr(keys, "__arrow_c_array__") or hasattr(keys, "__arrow_c_stream__"):
        return _hash_arrow(h, keys, out, threads)
    if hasattr(keys, "__array__") and not hasattr(keys, "__iter__"):
        return _hash_ndarray(h, np.asarray(keys), out, threads)
    if hasattr(keys, "__iter__"):
        return _hash_objects(h, list(keys), out)
    raise TypeError(f"hash_array() cannot hash keys of type {type(keys).__name__}")


cdef object _hash_pandas(Hasher h, object keys, object out, object threads):
    if type(keys).__name__ == "DataFrame":
        raise ValueError("hash_array() needs one column of keys, not a DataFrame")
    dtype = getattr(keys, "dtype", None)
    if not isinstance(dtype, np.dtype) and hasattr(keys, "__arrow_c_stream__"):
        # Extension dtypes (pandas' str / string[pyarrow] / int64[pyarrow] / Int64):
        # export through Arrow instead of materialising Python objects.
        try:
            return _hash_arrow(h, keys, out, threads)
        except (ImportError, NotImplementedError):
            pass
        except Exception as exc:
            # pandas could not export these values to Arrow (a sparse array,
            # say): take them as objects below, as the scalar path would
            if not type(exc).__module__.startswith("pyarrow"):
                raise
    if not isinstance(dtype, np.dtype):
        # No Arrow export: take the values as objects so missing values stay
        # visible (<NA> is rejected with its position) instead of becoming NaN.
        return _hash_objects(h, keys.to_numpy(dtype=object), out)
    values = keys.to_numpy()
    return _hash_ndarray(h, values, out, threads)


cdef object _hash_objects(Hasher h, object seq, object out):
    """Python objects: hashed one by one with the GIL (scalar rules)."""
    cdef Py_ssize_t n = len(seq)
    out = _prepare_out(out, n)
    if n == 0:
        return out
    cdef uint64_t *o = <uint64_t *>array_data(out)  # a C-contiguous, writeable uint64 array (_prepare_out)
    cdef Py_ssize_t i = 0
    cdef Py_ssize_t stride
    cdef const char *base
    cdef PyObject *item
    try:
        if type(seq) is list:
            for i in range(n):
                if i >= PyList_GET_SIZE(seq):  # a key's own code shrank the list
                    raise ValueError("the list of keys changed size while it was being hashed")
                o[i] = h.hash_one(<object>PyList_GET_ITEM(seq, i))
        elif type(seq) is tuple:
            for i in range(n):
                o[i] = h.hash_one(<object>PyTuple_GET_ITEM(seq, i))
        elif isinstance(seq, np.ndarray) and seq.dtype.kind == "O":
            base = <const char *>_addr(seq)
            stride = seq.strides[0]
            for i in range(n):
                item = (<PyObject **>(base + i * stride))[0]
                if item == NULL:
                    raise TypeError("cannot use None as a key")
                o[i] = h.hash_one(<object>item)
        else:
            for i in range(n):
                o[i] = h.hash_one(seq[i])
    except (TypeError, ValueError, OverflowError) as exc:
        raise _base_error(exc)(f"key at position {i}: {exc}") from None
    return out


cdef object _base_error(object exc):
    for cls in (OverflowError, TypeError, ValueError):
        if isinstance(exc, cls):
            return cls
    return ValueError


cdef object _hash_ndarray(Hasher h, object a, object out, object threads):
    if a.ndim != 1:
        raise ValueError(f"keys must be a 1-dimensional array, got {a.ndim} dimensions")
    if out is not None and isinstance(out, np.ndarray) and np.may_share_memory(out, a):
        # Hashing in place element for element is safe (each key is read
        # before its slot is written); any other overlap would overwrite
        # keys before they are read, so hash a copy.
        if not (a.dtype.kind in "iu" and a.dtype.itemsize == 8
                and a.strides == out.strides
                and a.__array_interface__["data"][0] == out.__array_interface__["data"][0]):
            a = a.copy()
    if not a.flags.aligned:
        # items off their alignment (np.frombuffer at an odd offset): the
        # kernels' typed loads from them are undefined behaviour in C
        a = a.copy()
    kind = a.dtype.kind
    if a.shape[0] == 0 and kind not in "iuSUOT":
        return _prepare_out(out, 0)  # no keys, whatever np.array([]) chose as dtype
    cdef Py_ssize_t n = a.shape[0]
    if kind in "iu":
        if not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        out = _prepare_out(out, n)
        if a.dtype.itemsize == 8:
            _hash_int64_strided(h, a, out, threads, kind == "u")
        else:
            # Narrow integers: widen in chunks (no full-size temporary).
            _hash_narrow_ints(h, a, out, threads)
        return out
    if kind == "S":
        out = _prepare_out(out, n)
        _hash_fixed_bytes(h, a, out, threads)
        return out
    if kind == "U":
        if not h._fast_str:
            if n and a.dtype.itemsize:
                codes = np.ascontiguousarray(a).view(np.dtype(a.dtype.byteorder.replace("|", "=") + "u4"))
                bad = np.flatnonzero((codes.reshape(n, -1) > 0x10FFFF).any(axis=1))
                if bad.size:
                    raise ValueError(f"key at position {bad[0]}: the string holds a code point beyond "
                                     "U+10FFFF, which cannot be UTF-8 encoded")
            return _hash_objects(h, a.tolist(), out)
        if not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        out = _prepare_out(out, n)
        _hash_ucs4(h, a, out, threads)
        return out
    if kind == "O":
        return _hash_objects(h, a, out)
    if kind == "T":  # numpy >= 2 StringDType
        return _hash_objects(h, a.astype(object), out)
    if kind == "b":
        raise TypeError("cannot hash a boolean array: booleans are not keys")
    if kind in "fc":
        raise TypeError(f"cannot hash a {a.dtype} array: floating-point and complex values are not keys "
                        "(convert them to integers or strings explicitly)")
    if kind in "mM":
        raise TypeError(f"cannot hash a {a.dtype} array directly; hash its integer view "
                        "(arr.view('int64')) or its string form")
    raise TypeError(f"cannot hash an array of dtype {a.dtype}")


cdef inline size_t _addr(object a):
    """Address of a numpy array's first element (the caller keeps ``a`` alive)."""
    return <size_t>address(a)


# -- kernels run by shardhash._common.run (keys [s, e) of the job) -----------
# job.algo/seed: the hasher; job.data + i * job.stride: key i.

cdef ptrdiff_t _k_words(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    """8-byte integer keys; flag: hash their decimal text; variant: unsigned."""
    cdef const char *p = <const char *>j.data + s * j.stride
    if j.flag:
        sh_hash_decimal_strided(j.algo, j.seed, p, j.stride, <size_t>(e - s), j.variant,
                                <uint64_t *>j.out + s)
    else:
        sh_hash_words_strided(j.algo, j.seed, p, j.stride, <size_t>(e - s), <uint64_t *>j.out + s)
    return SH_OK


cdef enum:
    WIDEN_BLOCK = 512   # narrow integers widened per block (stack buffer)


cdef ptrdiff_t _k_narrow(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    """1-, 2- or 4-byte integer keys (job.width) widened to 64 bits by value
    (-1 stays -1); flag: decimal text; variant: unsigned."""
    cdef uint64_t buf[WIDEN_BLOCK]
    cdef Py_ssize_t i = s, k, m
    cdef const char *p
    cdef int8_t v8
    cdef int16_t v16
    cdef int32_t v32
    while i < e:
        m = e - i
        if m > WIDEN_BLOCK:
            m = WIDEN_BLOCK
        p = <const char *>j.data + i * j.stride
        for k in range(m):
            if j.width == 1:
                memcpy(&v8, p + k * j.stride, 1)
                buf[k] = <uint64_t><uint8_t>v8 if j.variant else <uint64_t><int64_t>v8
            elif j.width == 2:
                memcpy(&v16, p + k * j.stride, 2)
                buf[k] = <uint64_t><uint16_t>v16 if j.variant else <uint64_t><int64_t>v16
            else:
                memcpy(&v32, p + k * j.stride, 4)
                buf[k] = <uint64_t><uint32_t>v32 if j.variant else <uint64_t><int64_t>v32
        if j.flag:
            sh_hash_decimal_strided(j.algo, j.seed, <const char *>buf, 8, <size_t>m, j.variant,
                                    <uint64_t *>j.out + i)
        else:
            sh_hash_words(j.algo, j.seed, buf, <size_t>m, <uint64_t *>j.out + i)
        i += m
    return SH_OK


cdef ptrdiff_t _k_fixed_bytes(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    """numpy bytes_ keys of job.width bytes (trailing NULs are padding)."""
    sh_hash_fixed_bytes(j.algo, j.seed, <const char *>j.data + s * j.stride, j.width, j.stride,
                        <size_t>(e - s), <uint64_t *>j.out + s)
    return SH_OK


cdef ptrdiff_t _k_ucs4(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    """numpy str_ keys of job.width UCS-4 characters, UTF-8 encoded per key."""
    cdef ptrdiff_t bad
    cdef uint8_t *scratch = <uint8_t *>malloc(4 * j.width + 1)
    if scratch == NULL:
        return SH_NOMEM
    bad = sh_hash_ucs4(j.algo, j.seed, <const char *>j.data + s * j.stride, j.width, j.stride,
                       <size_t>(e - s), scratch, <uint64_t *>j.out + s)
    free(scratch)
    return s + bad if bad >= 0 else SH_OK


cdef ptrdiff_t _k_offsets(const sh_job *j, Py_ssize_t c, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    """Arrow (data, offsets) keys; variant: 64-bit offsets, else 32-bit."""
    if j.variant:
        sh_hash_offsets64(j.algo, j.seed, <const uint8_t *>j.data, <const int64_t *>j.offsets + s,
                          <size_t>(e - s), <uint64_t *>j.out + s)
    else:
        sh_hash_offsets32(j.algo, j.seed, <const uint8_t *>j.data, <const int32_t *>j.offsets + s,
                          <size_t>(e - s), <uint64_t *>j.out + s)
    return SH_OK


cdef inline void _job_of(Hasher h, sh_job *job, object out, Py_ssize_t pos=0):
    memset(job, 0, sizeof(sh_job))
    job.algo = h._algo
    job.seed = h._seed
    job.flag = not h._fast_int
    job.out = <uint64_t *>address(out) + pos


cdef inline bint _job_over(Hasher h, sh_job *job, object a, object out):
    """The job over the keys of the 1-D numpy array ``a`` (any stride; may be
    negative: the kernels take signed strides); False when there are none."""
    if a.shape[0] == 0:
        return False
    _job_of(h, job, out)
    job.data = <const void *>_addr(a)
    job.stride = a.strides[0]
    job.width = a.dtype.itemsize
    return True


cdef _hash_int64_strided(Hasher h, object a, object out, object threads, bint is_unsigned):
    cdef sh_job job
    if _job_over(h, &job, a, out):
        job.variant = is_unsigned
        run(_k_words, &job, a.shape[0], threads)


cdef _hash_narrow_ints(Hasher h, object a, object out, object threads):
    cdef sh_job job
    if _job_over(h, &job, a, out):
        job.variant = a.dtype.kind == "u"
        run(_k_narrow, &job, a.shape[0], threads)


cdef _hash_fixed_bytes(Hasher h, object a, object out, object threads):
    cdef sh_job job
    if _job_over(h, &job, a, out):
        run(_k_fixed_bytes, &job, a.shape[0], threads)


cdef _hash_ucs4(Hasher h, object a, object out, object threads):
    cdef sh_job job
    cdef ptrdiff_t bad
    if not _job_over(h, &job, a, out):
        return
    job.width = a.dtype.itemsize // 4   # characters
    bad = run(_k_ucs4, &job, a.shape[0], threads)
    if bad >= 0:
        raw = np.frombuffer(a[bad:bad + 1].tobytes(), dtype=np.uint32)
        cps = [int(c) for c in raw if c > 0x10FFFF or 0xD800 <= c <= 0xDFFF]
        raise ValueError(f"key at position {bad}: the string holds code point "
                         f"{cps[0]:#x}, which is not a Unicode scalar value (a surrogate or beyond "
                         "U+10FFFF), so it cannot be UTF-8 encoded")


# ---------------------------------------------------------------------------
# Arrow (PyCapsule interface): zero-copy over the producer's buffers.

_ARROW_INT_FORMATS = {"l": (8, True), "L": (8, False), "i": (4, True), "I": (4, False),
                      "s": (2, True), "S": (2, False), "c": (1, True), "C": (1, False)}
_ARROW_VAR_FORMATS = {"u": 32, "z": 32, "U": 64, "Z": 64}
_ARROW_VIEW_FORMATS = ("vu", "vz")


cdef object _hash_arrow(Hasher h, object keys, object out, object threads):
    cdef ArrowChunk chunk
    fmt, chunks, keepalive = arrow_import(keys)
    if fmt.startswith("+"):
        raise TypeError(f"cannot hash a nested Arrow type (format {fmt!r}); pass one column")
    if fmt not in _ARROW_INT_FORMATS and fmt not in _ARROW_VAR_FORMATS and fmt not in _ARROW_VIEW_FORMATS:
        if fmt in ("f", "g", "e"):
            raise TypeError(f"cannot hash an Arrow floating-point array (format {fmt!r}): floats are not keys")
        if fmt == "b":
            raise TypeError("cannot hash an Arrow boolean array: booleans are not keys")
        if fmt == "n":
            raise ValueError("cannot hash an Arrow null array: every key is null")
        raise TypeError(f"cannot hash an Arrow array of format {fmt!r}; supported: int8-64, uint8-64, "
                        "string, large_string, binary, large_binary, string_view, binary_view")
    is_str = fmt in ("u", "U", "vu")
    cdef int64_t total = 0, pos = 0, bad
    for c in chunks:
        chunk = <ArrowChunk>c
        bad = arrow_first_null(&chunk.arr)
        if bad >= 0:
            raise ValueError(f"key at position {total + bad} is null: nulls cannot be hashed")
        total += chunk.arr.length
    out = _prepare_out(out, total)
    final = None
    if total and _arrow_overlaps(chunks, fmt, out):
        # out= lies over the keys' own buffers (a zero-copy view): hash into a
        # fresh array so no key is overwritten before it is read.
        final, out = out, np.empty(total, dtype=np.uint64)
    for c in chunks:
        chunk = <ArrowChunk>c
        if is_str and not h._fast_str:
            # The codec transforms strings (normalise / casefold / strip): decode
            # each value and take the scalar path.
            _hash_objects(h, _arrow_chunk_strings(chunk, fmt), out[pos:pos + chunk.arr.length])
        else:
            _hash_arrow_chunk(h, fmt, chunk, out, pos, threads)
        pos += chunk.arr.length
    del keepalive
    if final is not None:
        final[:] = out
        return final
    return out


cdef bint _arrow_overlaps(list chunks, str fmt, object out):
    """Whether out's memory intersects any buffer the chunks read."""
    cdef size_t lo = _addr(out), hi = lo + <size_t>out.shape[0] * 8
    cdef ArrowChunk chunk
    cdef ArrowArray *arr
    cdef int64_t i
    for c in chunks:
        chunk = <ArrowChunk>c
        arr = &chunk.arr
        for i in range(arr.n_buffers):
            if arr.buffers[i] == NULL:
                continue
            # Buffer sizes are not part of the C interface; any buffer that starts
            # inside out, or that starts before out and may reach into it, counts.
            if lo <= <size_t>arr.buffers[i] < hi:
                return True
            if <size_t>arr.buffers[i] < lo and lo - <size_t>arr.buffers[i] < _buffer_extent(arr, fmt, i):
                return True
    return False


cdef size_t _buffer_extent(ArrowArray *arr, str fmt, int64_t i):
    """An upper bound of how many bytes of buffer i the chunk reads."""
    cdef int64_t end = arr.offset + arr.length
    if i == 0:
        return <size_t>((end + 7) // 8)
    if fmt in _ARROW_INT_FORMATS:
        return <size_t>(end * _ARROW_INT_FORMATS[fmt][0])
    if fmt in _ARROW_VAR_FORMATS:
        if i == 1:
            return <size_t>((end + 1) * (4 if _ARROW_VAR_FORMATS[fmt] == 32 else 8))
        if _ARROW_VAR_FORMATS[fmt] == 32:
            return <size_t>(<const int32_t *>arr.buffers[1])[end]
        return <size_t>(<const int64_t *>arr.buffers[1])[end]
    if i == 1:
        return <size_t>(end * 16)
    return <size_t>-1  # view data buffers: be conservative


cdef list _arrow_chunk_strings(ArrowChunk chunk, str fmt):
    """Decode the UTF-8 values of a string chunk into Python str objects."""
    cdef ArrowArray *arr = &chunk.arr
    result = []
    try:
        _decode_arrow_strings(arr, fmt, result)
    except UnicodeDecodeError as exc:
        raise ValueError(f"key at position {len(result)}: the Arrow string is not valid UTF-8 "
                         f"({exc.reason} at byte {exc.start})") from None
    return result


cdef _decode_arrow_strings(ArrowArray *arr, str fmt, list result):
    cdef int64_t n = arr.length, off = arr.offset, i
    cdef const int32_t *o32
    cdef const int64_t *o64
    cdef const uint8_t *data
    cdef const uint8_t *v
    cdef int32_t ln, bi, bo
    if fmt == "u":
        o32 = <const int32_t *>arr.buffers[1] + off
        data = <const uint8_t *>arr.buffers[2]
        for i in range(n):
            result.append((<const char *>data)[o32[i]:o32[i + 1]].decode("utf-8"))
    elif fmt == "U":
        o64 = <const int64_t *>arr.buffers[1] + off
        data = <const uint8_t *>arr.buffers[2]
        for i in range(n):
            result.append((<const char *>data)[o64[i]:o64[i + 1]].decode("utf-8"))
    else:
        for i in range(n):
            v = <const uint8_t *>arr.buffers[1] + (off + i) * 16
            ln = <int32_t>(v[0] | (v[1] << 8) | (v[2] << 16) | (<uint32_t>v[3] << 24))
            if ln <= 12:
                result.append((<const char *>v + 4)[:ln].decode("utf-8"))
            else:
                bi = <int32_t>(v[8] | (v[9] << 8) | (v[10] << 16) | (<uint32_t>v[11] << 24))
                bo = <int32_t>(v[12] | (v[13] << 8) | (v[14] << 16) | (<uint32_t>v[15] << 24))
                if bi < 0 or bi >= arr.n_buffers - 3:
                    raise ValueError(f"malformed Arrow view at position {i}")
                data = <const uint8_t *>arr.buffers[2 + bi]
                result.append((<const char *>data + bo)[:ln].decode("utf-8"))


cdef object _aligned_copy(ArrowChunk chunk, const char *p, Py_ssize_t n, str dtype):
    """None when the ``n`` items of ``dtype`` at ``p`` start on their
    alignment, else an aligned copy of them: Arrow allows buffers at any
    address (``pa.Array.from_buffers`` over a sliced buffer), and the
    kernels' typed loads from an unaligned one are undefined behaviour."""
    cdef Py_ssize_t width = np.dtype(dtype).itemsize
    if n <= 0 or <size_t>p % <size_t>width == 0:
        return None
    return np.frombuffer(ArrowBuffer(chunk, <size_t>p, n * width), dtype=dtype).copy()


cdef _hash_arrow_chunk(Hasher h, str fmt, ArrowChunk chunk, object out, int64_t pos, object threads):
    cdef ArrowArray *arr = &chunk.arr
    cdef Py_ssize_t n = arr.length
    if n == 0:
        return
    cdef uint64_t *op = <uint64_t *>address(out) + pos
    cdef int algo = h._algo
    cdef uint64_t seed = h._seed
    cdef int64_t off = arr.offset
    cdef int width
    cdef bint is_signed
    cdef sh_job job
    if fmt in _ARROW_INT_FORMATS:
        width, is_signed = _ARROW_INT_FORMATS[fmt]
        if width == 8:
            _job_of(h, &job, out, pos)
            job.data = <const char *>arr.buffers[1] + off * 8
            job.stride = 8
            job.variant = not is_signed
            run(_k_words, &job, n, threads)
        else:
            np_dtype = np.dtype(("i" if is_signed else "u") + str(width))
            view = np.frombuffer(ArrowBuffer(chunk, <size_t>arr.buffers[1], (off + n) * width), dtype=np_dtype)[off:]
            _hash_narrow_ints(h, view, out[pos:pos + n], threads)
        return
    if fmt in _ARROW_VAR_FORMATS:
        _job_of(h, &job, out, pos)
        job.data = arr.buffers[2]
        job.variant = _ARROW_VAR_FORMATS[fmt] == 64
        width = 8 if job.variant else 4
        job.offsets = <const char *>arr.buffers[1] + off * width
        offsets = _aligned_copy(chunk, <const char *>job.offsets, n + 1, "i8" if job.variant else "i4")
        if offsets is not None:
            job.offsets = <const char *>address(offsets)
        run(_k_offsets, &job, n, threads)
        return
    # string_view / binary_view: buffers = [validity, views, data..., variadic sizes]
    cdef int64_t nbuf = arr.n_buffers - 3
    if nbuf < 0:
        raise ValueError("malformed Arrow view array: too few buffers")
    cdef const int64_t *sizes = <const int64_t *>arr.buffers[arr.n_buffers - 1]
    sizes_copy = _aligned_copy(chunk, <const char *>sizes, nbuf, "i8")
    if sizes_copy is not None:
        sizes = <const int64_t *>address(sizes_copy)
    cdef const uint8_t *const *bufs = <const uint8_t *const *>(arr.buffers + 2)
    cdef const uint8_t *views = <const uint8_t *>arr.buffers[1] + off * 16
    cdef ptrdiff_t bad
    with nogil:
        bad = sh_hash_views(algo, seed, views, bufs, sizes, <size_t>nbuf, <size_t>n, op)
    if bad >= 0:
        raise ValueError(f"malformed Arrow view at position {pos + bad}")
