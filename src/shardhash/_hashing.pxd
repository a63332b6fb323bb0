# Cython declarations of the hashing core, for other compiled modules:
#     from shardhash._hashing cimport Hasher
#     h = (<Hasher>hasher).hash_one(key)      # C-level call, no Python dispatch
from libc.stdint cimport uint64_t


cdef class Hasher:
    cdef readonly str algorithm
    cdef readonly object seed        # Python int, as given
    cdef readonly object codec       # shardhash.KeyCodec
    cdef int _algo                   # sh_algo
    cdef uint64_t _seed
    cdef bint _fast_int              # integers take the 8-byte little-endian fast path
    cdef bint _fast_str              # str is plain UTF-8 (no normalisation / casefold / strip)
    cdef object _doc_cache

    # Hash one key (any type the codec accepts) to the algorithm's value
    # widened to 64 bits (murmur3_128: h1).  Raises like hash_key().
    cdef uint64_t hash_one(self, object key) except? 0
