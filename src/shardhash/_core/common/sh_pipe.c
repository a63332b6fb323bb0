/*
 * shardhash core: the list-hashing pipeline (see sh_pipe.h).
 *
 * One mutex guards the counters; helpers sleep on `work` (a chunk published,
 * or the pipe closed), the producer on `slot_done` (a chunk hashed).
 */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L
#endif

#include "sh_pipe.h"

#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#  include <windows.h>
#  include <process.h>
typedef SRWLOCK sh_mutex;
typedef CONDITION_VARIABLE sh_cond;
typedef HANDLE sh_thread;
#  define SH_THREAD_FN     unsigned __stdcall
#  define SH_THREAD_RETURN return 0
static int sh_mutex_init(sh_mutex *m)
{
    InitializeSRWLock(m);
    return 0;
}
static void sh_mutex_destroy(sh_mutex *m)
{
    (void)m;
}
static void sh_lock(sh_mutex *m)
{
    AcquireSRWLockExclusive(m);
}
static void sh_unlock(sh_mutex *m)
{
    ReleaseSRWLockExclusive(m);
}
static int sh_cond_init(sh_cond *c)
{
    InitializeConditionVariable(c);
    return 0;
}
static void sh_cond_destroy(sh_cond *c)
{
    (void)c;
}
static void sh_cond_wait(sh_cond *c, sh_mutex *m)
{
    SleepConditionVariableSRW(c, m, INFINITE, 0);
}
static void sh_cond_signal(sh_cond *c)
{
    WakeConditionVariable(c);
}
static void sh_cond_broadcast(sh_cond *c)
{
    WakeAllConditionVariable(c);
}
static int sh_thread_start(sh_thread *t, unsigned(__stdcall *fn)(void *), void *arg)
{
    uintptr_t h = _beginthreadex(NULL, 0, fn, arg, 0, NULL);
    if (h == 0) return -1;
    *t = (HANDLE)h;
    return 0;
}
static void sh_thread_join(sh_thread t)
{
    WaitForSingleObject(t, INFINITE);
    CloseHandle(t);
}
#else
#  include <pthread.h>
typedef pthread_mutex_t sh_mutex;
typedef pthread_cond_t sh_cond;
typedef pthread_t sh_thread;
#  define SH_THREAD_FN         void *
#  define SH_THREAD_RETURN     return NULL
/* POSIX maps one to one (the return values go unused but for the inits). */
#  define sh_mutex_init(m)     pthread_mutex_init((m), NULL)
#  define sh_mutex_destroy(m)  ((void)pthread_mutex_destroy(m))
#  define sh_lock(m)           ((void)pthread_mutex_lock(m))
#  define sh_unlock(m)         ((void)pthread_mutex_unlock(m))
#  define sh_cond_init(c)      pthread_cond_init((c), NULL)
#  define sh_cond_destroy(c)   ((void)pthread_cond_destroy(c))
#  define sh_cond_wait(c, m)   ((void)pthread_cond_wait((c), (m)))
#  define sh_cond_signal(c)    ((void)pthread_cond_signal(c))
#  define sh_cond_broadcast(c) ((void)pthread_cond_broadcast(c))
static int sh_thread_start(sh_thread *t, void *(*fn)(void *), void *arg)
{
    return pthread_create(t, NULL, fn, arg) == 0 ? 0 : -1;
}
static void sh_thread_join(sh_thread t)
{
    pthread_join(t, NULL);
}
#endif

struct sh_pipe {
    sh_mutex mu;
    sh_cond work;      /* helpers wait here: a chunk published, or closed */
    sh_cond slot_done; /* the producer waits here: a chunk hashed */
    sh_thread threads[SH_PIPE_HELPERS];
    int started, closed, idle, producer_waiting;
    size_t n, published, claimed;  /* chunks [0, published) are filled */
    long long done[SH_PIPE_SLOTS]; /* the last chunk hashed in each slot (-1: none) */
    sh_pipe_kernel fn;
    const void *ctx;
    unsigned char *out;
    size_t out_size;
    const uint8_t *ptrs[SH_PIPE_SLOTS][SH_PIPE_CHUNK];
    int64_t lens[SH_PIPE_SLOTS][SH_PIPE_CHUNK];
};

/* With mu held: hash the next chunk waiting, mu released meanwhile. */
static void sh_pipe_take(sh_pipe *q)
{
    size_t c = q->claimed++, s = c % SH_PIPE_SLOTS, start = c * SH_PIPE_CHUNK;
    size_t m = q->n - start < SH_PIPE_CHUNK ? q->n - start : SH_PIPE_CHUNK;
    sh_unlock(&q->mu);
    q->fn(q->ctx, q->ptrs[s], q->lens[s], m, q->out + start * q->out_size);
    sh_lock(&q->mu);
    q->done[s] = (long long)c;
    if (q->producer_waiting) sh_cond_signal(&q->slot_done);
}

static SH_THREAD_FN sh_pipe_helper(void *arg)
{
    sh_pipe *q = (sh_pipe *)arg;
    sh_lock(&q->mu);
    for (;;) {
        if (q->claimed < q->published) {
            sh_pipe_take(q);
        } else if (q->closed) {
            break;
        } else {
            q->idle++;
            sh_cond_wait(&q->work, &q->mu);
            q->idle--;
        }
    }
    sh_unlock(&q->mu);
    SH_THREAD_RETURN;
}

sh_pipe *sh_pipe_new(size_t n, void *out, size_t out_size, sh_pipe_kernel fn, const void *ctx, int helpers)
{
    sh_pipe *q = (sh_pipe *)malloc(sizeof(sh_pipe));
    int h;
    if (q == NULL) return NULL;
    memset(q, 0, offsetof(sh_pipe, ptrs)); /* not the slots */
    q->n = n;
    q->out = (unsigned char *)out;
    q->out_size = out_size;
    q->fn = fn;
    q->ctx = ctx;
    for (h = 0; h < SH_PIPE_SLOTS; h++) q->done[h] = -1;
    if (sh_mutex_init(&q->mu) != 0) {
        free(q);
        return NULL;
    }
    if (sh_cond_init(&q->work) != 0) {
        sh_mutex_destroy(&q->mu);
        free(q);
        return NULL;
    }
    if (sh_cond_init(&q->slot_done) != 0) {
        sh_cond_destroy(&q->work);
        sh_mutex_destroy(&q->mu);
        free(q);
        return NULL;
    }
    if (helpers > SH_PIPE_HELPERS) helpers = SH_PIPE_HELPERS;
    for (h = 0; h < helpers; h++) {
        if (sh_thread_start(&q->threads[h], sh_pipe_helper, q) != 0) break;
        q->started++;
    }
    return q;
}

int sh_pipe_started(const sh_pipe *q)
{
    return q->started;
}

const uint8_t **sh_pipe_ptrs(sh_pipe *q, size_t slot)
{
    return q->ptrs[slot % SH_PIPE_SLOTS];
}

int64_t *sh_pipe_lens(sh_pipe *q, size_t slot)
{
    return q->lens[slot % SH_PIPE_SLOTS];
}

void sh_pipe_slot(sh_pipe *q, size_t c)
{
    size_t prev;
    if (c < SH_PIPE_SLOTS) return;
    prev = c - SH_PIPE_SLOTS;
    sh_lock(&q->mu);
    while (q->done[c % SH_PIPE_SLOTS] != (long long)prev) {
        if (q->claimed <= prev) {
            sh_pipe_take(q);
        } else {
            q->producer_waiting = 1;
            sh_cond_wait(&q->slot_done, &q->mu);
            q->producer_waiting = 0;
        }
    }
    sh_unlock(&q->mu);
}

void sh_pipe_publish(sh_pipe *q, size_t c)
{
    sh_lock(&q->mu);
    q->published = c + 1;
    if (q->idle) sh_cond_signal(&q->work);
    while (q->published - q->claimed > (size_t)(q->started ? SH_PIPE_LAG : 0)) sh_pipe_take(q);
    sh_unlock(&q->mu);
}

void sh_pipe_finish(sh_pipe *q, int hash_rest)
{
    int h;
    sh_lock(&q->mu);
    q->closed = 1;
    if (!hash_rest) q->published = q->claimed;
    sh_cond_broadcast(&q->work);
    while (q->claimed < q->published) sh_pipe_take(q);
    sh_unlock(&q->mu);
    for (h = 0; h < q->started; h++) sh_thread_join(q->threads[h]);
    sh_cond_destroy(&q->slot_done);
    sh_cond_destroy(&q->work);
    sh_mutex_destroy(&q->mu);
    free(q);
}
