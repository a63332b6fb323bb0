/*
 * The plain-C tests' one check macro: CHECK(cond, fmt, ...) counts a pass or
 * prints the failing file, line and message and counts a failure.  Each test
 * program includes this once and prints `passed`/`failed` at the end.
 */
#ifndef SH_CHECK_H
#define SH_CHECK_H

#include <stdio.h>

static int failed = 0, passed = 0;

#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (cond) {                                              \
            passed++;                                            \
        } else {                                                 \
            failed++;                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fprintf(stderr, "\n");                               \
        }                                                        \
    } while (0)

#endif /* SH_CHECK_H */
