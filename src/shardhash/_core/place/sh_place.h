/*
 * shardhash core: placement kernels over 64-bit hash values.
 *
 * Plain C99, no Python.h.  Every function maps a key's 64-bit hash to the
 * index of a shard (int32_t).  The algorithms, mixing functions and constants
 * here are part of shardhash's routing protocol (docs/routers.md): changing
 * any of them changes where keys live.
 *
 * Batch kernels share one shape: (const uint64_t *hashes, size_t n, ..., int32_t *out).
 * None allocates memory; tables are built by the caller.
 *
 * One header and one C file per strategy: sh_mix.h, sh_jump.h (+ sh_jump_avx2.c,
 * sh_jump_neon.c), sh_bucket.h, sh_ring.h, sh_maglev.h, sh_rendezvous.h,
 * sh_override.h; this header includes them all.
 */
#ifndef SH_PLACE_H
#define SH_PLACE_H

#include "sh_mix.h"
#include "sh_jump.h"
#include "sh_bucket.h"
#include "sh_ring.h"
#include "sh_maglev.h"
#include "sh_rendezvous.h"
#include "sh_override.h"

#endif /* SH_PLACE_H */
