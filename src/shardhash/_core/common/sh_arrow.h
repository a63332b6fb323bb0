/*
 * shardhash core: the Arrow C data and stream interfaces
 * (https://arrow.apache.org/docs/format/CDataInterface.html), as the Arrow
 * project defines them, and the calls through their function pointers.
 *
 * Plain C99, no Python.h: the key-intake layer (_intake.pyx) imports Arrow
 * arrays and streams through them.
 */
#ifndef SH_ARROW_H
#define SH_ARROW_H

#include <stdint.h>

#ifndef ARROW_C_DATA_INTERFACE
#  define ARROW_C_DATA_INTERFACE
struct ArrowSchema {
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};
struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};
#endif

#ifndef ARROW_C_STREAM_INTERFACE
#  define ARROW_C_STREAM_INTERFACE
struct ArrowArrayStream {
    int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *out);
    int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *out);
    const char *(*get_last_error)(struct ArrowArrayStream *);
    void (*release)(struct ArrowArrayStream *);
    void *private_data;
};
#endif

static void sh_release_schema(struct ArrowSchema *s)
{
    if (s && s->release) s->release(s);
}

static void sh_release_array(struct ArrowArray *a)
{
    if (a && a->release) a->release(a);
}

static int sh_stream_get_schema(struct ArrowArrayStream *st, struct ArrowSchema *out)
{
    return st->get_schema(st, out);
}

static int sh_stream_get_next(struct ArrowArrayStream *st, struct ArrowArray *out)
{
    return st->get_next(st, out);
}

static const char *sh_stream_error(struct ArrowArrayStream *st)
{
    const char *e = st->get_last_error ? st->get_last_error(st) : NULL;
    return e ? e : "unknown error";
}

#endif /* SH_ARROW_H */
