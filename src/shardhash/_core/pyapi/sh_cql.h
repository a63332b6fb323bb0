/*
 * shardhash: Cassandra partition keys of CQL values serialized in C
 * (Python.h: a header of _core/pyapi, see sh_pykeys.h).
 *
 * The partition-key bytes of CQL values of the common exact Python types,
 * written without a Python call (CQL's serialization, as the
 * cassandra.serialize() reference does it): int types big-endian two's
 * complement of their width, text UTF-8, ascii its bytes, blob as is,
 * uuid its 16 bytes, boolean one byte 0/1.  A composite key is each
 * column's bytes preceded by their length (2 bytes, big-endian) and
 * followed by a 0 byte; a one-column composite type is that column's bytes.
 *
 * Only exact types are taken (bytes, bytearray, str, int, bool,
 * uuid.UUID; a key that is an exact tuple or list): no key's own code
 * runs here, so a caller's list read around these calls cannot change.
 * Anything else (None, subclasses, numpy scalars, datetime, a str uuid,
 * an out-of-range int, non-ASCII ascii, a component over 65535 bytes, a
 * wrong number of values) returns -1 with no exception set, and the
 * caller hands the key to the Python reference, which decides the bytes
 * or raises the error. */
#ifndef SH_CQL_H
#define SH_CQL_H

#include "sh_pykeys.h"

enum {
    SH_CQL_BLOB = 0,
    SH_CQL_TEXT,
    SH_CQL_ASCII,
    SH_CQL_TINYINT,
    SH_CQL_SMALLINT,
    SH_CQL_INT,
    SH_CQL_BIGINT,
    SH_CQL_UUID,
    SH_CQL_BOOLEAN,
    SH_CQL_NCODES
};
#define SH_CQL_MAX_COLUMNS 64
static PyObject *sh_cql_uuid_type = NULL; /* uuid.UUID */
static PyObject *sh_cql_int_name = NULL;  /* "int", the attribute holding a UUID's value */
static PyObject *sh_cql_64 = NULL;        /* the int 64 */

static int sh_cql_setup(PyObject *uuid_type)
{
    if (sh_cql_uuid_type == NULL) {
        sh_cql_int_name = PyUnicode_InternFromString("int");
        sh_cql_64 = PyLong_FromLong(64);
        if (sh_cql_int_name == NULL || sh_cql_64 == NULL) return -1;
        Py_INCREF(uuid_type);
        sh_cql_uuid_type = uuid_type;
    }
    return 0;
}

static void sh_cql_be(uint8_t *dst, uint64_t v, int width)
{
    int i;
    for (i = 0; i < width; i++) dst[i] = (uint8_t)(v >> (8 * (width - 1 - i)));
}

/* The 16 big-endian bytes of an exact uuid.UUID at dst; -1 (no exception
 * set) unless its `int` is an exact int in [0, 2**128). */
static int sh_cql_uuid_bytes(PyObject *v, uint8_t *dst)
{
    PyObject *x = PyObject_GetAttr(v, sh_cql_int_name);
    int ok;
    if (x == NULL) {
        PyErr_Clear();
        return -1;
    }
    ok = PyLong_CheckExact(x);
#if !defined(PYPY_VERSION) && !defined(Py_LIMITED_API) && PY_VERSION_HEX >= 0x030D0000
    if (ok) {
        Py_ssize_t r = PyLong_AsNativeBytes(x, dst, 16,
                                            Py_ASNATIVEBYTES_BIG_ENDIAN | Py_ASNATIVEBYTES_UNSIGNED_BUFFER |
                                                Py_ASNATIVEBYTES_REJECT_NEGATIVE);
        if (r < 0) PyErr_Clear();
        ok = r >= 0 && r <= 16;
    }
#elif !defined(PYPY_VERSION) && !defined(Py_LIMITED_API)
    if (ok && _PyLong_AsByteArray((PyLongObject *)x, dst, 16, 0, 0) < 0) { /* negative or >= 2**128 */
        PyErr_Clear();
        ok = 0;
    }
#else
    if (ok) {
        PyObject *h = PyNumber_Rshift(x, sh_cql_64);
        uint64_t hi = 0, lo;
        if (h == NULL) {
            PyErr_Clear();
            ok = 0;
        } else {
            hi = PyLong_AsUnsignedLongLong(h); /* OverflowError if negative or >= 2**64 */
            Py_DECREF(h);
            if (hi == (uint64_t)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                ok = 0;
            }
        }
        if (ok) {
            lo = PyLong_AsUnsignedLongLongMask(x);
            sh_cql_be(dst, hi, 8);
            sh_cql_be(dst + 8, lo, 8);
        }
    }
#endif
    Py_DECREF(x);
    return ok ? 0 : -1;
}

/* A value's n bytes at p copied to dst.  When p is the data of an exact
 * bytes or compact-ASCII str object `o` (at least SH_CQL_PAD bytes of
 * header before the data: SH_CQL_HEADERS_FIT, true on 64-bit builds; a
 * 32-bit build takes the plain copy) and n <= SH_CQL_PAD, the copy is
 * one 32-byte load ending where the data ends and one store ending at
 * dst + n, with the SH_CQL_PAD bytes before dst saved and put back: no
 * branch on the length, which varies from key to key.  The caller's
 * buffer must then have SH_CQL_PAD bytes before dst. */
#define SH_CQL_PAD 32
#if !defined(PYPY_VERSION) && !defined(Py_LIMITED_API)
#  define SH_CQL_HEADERS_FIT \
      (offsetof(PyBytesObject, ob_sval) >= SH_CQL_PAD && sizeof(PyASCIIObject) >= SH_CQL_PAD)
#endif
static void sh_cql_copy(uint8_t *dst, const char *p, Py_ssize_t n, PyObject *o)
{
#if !defined(PYPY_VERSION) && !defined(Py_LIMITED_API)
    if (SH_CQL_HEADERS_FIT && o != NULL && n <= SH_CQL_PAD) {
        uint8_t save[SH_CQL_PAD], v[SH_CQL_PAD];
        const char *end = (const char *)o + (p - (const char *)o) + n; /* inside o */
        memcpy(save, dst - SH_CQL_PAD, SH_CQL_PAD);
        memcpy(v, end - SH_CQL_PAD, SH_CQL_PAD);
        memcpy(dst + n - SH_CQL_PAD, v, SH_CQL_PAD);
        memcpy(dst - SH_CQL_PAD, save, SH_CQL_PAD);
        return;
    }
#else
    (void)o;
#endif
    if (n > 0) memcpy(dst, p, (size_t)n);
}

/* One value of CQL code t: its length, its bytes written at dst when they
 * fit in `room` (else nothing is written); -1 when not handled here. */
static Py_ssize_t sh_cql_value(PyObject *v, int t, uint8_t *dst, Py_ssize_t room)
{
    const char *p;
    Py_ssize_t n;
    int width, overflow = 0;
    long long x;
    uint8_t u[16];
    PyObject *padded = NULL; /* the object whose header precedes p */
    switch (t) {
    case SH_CQL_BLOB:
        if (PyBytes_CheckExact(v)) {
            p = PyBytes_AS_STRING(v);
            n = PyBytes_GET_SIZE(v);
            padded = v;
        } else if (PyByteArray_CheckExact(v)) {
            p = PyByteArray_AS_STRING(v);
            n = PyByteArray_GET_SIZE(v);
        } else {
            return -1;
        }
        break;
    case SH_CQL_TEXT:
    case SH_CQL_ASCII:
        if (!PyUnicode_CheckExact(v)) return -1;
        if (PyUnicode_IS_COMPACT_ASCII(v)) {
            p = (const char *)PyUnicode_DATA(v);
            n = PyUnicode_GET_LENGTH(v);
            padded = v;
        } else {
            if (t == SH_CQL_ASCII) return -1;
            p = PyUnicode_AsUTF8AndSize(v, &n); /* NULL for lone surrogates */
            if (p == NULL) {
                PyErr_Clear();
                return -1;
            }
        }
        break;
    case SH_CQL_TINYINT:
    case SH_CQL_SMALLINT:
    case SH_CQL_INT:
    case SH_CQL_BIGINT:
        if (!PyLong_CheckExact(v)) return -1; /* bool, int subclasses, numpy ints: the reference */
        x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow != 0) return -1;
        width = t == SH_CQL_TINYINT ? 1 : t == SH_CQL_SMALLINT ? 2 : t == SH_CQL_INT ? 4 : 8;
        if (width < 8) {
            long long lim = 1LL << (8 * width - 1);
            if (x < -lim || x >= lim) return -1;
        }
        if (room >= width) sh_cql_be(dst, (uint64_t)x, width);
        return width;
    case SH_CQL_UUID:
        /* (the generic getattr reads the `int` slot: no Python code runs) */
        if ((PyObject *)Py_TYPE(v) != sh_cql_uuid_type ||
            Py_TYPE(v)->tp_getattro != PyObject_GenericGetAttr || sh_cql_uuid_bytes(v, u) < 0)
            return -1;
        if (room >= 16) memcpy(dst, u, 16);
        return 16;
    case SH_CQL_BOOLEAN:
        if (v != Py_True && v != Py_False) return -1;
        if (room >= 1) dst[0] = v == Py_True;
        return 1;
    default: return -1;
    }
    if (n <= room) sh_cql_copy(dst, p, n, padded);
    return n;
}

/* The keys ahead of key i, fetched into the cache while key i is
 * serialized: key i + SH_CQL_AHEAD itself, and the first values of key
 * i + SH_CQL_AHEAD / 2 (a tuple fetched earlier). */
#define SH_CQL_AHEAD 8
static void sh_cql_prefetch(PyObject *const *items, Py_ssize_t i, Py_ssize_t n)
{
    PyObject *k;
    Py_ssize_t c, m;
    if (i + SH_CQL_AHEAD < n) SH_PREFETCH(items[i + SH_CQL_AHEAD]);
    if (i + SH_CQL_AHEAD / 2 < n) {
        k = items[i + SH_CQL_AHEAD / 2];
        if (PyTuple_CheckExact(k)) {
            m = PyTuple_GET_SIZE(k);
            for (c = 0; c < m && c < 4; c++) SH_PREFETCH(PyTuple_GET_ITEM(k, c));
        }
    }
}

/* A partition key: with `scalar`, key is the one value of type t[0];
 * otherwise an exact tuple or list of ncols values of types t[..].
 * Returns the key's length, its bytes written at dst when they fit in
 * `room` (else the caller makes room and calls again); -1 when the key
 * is not handled here.  The SH_CQL_PAD bytes before dst must be the
 * caller's too (see sh_cql_copy; they are left as they were). */
static Py_ssize_t sh_cql_key(PyObject *key, const int *t, Py_ssize_t ncols, int scalar, uint8_t *dst,
                             Py_ssize_t room)
{
    Py_ssize_t c, pos = 0, r, left;
    PyObject *const *items;
    if (scalar) return sh_cql_value(key, t[0], dst, room);
    if (PyTuple_CheckExact(key)) {
        if (PyTuple_GET_SIZE(key) != ncols) return -1;
        items = PySequence_Fast_ITEMS(key);
    } else if (PyList_CheckExact(key)) {
        if (PyList_GET_SIZE(key) != ncols) return -1;
        items = PySequence_Fast_ITEMS(key);
    } else {
        return -1;
    }
    if (ncols == 1) return sh_cql_value(items[0], t[0], dst, room);
    for (c = 0; c < ncols; c++) {
        left = room - pos - 3;
        r = sh_cql_value(items[c], t[c], dst + pos + 2, left < 0 ? 0 : left);
        if (r < 0 || r > 0xFFFF) return -1;
        if (r <= left) {
            dst[pos] = (uint8_t)(r >> 8);
            dst[pos + 1] = (uint8_t)r;
            dst[pos + 2 + r] = 0;
        }
        pos += r + 3;
    }
    return pos;
}

#endif /* SH_CQL_H */
