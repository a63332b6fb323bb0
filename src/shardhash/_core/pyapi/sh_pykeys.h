/*
 * shardhash: keys read in place from a Python list or tuple (Python.h).
 *
 * The files of _core/pyapi read Python objects and need the CPython API:
 * they are headers only (static functions), included by the Cython modules
 * after Python.h, never compiled on their own; the rest of _core is plain C.
 * Every function here takes borrowed references only and runs no Python code.
 */
#ifndef SH_PYKEYS_H
#define SH_PYKEYS_H

#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#  define SH_PREFETCH(p) __builtin_prefetch((const void *)(p))
#else
#  define SH_PREFETCH(p) ((void)0)
#endif

/* pack_keys of a list or tuple of exact bytes and compact ASCII str
 * keys, in C (borrowed references only, no Python code): pass 1 sums
 * their sizes and returns the index of the first other key (n when
 * there is none); pass 2 copies them and their offsets, and returns -1
 * if a key is no longer one of those or no longer fits (the sequence
 * changed in between: allocating the output can run a finalizer). */
static Py_ssize_t sh_pack_total(PyObject *const *items, Py_ssize_t n, Py_ssize_t *total)
{
#if defined(PYPY_VERSION) || defined(Py_LIMITED_API)
    (void)items;
    (void)n;
    *total = 0;
    return 0;
#else
    Py_ssize_t i, t = 0;
    for (i = 0; i < n; i++) {
        PyObject *o = items[i];
        if (PyBytes_CheckExact(o))
            t += PyBytes_GET_SIZE(o);
        else if (PyUnicode_CheckExact(o) && PyUnicode_IS_COMPACT_ASCII(o))
            t += PyUnicode_GET_LENGTH(o);
        else
            break;
    }
    *total = t;
    return i;
#endif
}
static int sh_pack_copy(PyObject *const *items, Py_ssize_t n, uint8_t *data, Py_ssize_t total,
                        int64_t *offsets)
{
#if defined(PYPY_VERSION) || defined(Py_LIMITED_API)
    (void)items;
    (void)n;
    (void)data;
    (void)total;
    (void)offsets;
    return -1;
#else
    Py_ssize_t i, pos = 0;
    offsets[0] = 0;
    for (i = 0; i < n; i++) {
        PyObject *o = items[i];
        const void *p;
        Py_ssize_t m;
        if (PyBytes_CheckExact(o)) {
            p = PyBytes_AS_STRING(o);
            m = PyBytes_GET_SIZE(o);
        } else if (PyUnicode_CheckExact(o) && PyUnicode_IS_COMPACT_ASCII(o)) {
            p = PyUnicode_DATA(o);
            m = PyUnicode_GET_LENGTH(o);
        } else {
            return -1;
        }
        if (m > total - pos) return -1;
        if (m) memcpy(data + pos, p, (size_t)m);
        pos += m;
        offsets[i + 1] = (int64_t)pos;
    }
    return pos == total ? 0 : -1;
#endif
}

/* The walk over a list's (or tuple's) items that the *_seq kernels share:
 * items[i..end) are read while each is an exact bytes object or an
 * exact str stored as compact ASCII (its characters are its UTF-8
 * bytes), into ptrs/lens; the walk stops at the first other key and
 * returns its index (end when there is none).  Borrowed references
 * only: no reference count is touched, so the keys' memory is read,
 * never written.  The object `ahead` items on is prefetched (its
 * header and first bytes, where the type, size and data are).
 *
 * The data of both kinds of key is preceded, inside the same object,
 * by at least 16 bytes of header: the kernels may read them
 * (sh_cassandra_token_ptrs16, sh_redis_keyslot_ptrs16). */
#define SH_SEQ_AHEAD 8
static Py_ssize_t sh_seq_walk(PyObject *const *items, Py_ssize_t i, Py_ssize_t end, Py_ssize_t n,
                              const uint8_t **ptrs, int64_t *lens)
{
#if defined(PYPY_VERSION) || defined(Py_LIMITED_API)
    (void)items;
    (void)end;
    (void)n;
    (void)ptrs;
    (void)lens;
    return i;
#else
    Py_ssize_t k = 0;
    for (; i < end; i++, k++) {
        PyObject *o = items[i];
        if (i + SH_SEQ_AHEAD < n) SH_PREFETCH(items[i + SH_SEQ_AHEAD]);
        if (PyBytes_CheckExact(o)) {
            ptrs[k] = (const uint8_t *)PyBytes_AS_STRING(o);
            lens[k] = (int64_t)PyBytes_GET_SIZE(o);
        } else if (PyUnicode_CheckExact(o) && PyUnicode_IS_COMPACT_ASCII(o)) {
            ptrs[k] = (const uint8_t *)PyUnicode_DATA(o);
            lens[k] = (int64_t)PyUnicode_GET_LENGTH(o);
        } else {
            break;
        }
    }
    return i;
#endif
}
/* The first of items[0..n) that fails a test; n when none does.
 * Borrowed references only, no Python code.  The tests: 0, a bytes
 * (or subclass), bytearray (or subclass) or memoryview object; 1, an
 * object of type exactly tp; 2, an object of any other type than tp;
 * 3, an exact str of ASCII characters only. */
static Py_ssize_t sh_first_failing(PyObject *const *items, Py_ssize_t n, int test, PyObject *tp)
{
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        PyObject *o = items[i];
        int ok;
        switch (test) {
        case 0: ok = PyBytes_Check(o) || PyByteArray_Check(o) || PyMemoryView_Check(o); break;
        case 1: ok = (PyObject *)Py_TYPE(o) == tp; break;
        case 2: ok = (PyObject *)Py_TYPE(o) != tp; break;
        default: ok = PyUnicode_CheckExact(o) && PyUnicode_IS_ASCII(o); break;
        }
        if (!ok) break;
    }
    return i;
}
/* The header before the data of a bytes object is at least 16 bytes. */
#if !defined(PYPY_VERSION) && !defined(Py_LIMITED_API)
typedef char sh_bytes_header_check[offsetof(PyBytesObject, ob_sval) >= 16 ? 1 : -1];
typedef char sh_ascii_header_check[sizeof(PyASCIIObject) >= 16 ? 1 : -1];
/* 1 when it is at least 32 bytes for both kinds of key (64-bit builds):
 * the kernels that read 32 bytes before a key's end may run on them. */
#  define SH_SEQ_HEADER32 (offsetof(PyBytesObject, ob_sval) >= 32 && sizeof(PyASCIIObject) >= 32)
#else
#  define SH_SEQ_HEADER32 0
#endif

#endif /* SH_PYKEYS_H */
