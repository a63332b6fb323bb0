/*
 * shardhash core: a pipeline that hashes a list of keys on helper threads
 * while the calling thread reads it.
 *
 * Plain C99, no Python.h.  The calling thread (the producer) fills chunks of
 * SH_PIPE_CHUNK keys' pointers and lengths into SH_PIPE_SLOTS slots in turn
 * and publishes each; helper threads run the kernel on published chunks.
 * The producer hashes a chunk itself whenever more than SH_PIPE_LAG wait (so
 * the work is balanced whatever the speeds), and every chunk when no helper
 * could be started.  A slot is refilled only once its previous chunk is
 * hashed (sh_pipe_slot).  The helpers touch nothing but the slots, the keys'
 * bytes and the output: whatever the keys' memory belongs to must stay put
 * until sh_pipe_finish returns (a Python caller holds the GIL throughout).
 *
 * Threads: POSIX threads, or the Win32 API on Windows (MSVC, mingw-w64).
 */
#ifndef SH_PIPE_H
#define SH_PIPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SH_PIPE_CHUNK   8192
#define SH_PIPE_SLOTS   8
#define SH_PIPE_HELPERS 7
#define SH_PIPE_LAG     4

/* Hash n keys (ptrs[i], lens[i]) into out[0..n) (out: the chunk's first
 * output item); ctx is the one given to sh_pipe_new. */
typedef void (*sh_pipe_kernel)(const void *ctx, const uint8_t *const *ptrs, const int64_t *lens, size_t n,
                               void *out);

typedef struct sh_pipe sh_pipe;

/* A pipe for n keys whose outputs are out_size bytes each, with up to
 * `helpers` helper threads started (at most SH_PIPE_HELPERS; fewer when the
 * system refuses more); NULL when out of memory. */
sh_pipe *sh_pipe_new(size_t n, void *out, size_t out_size, sh_pipe_kernel fn, const void *ctx, int helpers);
/* The number of helper threads running. */
int sh_pipe_started(const sh_pipe *q);
/* The pointer and length arrays of a slot (SH_PIPE_CHUNK entries each). */
const uint8_t **sh_pipe_ptrs(sh_pipe *q, size_t slot);
int64_t *sh_pipe_lens(sh_pipe *q, size_t slot);
/* Before chunk c is written into its slot (c % SH_PIPE_SLOTS): waits until
 * the slot's previous chunk is hashed (hashing it here if no helper took it). */
void sh_pipe_slot(sh_pipe *q, size_t c);
/* Chunk c (keys c * SH_PIPE_CHUNK ...) is filled: hand it over. */
void sh_pipe_publish(sh_pipe *q, size_t c);
/* Every published chunk hashed (hash_rest; else those no helper has taken
 * are dropped), every helper joined, the pipe freed. */
void sh_pipe_finish(sh_pipe *q, int hash_rest);

#ifdef __cplusplus
}
#endif

#endif /* SH_PIPE_H */
