# The C declarations of _core/place's MementoHash and multi-probe state, shared by
# the routing bindings (_kernels.pyx, _replicas.pyx).

from libc.stdint cimport int32_t, uint32_t, uint64_t

cdef extern from "sh_memento.h" nogil:
    ctypedef struct sh_memento:
        const int32_t *replacer
        int32_t n
        int32_t nremoved

cdef extern from "sh_multiprobe.h" nogil:
    ctypedef struct sh_mprobe:
        const uint64_t *tokens
        const int32_t *owners
        size_t ntokens
        const uint32_t *index
        unsigned shift
        unsigned probes
    unsigned SH_MPROBE_MAX_PROBES
    unsigned sh_mprobe_index_bits(size_t ntokens)
    void sh_mprobe_build_index(const uint64_t *tokens, size_t ntokens, unsigned bits, uint32_t *index)
